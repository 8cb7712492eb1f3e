"""A starting point for the Huber machines from LIBSVM's solution of the same problem.

The primal Newton solver (:mod:`kernelcv.machines.solver`) is exact but needs many
iterations on the Huber-smoothed hinge and eps-insensitive losses when it starts far
from the optimum: the smoothed band is narrow (width ``2 w``, ``w = 0.01`` by default),
each iteration moves only the points whose piece changes near the current point, and its
exact line search takes short steps (measured on a 2,000-row subsample of ijcnn1, RBF
kernel: 27-79 iterations from zero, 14 on average from the neighbouring lam's solution).

LIBSVM's SMO (scikit-learn's ``SVC`` / ``SVR`` with ``kernel="precomputed"``) solves the
Huber machines exactly, through their duals. The Huber hinge ``psi(1 - m)`` (see
:mod:`.losses`) is the Moreau envelope, with parameter ``mu = 2 w``, of the hinge at margin
``1 + w``, ``max(0, 1 + w - m)``; an envelope adds ``(mu / 2) beta^2`` to the conjugate of
the loss, so the dual of ``min (1/n) sum psi(1 - y_i f_i) + lam alpha' K alpha`` is the SVC
dual with the kernel ``K + 4 w lam n I`` (:func:`smoothing_ridge`) and
``C = 1 / (2 n lam (1 + w))``, and the machine's coefficients and intercept are ``1 + w``
times LIBSVM's. Likewise the Huber eps-insensitive loss is the envelope of the
eps-insensitive loss with tube ``eps - w`` (when ``eps >= w``; its two bands then never
overlap): the SVR dual with the same ridge, ``C = 1 / (2 n lam)`` and epsilon ``eps - w``.
(With ``eps < w`` the start is LIBSVM's solution of the unsmoothed problem, O(w) away.)

Solved to LIBSVM's tolerance :data:`LIBSVM_TOL` on its KKT violation, almost every point
is already on its final loss piece, and the Newton solver, started there, polishes and
verifies the optimum in 1-3 iterations (the objective agrees to 1e-15 with the solve from
zero). Measured on 2,000-row subsamples (10-fold refits, one thread, CPU ms per fold,
LIBSVM + Newton, nine (gamma, lam) points of w8a, ijcnn1 and a9a near their CV optima):
386 -> 322 in all (-17 %); w8a gamma = 0.125, lam = 6.25e-5: 64 -> 42 (Newton iterations
4-5 -> 3-4); w8a gamma = 0.03125, lam = 1e-3: 49 -> 25; a9a gamma = 0.03125, lam = 1e-3:
23 -> 15 (1-2 iterations); the other points within -25 ... +6 %. The unsmoothed problem
solved before (hinge, ``tol = 1e-3``) left 2-7 Newton iterations.

The start only changes the speed, never the answer: the Newton solver still iterates to
its own optimality conditions. Its cost is LIBSVM's: O(n^2) kernel reads per pass over
the data, bounded here by ``max_iter = LIBSVM_PASSES * n`` SMO steps (a start that
stopped there is still a good start). The ridge is added to ``K``'s diagonal in place and
the diagonal restored bit for bit afterwards (no copy of the n x n matrix).

scikit-learn is imported inside :func:`libsvm_start` (its import costs ~1 s of a
command's start-up), which is why problems below :data:`LIBSVM_START_MIN_ROWS` rows,
whose Newton solves are cheap, do not use it by default: measured with ``kernelcv
select --machine svm`` (whole command, one thread), the start saved less than the import
cost on german.numer (500 rows: 2.1 s without, 3.1-3.4 s with) and a1a (802 rows: 3.5 s
without, 4.2 s with); on 2,000-row subsamples it pays many times over.

A multiclass machine fits k (one-vs-rest) or k (k - 1) / 2 (one-vs-one) binary problems
per candidate, so the import is shared by many more fits and the threshold is
:data:`LIBSVM_START_MIN_ROWS_MULTICLASS` rows of the binary problem: on vowel (528 rows,
11 classes, one-vs-rest problems of 475 rows at gamma = 8) the exact refits took 10.3
Newton iterations each from the order-inf warm start and 3.2 from LIBSVM's solution
(110 refits: 4.0 s -> 2.3 s including LIBSVM), and the whole ``kernelcv select
--multiclass ovr`` 28.7 s -> 16.4 s; one-vs-one pair problems of ~96 rows were slower
with the start (14.0 s -> 17.0 s), hence the threshold. It applies to cold fits only: a
fit warm-started from the neighbouring lam's solution (the search's path) keeps that
start below :data:`LIBSVM_START_MIN_ROWS` rows (scikit-learn's per-call checks cost
~5 ms; digits one-vs-rest select 26.5 s -> 22.6 s, vowel 16.8 s -> 12.0 s). (The
multiclass figures were measured with the unsmoothed start.)

LIBSVM is called through scikit-learn's binding of ``svm_train`` without ``SVC.fit``'s
input checks (:func:`_solve_dual`): 0.56 against 3.2 ms per fit on digits' 216-row pair
problems. With that, the thresholds came down (one thread, digits, 75 % of 1,797 rows,
pairs of ~270 rows, fold problems of ~216): one-vs-one problems from 150 rows instead of
250, so the folds' refits start from LIBSVM too (5-fold exact CV of one candidate
1.6-2.2 s -> 0.9-1.4 s; ``KernelSearchCV(SVC(), 8 x 8, method="rff")`` 16.6 -> 11.3 s,
``screen="auto"`` 21.0 -> 17.0 s); binary problems from 300 rows once sklearn.svm is
imported (:data:`LIBSVM_START_MIN_ROWS_IMPORTED`).
"""

from __future__ import annotations

import warnings

import numpy as np

from .losses import HuberHingeLoss, HuberInsensitiveLoss
from .weights import WeightedLoss, unweighted

# Training sets from this many rows start the Huber machines from LIBSVM by default
# (below it the ~1 s import of scikit-learn costs more than the start saves).
LIBSVM_START_MIN_ROWS = 1000
# The same once sklearn.svm is imported anyway (KernelSearchCV, a Python session that
# uses it): cold fits from this many rows (5-fold exact CV of svm, make_classification,
# one thread, 9 candidates: 400 rows 1.23 -> 0.60 s, 700 rows 2.99 -> 1.21 s).
LIBSVM_START_MIN_ROWS_IMPORTED = 300
# The same for the binary problems of a multiclass machine (the import is shared by k or
# k (k - 1) / 2 machines per candidate).
LIBSVM_START_MIN_ROWS_MULTICLASS = 150
# LIBSVM's SMO steps are bounded by this many times n (a start needs no tight optimum).
LIBSVM_PASSES = 100
# LIBSVM's stopping tolerance on its KKT violation. scikit-learn's default 1e-3 leaves
# the points within ~1e-3 of a band's edge on either side and 3-6 Newton iterations on
# w8a-2000; 1e-4 leaves 1-3 for a little more SMO work (1e-5 and 1e-6 measured no better).
LIBSVM_TOL = 1e-4


def supports_libsvm_start(loss) -> bool:
    """Whether LIBSVM solves the unsmoothed version of ``loss`` (Huber hinge and
    Huber eps-insensitive losses)."""
    return isinstance(unweighted(loss), HuberHingeLoss | HuberInsensitiveLoss)


def smoothing_ridge(loss, lam, n) -> float:
    """``4 w lam n``: what the Huber smoothing adds to the kernel's diagonal in the dual
    solved by LIBSVM (``mu / (2 C')`` per squared dual variable, ``mu = 2 w``, ``C' = 1/n``,
    after the dual's scaling by ``2 lam``)."""
    return 4.0 * loss.width * lam * n


def libsvm_start(K, y, lam, loss, fit_intercept, tol=None):
    """LIBSVM's solution of the Huber machine's dual, as ``(alpha, intercept)``.

    Parameters
    ----------
    K : (n, n) Gram matrix (float64); its diagonal is raised by :func:`smoothing_ridge`
        during LIBSVM's fit and restored exactly afterwards (also when LIBSVM fails), so
        no other thread may read ``K`` meanwhile. y : (n,) targets (+-1 for the hinge).
    lam : regularisation.
    loss : :class:`HuberHingeLoss` (-> ``SVC`` with ``C = 1 / (2 n lam (1 + w))``, the
        solution scaled by ``1 + w``; with row weights ``c_j`` (a
        :class:`~kernelcv.machines.weights.WeightedLoss`: class and sample weights)
        LIBSVM's ``sample_weight`` and the ridge ``4 w lam n / c_j`` per row, since ``c``
        times an envelope of parameter ``mu`` is the envelope of parameter ``mu / c`` of
        ``c`` times the hinge) or :class:`HuberInsensitiveLoss` (-> ``SVR`` with
        ``C = 1 / (2 n lam)`` and epsilon ``eps - w``; for ``eps < w`` the unsmoothed SVR
        with epsilon ``eps`` and no ridge).
    fit_intercept : whether the machine has an intercept; without one LIBSVM's intercept
        is dropped (the start is then further from the optimum, still a good one).
    tol : LIBSVM's tolerance (default :data:`LIBSVM_TOL`).

    Returns
    -------
    (alpha, intercept) with ``f = K alpha + intercept``, or None when LIBSVM cannot be
    used here (a loss it does not solve, one class only, non-finite output).
    """
    if not supports_libsvm_start(loss):
        return None
    n = y.shape[0]
    ridge = smoothing_ridge(loss, lam, n)
    sample_weight = None
    if isinstance(loss, WeightedLoss):
        # per row: c_j times the envelope is the envelope of parameter mu / c_j of c_j
        # times the hinge; LIBSVM drops the rows of weight 0 (no ridge there)
        sample_weight = loss.weights(y)
        positive = sample_weight > 0
        ridge = np.where(positive, ridge / np.where(positive, sample_weight, 1.0), 0.0)
        loss = loss.base
    classifier = isinstance(loss, HuberHingeLoss)
    if classifier:
        if np.unique(y).size != 2:
            return None
        scale = 1.0 + loss.width  # the hinge's margin in the envelope
        C, epsilon = 1.0 / (2.0 * n * lam * scale), 0.1
    else:
        scale = 1.0
        epsilon = loss.epsilon - loss.width
        if epsilon < 0:  # the two bands overlap: the unsmoothed problem instead
            epsilon, ridge = loss.epsilon, 0.0
        C = 1.0 / (2.0 * n * lam)
    K_fit = K if K.flags.writeable else np.array(K)
    diagonal = np.diagonal(K_fit).copy()
    on_diagonal = np.arange(n)
    try:
        K_fit[on_diagonal, on_diagonal] = diagonal + ridge
        support, coef, intercept = _solve_dual(K_fit, y, classifier, C, epsilon,
                                               LIBSVM_TOL if tol is None else tol,
                                               LIBSVM_PASSES * max(n, 100), sample_weight)
    finally:
        K_fit[on_diagonal, on_diagonal] = diagonal
    alpha = np.zeros(n)
    alpha[support] = scale * coef
    intercept = scale * intercept if fit_intercept else 0.0
    if not (np.all(np.isfinite(alpha)) and np.isfinite(intercept)):
        return None
    return alpha, intercept


def _binding():
    """scikit-learn's binding of LIBSVM's ``svm_train`` (``sklearn.svm._libsvm.fit``),
    with LIBSVM's own printing off (as ``SVC(verbose=False)`` sets it before each fit)."""
    from sklearn.svm import _libsvm

    _libsvm.set_verbosity_wrap(0)
    return _libsvm.fit


def _solve_dual(K, y, classifier, C, epsilon, tol, max_iter, sample_weight):
    """LIBSVM's C-SVC (``classifier``, labels +-1) or epsilon-SVR on the precomputed
    ``K``: ``(support, coef, intercept)`` with ``f = K[:, support] @ coef + intercept``.

    LIBSVM is called through scikit-learn's own binding (``sklearn.svm._libsvm.fit``, what
    ``SVC.fit`` calls after its input checks): 0.56 ms against 3.2 ms for ``SVC.fit`` on a
    216-row kernel, where those checks were most of the time (one-vs-one pairs of
    digits). Should that private binding change, ``SVC`` / ``SVR`` themselves are used.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC, SVR

    weights = np.empty(0) if sample_weight is None else np.asarray(sample_weight, float)
    try:
        out = _binding()(
            K, (y > 0).astype(np.float64) if classifier else np.asarray(y, np.float64),
            svm_type=0 if classifier else 3, sample_weight=weights,
            class_weight=np.empty(0), kernel="precomputed", C=float(C), nu=0.5,
            probability=False, degree=3, shrinking=True, tol=float(tol), cache_size=200,
            coef0=0.0, gamma=0.0, epsilon=float(epsilon), max_iter=int(max_iter),
            random_seed=0)
        support, coef, intercept = out[0], out[3][0], float(out[4][0])
        if classifier:  # LIBSVM's binary model is signed towards the first class (-1)
            coef, intercept = -coef, -intercept
        return support, coef, intercept
    except (AttributeError, TypeError, ValueError, IndexError):
        pass
    options = {"kernel": "precomputed", "tol": tol, "max_iter": max_iter}
    model = (SVC(C=C, **options) if classifier
             else SVR(C=C, epsilon=epsilon, **options))
    with warnings.catch_warnings():
        # A start that hit max_iter is still a start; the Newton solver finishes it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(K, y, sample_weight=sample_weight)
    # dual_coef_ holds y_j * (LIBSVM's dual variable), signed towards classes_[1] = +1
    return model.support_, model.dual_coef_[0], float(model.intercept_[0])
