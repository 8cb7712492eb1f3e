"""Exact fold-out models of the smooth-loss machines for every lam and every fold from one
factorization of K: batched majorize-minimize (MM) iterations.

The problem of fold i (retained rows R, ``m = |R|``), in the papers' convention::

    min_{alpha, b}  sum_{j in R} loss(y_j, f_j) + m lam alpha' K alpha,   f = K alpha + b 1

Every loss of the L2-SVM, the Huber SVM and the Huber SVR has a Lipschitz derivative:
``loss'' <= M`` (2 for the squared hinge and the square loss, ``1 / (2 w)`` for the Huber
losses of width w). So at the current values ``v`` the loss is majorized by the quadratic
``(M/2) (f_j - z_j)^2 + const`` with ``z_j = v_j - loss'(y_j, v_j) / M``, and a held-out
row, which carries no loss, by ``(M/2) (f_j - v_j)^2`` (zero at v, never negative). The
surrogate of *every* fold's problem is then an LS-SVM on **all** n rows with the targets
``z`` (held-out rows: their current predictions) and the ridge ``rho = 2 m lam / M``::

    (K + rho I) alpha + b 1 = z,   1' alpha = 0        (no intercept: b = 0)

which :mod:`.ridge_factors` solves for every column of a batch: from one
eigendecomposition ``K = Q diag(s) Q'`` for every lam and every fold at once (two matrix
products per step, BLAS-3, ``O(n r C)`` for C columns and the r eigenpairs kept), or, with
``factorization="cholesky"``, from one Cholesky factorization of ``K + rho I`` per lam
(every fold of a lam then shares the ridge of the smallest training part ``m_min``, its
curvature raised to ``M m / m_min``, still a majorizer), for n past one ``eigh``; the lam
are then solved from the largest down, each (problem, fold) column started from its
solution at the previous lam (a continuation: the Huber SVM's steps fell by up to 1.7x at
2,000 rows, the L2-SVM's barely). The
steps are accelerated (FISTA with O'Donoghue and Candes's gradient restart, per column;
the MM step is a proximal-gradient step of step ``1 / M`` whose proximal map is the ridge
solve above), a column leaves the batch once its step changes f by less than ``tol *
max(1, max |f|)``, and a column still moving after ``max_iter`` steps is refitted by the
primal Newton solver (:func:`kernelcv.machines.solver.fit_kernel_machine`), started from
the MM iterate.

A held-out value is the iterate's own ``f_j`` (accurate to the stopping tolerance), or,
where the row's kernel mass off its fold ``|K_{j,R}|_1`` is below ``rho`` (tiny kernel
widths, where ``f_j`` would be rounding noise), formed directly as
``K_{j,R} alpha_R + b`` with the optimality form ``alpha_R = -loss'(y_R, f_R) / (2 m
lam)`` (whose error is the iterate's times ``|K_{j,R}|_1 / rho``: the rule takes the
smaller). Columns finished by the Newton solver use the direct form. Extra points use
the direct form.

Cost: one ``eigh`` (``O(n^3)``), then per MM step ``4 n r C`` flops over the columns still
moving; or ``n^3 / 3`` per lam and ``2 n^2`` per column and step (Cholesky); the held-out
values ``O(n^2)`` per (problem, lam). Memory: K, Q (or one Cholesky factor) and ~6 n x C
arrays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..devices import check_precision, resolve_device
from ..exceptions import KernelCVError
from ..machines.losses import SquareLoss
from ..machines.multiclass import predict_codes
from ..machines.solver import central_intercept, deepest_band_depth, fit_kernel_machine
from ..machines.weights import loss_for_rows, weight_bound
from . import spectral_torch
from .closed_form import ClosedFormCV
from .evaluate import Evaluation, evaluate_lam
from .multiclass import MulticlassCV, problem_layout
from .result import fold_errors
from .ridge_factors import CholeskyFactor, EigenFactor, check_factorization

#: The default stopping tolerance: the last MM step moved no value by more than this,
#: relative to ``max(1, max |f|)``.
TOLERANCE = 1e-10
#: MM steps before a column is handed to the Newton solver.
MAX_STEPS = 3000
#: The most rows ``factorization="auto"`` gives one eigendecomposition: the limit of
#: the 32-bit GPU eigensolvers torch calls (cuSOLVER's syevd workspace), and past it on
#: a CPU a dense ``eigh`` takes hours while a Cholesky factorization takes minutes.
EIGH_ROWS = 32768


#: ``precision="mixed"`` runs a (kernel, lam) in float32 only where
#: ``kappa = 1 + s_bound / rho`` is at most this (``s_bound`` the largest row sum of
#: ``|K|``, a bound on its largest eigenvalue): float32's rounding (eps 1.2e-7) of the
#: ridge systems then moves the held-out values by ~eps kappa (1e-4) of their scale.
KAPPA_SINGLE = 1e3
#: The stopping tolerance of float32 MM steps (their rounding level).
TOL_SINGLE = 1e-5
#: A float32 column of a Huber machine with no retained row deeper than this fraction of
#: a band's width inside it may be the flat-intercept case (an interval of optimal
#: intercepts), which float32's rounding cannot tell: the Newton solver finishes it.
FLOAT32_BAND_DEPTH = 0.1
#: The start of the note of a lam whose MM steps ran in float32.
FLOAT32_NOTE = "float32 MM steps"


def single_precision_safe(s_bound: float, rho) -> np.ndarray:
    """Whether the ridge systems of ``rho`` (an array) may be solved in float32:
    ``1 + s_bound / rho <= KAPPA_SINGLE``."""
    return 1.0 + s_bound / np.asarray(rho, dtype=np.float64) <= KAPPA_SINGLE


def choose_factorization(name, n: int, precision="float64", device=None) -> str:
    """The factorization of K the MM engine uses: ``name`` when it is ``"eigh"`` or
    ``"cholesky"``; for ``"auto"``, one eigendecomposition on a GPU up to
    :data:`EIGH_ROWS` rows in float64 (as TorchKM; not yet measured against Cholesky
    there), and one Cholesky factorization per lam otherwise: above that size, with
    ``precision="mixed"`` (each lam's factor takes its own precision), and on a CPU, where
    it was 1.3-1.8x faster for the L2-SVM at 1,000-2,000 rows (one BLAS thread, the same
    values; docs/results.md). The square loss's closed form keeps its ``eigh``."""
    name = check_factorization(name)
    if name != "auto":
        return name
    on_gpu = device is not None and resolve_device(device).name == "cuda"
    return ("eigh" if on_gpu and n <= EIGH_ROWS and precision == "float64"
            else "cholesky")


def max_curvature(loss) -> float:
    """The bound M on ``loss''`` of a machine's loss (the MM majorizer's curvature),
    times its largest class weight."""
    width = getattr(loss, "width", None)
    if width is None:
        return 2.0 * weight_bound(loss)  # square, squared hinge
    # The Huber eps-insensitive loss has two bands; for eps < width they overlap and
    # the second derivatives add up.
    overlap = getattr(loss, "epsilon", None)
    if overlap is not None and overlap < width:
        return 1.0 / width
    return weight_bound(loss) / (2.0 * width)


@dataclass
class SpectralSolution:
    """Held-out values of every (problem, lam) and how the iterations went.

    Attributes
    ----------
    predictions : (n, P, L) held-out value of row j by the model of its own fold, for each
        of P problems (target columns) and L lam values.
    extra_predictions : (m, P, L) values at the extra points, or None.
    intercepts : (P, L, t) fold-out intercepts.
    steps : (P, L) the largest number of MM steps a fold of that (problem, lam) took.
    refitted : (P, L) folds finished by the Newton solver.
    single : (P, L) whether that (problem, lam) ran its steps in float32
        (``precision="mixed"``), or None (float64 throughout).
    """

    predictions: np.ndarray
    extra_predictions: np.ndarray | None
    intercepts: np.ndarray
    steps: np.ndarray
    refitted: np.ndarray
    single: np.ndarray | None = None


class SpectralCV:
    """Fold-out solutions of smooth-loss kernel machines from one factorization of K.

    Parameters
    ----------
    K : (n, n) symmetric positive semi-definite Gram matrix (numpy, or a float64 tensor
        already on ``device``, as :func:`.spectral_torch.device_gram` makes it).
    fold_ids : (n,) fold ids ``0..t-1`` (every fold non-empty, every training part too).
    fit_intercept : an unregularised intercept b.
    device : None or a name of :data:`kernelcv.devices.DEVICES` (or a Device): with a
        torch device the factorization, the MM steps and the fold-out products run
        there (:mod:`.spectral_torch`), the rest in numpy.
    factorization : ``"eigh"`` (one eigendecomposition serves every lam),
        ``"cholesky"`` (one Cholesky factorization of ``K + rho I`` per lam, no
        eigendecomposition: for n past what ``eigh`` can do) or ``"auto"``
        (:func:`choose_factorization`). See :mod:`.ridge_factors`.
    precision : ``"float64"`` (default) or ``"mixed"``: the factorization and the MM steps
        of a lam in float32 where :func:`single_precision_safe` allows (with ``eigh``: of
        the whole kernel, only when every lam allows), stopped at :data:`TOL_SINGLE`;
        the held-out values, intercepts and Newton refits stay float64.
    """

    def __init__(self, K, fold_ids, fit_intercept=True, device=None, factorization="eigh",
                 precision="float64"):
        self.fold_ids = np.asarray(fold_ids)
        self.fit_intercept = bool(fit_intercept)
        self.n = K.shape[0]
        self.t = int(self.fold_ids.max()) + 1
        self.folds = [np.flatnonzero(self.fold_ids == i) for i in range(self.t)]
        self.retained = np.array([self.n - f.size for f in self.folds], dtype=np.float64)
        self.device = resolve_device(device)
        self.factorization = choose_factorization(factorization, self.n, precision,
                                                  self.device)
        if self.device.is_torch:
            self.K, self.K_device = None, spectral_torch.to_device(K, self.device)
            self._nonnegative = bool(self.K_device.min() >= 0) if self.n else True
        else:
            self.K, self.K_device = K, None
            self._nonnegative = bool(K.min() >= 0) if self.n else True
        self.precision = check_precision(precision)
        self._eigen: dict = {}  # the eigendecomposition, made when first needed, by dtype
        self._absolute_sums = None  # each row's |K| sum (_row_sums)

    def _eigen_factor(self, single: bool):
        """The eigendecomposition of K (float32 with ``single``), made once."""
        if single not in self._eigen:
            dtype = np.float32 if single else np.float64
            self._eigen[single] = (
                spectral_torch.TorchEigen(self.K_device, self.fit_intercept,
                                          spectral_torch.torch_dtype(dtype))
                if self.device.is_torch else EigenFactor(self.K, self.fit_intercept, dtype))
        return self._eigen[single]

    @property
    def rank(self) -> int:
        """Eigenpairs kept (above the rounding level of ``eigh``); n for Cholesky."""
        if self.factorization != "eigh":
            return self.n
        return int(self._eigen_factor(False).s.shape[0])

    def _row_sums(self) -> np.ndarray:
        """Each row's ``|K|`` sum, computed once (the float32 bound and the off-fold
        masses both read it). O(n^2)."""
        if self._absolute_sums is None:
            if self.K_device is not None:
                absolute = self.K_device if self._nonnegative else self.K_device.abs()
                self._absolute_sums = spectral_torch.to_numpy(absolute.sum(dim=1))
            else:
                absolute = self.K if self._nonnegative else np.abs(self.K)
                self._absolute_sums = absolute.sum(axis=1)
        return self._absolute_sums

    def _spectral_bound(self) -> float:
        """The largest row sum of ``|K|``, a bound on K's largest eigenvalue."""
        return float(self._row_sums().max()) if self.n else 0.0

    def host_block(self, rows, cols) -> np.ndarray:
        """``K[rows][:, cols]`` as a numpy array (from the device where K lives there)."""
        return _host(_block(self.K if self.K_device is None else self.K_device, rows,
                            cols))

    def _factors(self, columns_of_rho):
        """``(columns, factor, single)`` triples that cover every column: the one
        eigendecomposition for all, or one Cholesky factor per distinct ridge, made one
        at a time; ``single``: the factor (and the columns' steps) in float32."""
        rhos = np.array(list(columns_of_rho))
        single = np.zeros(rhos.size, dtype=bool)
        if self.precision == "mixed":
            single = single_precision_safe(self._spectral_bound(), rhos)
        if self.factorization == "eigh":
            together = bool(single.all())
            yield (np.concatenate(list(columns_of_rho.values())),
                   self._eigen_factor(together), together)
            return
        for (rho, columns), alone in zip(columns_of_rho.items(), single, strict=True):
            dtype = np.float32 if alone else np.float64
            if self.device.is_torch:
                yield columns, spectral_torch.TorchCholesky(
                    self.K_device, rho, self.fit_intercept,
                    spectral_torch.torch_dtype(dtype)), bool(alone)
            else:
                yield columns, CholeskyFactor(self.K, rho, self.fit_intercept,
                                              dtype), bool(alone)

    def _iterate(self, factor, F, columns, Y, p_of, held_out, rho_all, loss, M_all, steps,
                 tol, max_steps):
        """Accelerated MM steps on ``F[:, columns]`` (in place) until each column stops
        moving, each step's ridge systems solved by ``factor``; returns the columns still
        moving after ``max_steps``."""
        if self.device.is_torch:
            block = F[:, columns]  # a copy, iterated in place and put back
            counts = np.zeros(columns.size, dtype=np.int64)
            moving = spectral_torch.iterate(factor, block, Y[:, p_of[columns]],
                                            held_out[:, columns], rho_all[columns], loss,
                                            M_all[columns], counts, tol, max_steps)
            F[:, columns] = block
            steps[columns] += counts
            return columns[moving]
        V = F[:, columns].astype(factor.dtype)
        Fc = V.copy()
        momentum = np.ones(columns.size)
        active = np.arange(columns.size)
        for _ in range(max_steps):
            if active.size == 0:
                break
            cols = columns[active]
            g, _h = loss.derivatives(Y[:, p_of[cols]], V[:, active])
            g[held_out[:, cols]] = 0.0
            F_new, _b = factor.ridge_solve(V[:, active] - g / M_all[cols][None, :],
                                           rho_all[cols])
            F_old = Fc[:, active]
            V_old = V[:, active]
            step_change = np.abs(F_new - F_old).max(axis=0)
            mapping = np.abs(F_new - V_old).max(axis=0)
            scale = np.maximum(1.0, np.abs(F_new).max(axis=0))
            restart = np.einsum("ij,ij->j", V_old - F_new, F_new - F_old) > 0
            t_old = momentum[active]
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_old * t_old))
            beta = np.where(restart, 0.0, (t_old - 1.0) / t_new)
            V[:, active] = F_new + beta[None, :] * (F_new - F_old)
            Fc[:, active] = F_new
            momentum[active] = np.where(restart, 1.0, t_new)
            steps[cols] += 1
            done = np.maximum(step_change, mapping) <= tol * scale
            active = active[~done]
        F[:, columns] = Fc
        return columns[active]

    def _intercepts(self, factor, Z, rho) -> np.ndarray:
        """The intercepts of the ridge systems of the numpy columns Z."""
        if self.device.is_torch:
            return spectral_torch.ridge_intercepts(factor, Z, rho)
        return factor.ridge_solve(Z, rho)[1].astype(np.float64)

    @staticmethod
    def _centre_flat_intercepts(F, b, Y, p_of, held_out, loss, moving):
        """The Newton solver's rule where the optimal intercept is an interval: its
        midpoint (:func:`kernelcv.machines.solver.central_intercept`), so that the
        fold-out models are the refits' (Huber hinge with no row in its band)."""
        left = np.zeros(F.shape[1], dtype=bool)
        left[moving] = True
        for c in np.flatnonzero(~left):
            # central_intercept keeps b unless no retained row lies deeper in a band than
            # rounding (the flat case); the MM iterate's slopes balance only to its
            # tolerance there, so they are not tested first as the Newton solver does.
            rows = ~held_out[:, c]
            F_c = F[rows, c]
            b[c] = central_intercept(loss, Y[rows, p_of[c]], F_c - b[c], b[c])

    def _off_fold_mass(self) -> np.ndarray:
        """Each row's kernel mass off its own fold, ``|K_{j,R}|_1``. O(n^2)."""
        mass = self._row_sums().copy()
        for rows in self.folds:
            mass[rows] -= np.abs(self.host_block(rows, rows)).sum(axis=1)
        return mass

    def _prefer_iterate(self, predictions, F, rho_all, finished, P, L, t):
        """Take the MM iterate's own held-out values where they are the more accurate.

        The direct form ``K_{j,R} alpha_R + b`` carries the iterate's error times
        ``|K_{j,R}|_1 / rho`` (alpha = -loss'/(2 m lam) divides by lam), the iterate's
        value F_j only that error: so F_j is taken where the row's retained kernel mass
        ``|K_{j,R}|_1`` reaches ``rho = 2 m lam / M`` (small lam), the direct form where
        it does not (tiny kernel widths, where F_j would be rounding noise). Columns the
        Newton solver finished keep the direct form (their alpha is exact). O(n^2).
        """
        mass = self._off_fold_mass()
        own = F.reshape(self.n, P, L, t)
        rho = rho_all.reshape(P, L, t)
        keep = np.zeros((P, L, t), dtype=bool)
        keep.reshape(-1)[finished] = True
        for i, rows in enumerate(self.folds):
            use = (mass[rows][:, None, None] >= rho[None, :, :, i]) & ~keep[None, :, :, i]
            block = predictions[rows]
            block[use] = own[rows, :, :, i][use]
            predictions[rows] = block

    def _finish_by_newton(self, c, alpha, b, y, lam, loss, retained, cold=False):
        """Column ``c`` solved exactly by the primal Newton solver on its retained rows
        (from the MM iterate, or from zero with ``cold``); ``alpha`` and ``b`` in place."""
        rows = np.flatnonzero(retained)
        start = {} if cold else {"alpha0": alpha[rows, c], "intercept0": float(b[c])}
        fit = fit_kernel_machine(self.host_block(rows, rows), y[rows], lam,
                                 loss_for_rows(loss, rows),
                                 fit_intercept=self.fit_intercept, **start)
        alpha[:, c] = 0.0
        alpha[rows, c] = fit.alpha
        b[c] = fit.intercept

    def _fold_values(self, rows, coefficients) -> np.ndarray:
        """``K[rows] @ coefficients``, (rows, n) times (n, k)."""
        if self.K_device is not None:
            return spectral_torch.fold_values(self.K_device, rows, coefficients)
        return self.K[rows] @ coefficients

    def solve(self, y, lams, loss, *, extra=None, tol=TOLERANCE, max_steps=MAX_STEPS
              ) -> SpectralSolution:
        """Every fold's model for every lam and target column.

        Parameters
        ----------
        y : (n,) or (n, P) targets (+-1 labels for the classification losses).
        lams : (L,) lam values > 0.
        loss : a loss of :mod:`kernelcv.machines.losses`.
        extra : None or ``(K_extra, extra_fold_ids)``: (m, n) kernel values between m
            extra points and the rows, and each point's fold id: its value comes from
            that fold's model, or from the full-data model for id -1 (one more column
            per problem and lam).
        tol, max_steps : stopping rule of the MM steps (see the module notes).
        """
        Y = np.asarray(y, dtype=np.float64)
        if Y.ndim == 1:
            Y = Y[:, None]
        lams = np.asarray(lams, dtype=np.float64)
        n, P, L = self.n, Y.shape[1], lams.size
        extra_folds = None if extra is None else np.asarray(extra[1])
        # An extra point of id -1 is predicted by the full-data model: one more "fold"
        # (number t) that holds out no row.
        full = extra_folds is not None and bool(np.any(extra_folds < 0))
        t = self.t + int(full)
        retained = np.append(self.retained, float(n)) if full else self.retained
        M = max_curvature(loss)
        # Column c = (p, l, i): problem p, lam l, fold i.
        p_of = np.repeat(np.arange(P), L * t)
        l_of = np.tile(np.repeat(np.arange(L), t), P)
        i_of = np.tile(np.arange(t), P * L)
        m_of = retained[i_of]
        rho_exact = 2.0 * m_of * lams[l_of] / M
        if self.factorization == "cholesky":
            # One factor per lam: every fold of a lam shares the ridge of the smallest
            # training part, each fold's curvature raised to match (M m / m_min >= M,
            # still a majorizer).
            m_low = float(retained.min())
            rho_all = 2.0 * m_low * lams[l_of] / M
            M_all = M * m_of / m_low
        else:
            rho_all, M_all = rho_exact, np.full(m_of.size, M)
        columns_of_rho: dict[float, np.ndarray] = {}
        for rho in np.unique(rho_all)[::-1]:  # the largest ridge (fewest steps) first
            columns_of_rho[float(rho)] = np.flatnonzero(rho_all == rho)
        C = P * L * t
        held_out = self.fold_ids[:, None] == i_of[None, :]  # (n, C)
        F = np.zeros((n, C))
        b = np.zeros(C)
        steps = np.zeros(C, dtype=np.int64)
        single = np.zeros(C, dtype=bool)
        moving = []
        previous = None
        for columns, factor, alone in self._factors(columns_of_rho):
            single[columns] = alone
            if previous is not None and previous.size == columns.size:
                # Cholesky, one lam at a time: start each (problem, fold) column from its
                # solution at the previous (larger) lam, same order (a continuation)
                F[:, columns] = F[:, previous]
            previous = columns
            moving.append(self._iterate(factor, F, columns, Y, p_of, held_out, rho_all,
                                        loss, M_all, steps,
                                        max(tol, TOL_SINGLE) if alone else tol, max_steps))
            if self.fit_intercept:
                g, _h = loss.derivatives(Y[:, p_of[columns]], F[:, columns])
                g[held_out[:, columns]] = 0.0
                b[columns] = self._intercepts(factor, F[:, columns] - g / M_all[columns],
                                              rho_all[columns])
            del factor
        moving = np.sort(np.concatenate(moving)).astype(np.intp)
        refitted = np.zeros(C, dtype=bool)
        refitted[moving] = True
        # The fold-out coefficients in optimality form and their intercepts.
        g, _h = loss.derivatives(Y[:, p_of], F)
        g[held_out] = 0.0
        alpha = -g / (2.0 * m_of * lams[l_of])[None, :]
        one_class = np.zeros(C, dtype=bool)
        if self.fit_intercept:
            F = F - b[None, :]  # the iterate without its intercept: F + b is its value
            self._centre_flat_intercepts(F + b[None, :], b, Y, p_of, held_out, loss,
                                         moving)
            F = F + b[None, :]  # with the (possibly centred) intercept
            # A training part whose targets are all equal (one class) has a whole
            # interval of optimal intercepts with alpha = 0: the Newton solver's choice
            # (the refits') is taken, from its cold start (rare, and cheap).
            one_class = np.array([np.ptp(Y[~held_out[:, c], p_of[c]]) == 0
                                  for c in range(C)])
            one_class[moving] = False
            if single.any() and getattr(loss, "knots", None) is not None:
                # float32 iterates near the flat-intercept case: finished in float64
                for c in np.flatnonzero(single & ~one_class):
                    rows = ~held_out[:, c]
                    if deepest_band_depth(loss, Y[rows, p_of[c]],
                                          F[rows, c]) <= FLOAT32_BAND_DEPTH:
                        moving = np.append(moving, c)
        finished = np.concatenate([moving, np.flatnonzero(one_class)])
        for c in finished:
            self._finish_by_newton(c, alpha, b, Y[:, p_of[c]], float(lams[l_of[c]]), loss,
                                   ~held_out[:, c], cold=bool(one_class[c]))
        predictions = np.empty((n, P, L))
        A = alpha.reshape(n, P, L, t)
        for i, rows in enumerate(self.folds):
            predictions[rows] = self._fold_values(
                rows, A[:, :, :, i].reshape(n, P * L)).reshape(rows.size, P, L)
        B = b.reshape(P, L, t)
        predictions += B[:, :, self.fold_ids].transpose(2, 0, 1)
        self._prefer_iterate(predictions, F, rho_exact, finished, P, L, t)
        B = B[:, :, :self.t] if full else B
        extra_predictions = None
        if extra is not None:
            K_extra = extra[0]
            extra_folds = np.where(extra_folds < 0, self.t, extra_folds)
            extra_predictions = np.empty((K_extra.shape[0], P, L))
            for i in range(t):
                rows = np.flatnonzero(extra_folds == i)
                if rows.size:
                    extra_predictions[rows] = np.einsum(
                        "rn,npl->rpl", K_extra[rows], A[:, :, :, i], optimize=True)
            extra_predictions += b.reshape(P, L, t)[:, :, extra_folds].transpose(2, 0, 1)
        return SpectralSolution(
            predictions=predictions, extra_predictions=extra_predictions, intercepts=B,
            steps=steps.reshape(P, L, t).max(axis=2),
            refitted=refitted.reshape(P, L, t).sum(axis=2),
            single=(single.reshape(P, L, t).all(axis=2) if self.precision == "mixed"
                    else None))


def spectral_evaluations(K, y, fold_ids, lams, machine, *, tol=TOLERANCE,
                         max_steps=MAX_STEPS, huber="newton", device=None,
                         factorization="auto", precision="float64") -> list[Evaluation]:
    """Exact CV of ``machine`` for every lam of one Gram matrix: one
    :class:`~kernelcv.criteria.evaluate.Evaluation` per lam, in the order of ``lams``.

    krr and lssvm (the square loss, without class weights) take the direct formulas of
    the same eigendecomposition instead (:class:`~kernelcv.criteria.closed_form.ClosedFormCV`, the
    ``closed-form`` method's numbers). The Huber machines (svm, svr) with
    ``huber="newton"`` (default) are refitted exactly by the Newton solver, lam from the
    largest down with warm starts (:func:`~kernelcv.criteria.evaluate.evaluate_lam`'s
    ``"exact"``): their curvature ``1 / (2 w)`` (50 at w = 0.01) makes the MM steps 5-10x
    more than the L2-SVM's, and on a CPU the refits were 5-100x faster (docs/results.md);
    ``huber="mm"`` runs the MM engine for them too. A binary machine is one
    :class:`SpectralCV`;
    one-vs-rest machines share it (one target column per class); each one-vs-one pair
    has its own on the pair's rows, and predicts the other classes' rows of a fold with
    its model for that fold (the layout of
    :func:`kernelcv.criteria.multiclass.problem_layout`).

    ``device`` (:mod:`kernelcv.devices`): where :class:`SpectralCV` runs its linear
    algebra. On a torch device krr and lssvm take the MM engine too (for the square loss
    the majorizer is exact on the retained rows: tens of steps, the closed form's values
    to the stopping tolerance), so that every machine runs there; the Newton refits stay
    in numpy. K may be a tensor already on the device (:func:`.spectral_torch.device_gram`).

    ``factorization`` (:func:`choose_factorization`): ``"eigh"``, ``"cholesky"`` (one
    factorization of ``K + rho I`` per lam; krr and lssvm then take the MM engine too) or
    ``"auto"`` (eigh up to :data:`EIGH_ROWS` rows). ``precision="mixed"``: the steps of
    each lam in float32 where :func:`single_precision_safe` allows (named in that lam's
    notes), float64 elsewhere; the closed form and the Newton refits stay float64.

    Cost: one ``eigh`` per distinct row set (or one Cholesky factorization per lam) plus
    the MM steps (see the module notes).
    """
    tic = time.perf_counter()
    lams = np.asarray(lams, dtype=np.float64)
    weighted = machine.weighted
    device = resolve_device(device)
    if (isinstance(machine.loss, SquareLoss) and not weighted and not device.is_torch
            and precision == "float64" and check_factorization(factorization) != "cholesky"
            and (factorization == "eigh" or K.shape[0] <= EIGH_ROWS)):
        return _closed_form_evaluations(_host(K), y, fold_ids, lams, machine)
    factorization = choose_factorization(factorization, K.shape[0], precision, device)
    if huber not in ("newton", "mm"):
        raise KernelCVError(f"huber must be 'newton' or 'mm', got {huber!r}")
    if ((getattr(machine.loss, "width", None) is not None and huber == "newton")
            or (weighted and machine.is_multiclass)):
        # weighted binary machines of a multiclass scheme each have their own weights:
        # refitted one by one (the MM engine shares one loss per solve)
        return _newton_evaluations(_host(K), y, fold_ids, lams, machine)
    L = lams.size
    notes: list[list[str]] = [[] for _ in range(L)]

    single = np.zeros(L, dtype=bool)

    def note_refits(solution, label):
        for k in range(L):
            refits = int(solution.refitted[:, k].sum())
            if refits:
                notes[k].append(f"{label}{refits} fold-out problem(s) still moving after "
                                f"{max_steps} MM steps were finished by Newton refits")
        if solution.single is not None:
            single[:] |= solution.single.any(axis=0)

    if not machine.is_multiclass:
        engine = SpectralCV(K, fold_ids, machine.fit_intercept, device, factorization,
                            precision)
        solution = engine.solve(y, lams, machine.loss, tol=tol, max_steps=max_steps)
        note_refits(solution, "")
        decisions = solution.predictions[:, 0, :]
    else:
        codes = np.asarray(y).astype(np.intp)
        layout = problem_layout(codes, fold_ids, machine.n_classes, machine.multiclass)
        n = codes.shape[0]
        values = np.empty((n, len(layout), L))
        shared = [p for p, entry in enumerate(layout) if entry.rows is None]
        if shared:  # one-vs-rest: every machine on all rows, one eigendecomposition
            targets = np.column_stack([layout[p].y for p in shared])
            engine = SpectralCV(K, fold_ids, machine.fit_intercept, device, factorization,
                                precision)
            solution = engine.solve(targets, lams, machine.loss, tol=tol,
                                    max_steps=max_steps)
            values[:, shared, :] = solution.predictions
            note_refits(solution, "")
        for p, entry in enumerate(layout):
            if entry.rows is None:
                continue
            others, extra_folds = entry.extra
            extra = ((_host(_block(K, others, entry.rows)), extra_folds) if others.size
                     else None)
            solution = SpectralCV(_block(K, entry.rows, entry.rows), entry.folds,
                                  machine.fit_intercept, device, factorization,
                                  precision).solve(
                entry.y, lams, machine.loss, extra=extra, tol=tol, max_steps=max_steps)
            values[entry.rows, p, :] = solution.predictions[:, 0, :]
            if extra is not None:
                values[others, p, :] = solution.extra_predictions[:, 0, :]
            note_refits(solution, f"machine {entry.problem.label}: ")
    seconds = (time.perf_counter() - tic) / L
    for k in np.flatnonzero(single):
        notes[k].append(f"{FLOAT32_NOTE} (kappa <= {KAPPA_SINGLE:g}: held-out values to "
                        "~1e-4 of their scale)")
    evaluations = []
    t = int(np.max(fold_ids)) + 1
    for k in range(L):
        if machine.is_multiclass:
            predicted = predict_codes(values[:, :, k], machine.n_classes, machine.multiclass)
            losses = (predicted != codes).astype(np.float64)
            per_fold = np.bincount(fold_ids, weights=losses, minlength=t) / np.bincount(
                fold_ids, minlength=t)
            error, predictions = float(losses.mean()), predicted
        else:
            predictions = decisions[:, k]
            if not np.all(np.isfinite(predictions)):
                raise KernelCVError(
                    f"the spectral CV values are not finite at lam = {lams[k]:g}: lam is "
                    "too small for this kernel (use a larger lam)")
            error, per_fold = fold_errors(y, predictions, fold_ids, machine.metric)
        ev = Evaluation(cv_error=error, fold_errors=per_fold, predictions=predictions,
                        order_used=None, degenerate=False, heldout_ratio=float("nan"),
                        fit_seconds=0.0, seconds=seconds, notes=notes[k])
        if machine.is_multiclass:
            ev.decisions = values[:, :, k]
        evaluations.append(ev)
    return evaluations


def _host(K) -> np.ndarray:
    """K as a numpy array (a device tensor comes back to the host)."""
    return K if isinstance(K, np.ndarray) else spectral_torch.to_numpy(K)


def _block(K, rows, cols):
    """``K[rows][:, cols]``, on K's own side (numpy or the device)."""
    if isinstance(K, np.ndarray):
        return K[np.ix_(rows, cols)]
    index_r = spectral_torch.index_on(K, rows)
    return K[index_r][:, spectral_torch.index_on(K, cols)]


def _closed_form_evaluations(K, y, fold_ids, lams, machine) -> list[Evaluation]:
    """The square loss: exact fold-out values by the closed form, one ``eigh`` for all."""
    if machine.is_multiclass:
        scheme = MulticlassCV(K, y, fold_ids, machine, closed_form=True)
        return [scheme.evaluate(float(lam), machine, "closed-form") for lam in lams]
    closed = ClosedFormCV(K, fold_ids, fit_intercept=machine.fit_intercept)
    return [evaluate_lam(K, y, fold_ids, float(lam), machine, "closed-form", closed=closed)
            for lam in lams]


def _newton_evaluations(K, y, fold_ids, lams, machine) -> list[Evaluation]:
    """Exact refits of every lam, from the largest down, each full fit warm-started from
    the previous one (the ``exact`` method's numbers)."""
    scheme = MulticlassCV(K, y, fold_ids, machine) if machine.is_multiclass else None
    evaluations: list[Evaluation | None] = [None] * lams.size
    previous = None
    for position in np.argsort(lams)[::-1]:
        lam = float(lams[position])
        if scheme is not None:
            ev = scheme.evaluate(lam, machine, "exact", warm=previous)
        else:
            ev = evaluate_lam(K, y, fold_ids, lam, machine, "exact", warm=previous)
        previous = ev.fit if ev.fit is not None else previous
        evaluations[position] = ev
    return evaluations
