"""A machine fitted on data and its predictions, without scikit-learn.

:func:`fit_gram` (one fit on a Gram matrix, BLAS pools kept apart) and
:func:`decision_values` (``k(X, X_fit) @ coef + intercept``, a block of rows at a time)
are the two steps every kernelcv estimator performs; the estimators
(:mod:`kernelcv.estimators`) wrap them with scikit-learn's parameter and input checks.
:class:`KernelModel` is the same fit and prediction for one classifier (two classes, or
more by the machine's one-vs-one / one-vs-rest scheme of
:mod:`kernelcv.machines.multiclass`) or regressor at a known kernel and lam:
``kernelcv select --test`` and the final kernel fit of a random-feature search use it,
so those paths never import scikit-learn for it (a kernel estimator and a KernelModel
with the same settings give the same numbers).
"""

from __future__ import annotations

import numpy as np

from .._threads import separate_blas_pools
from ..exceptions import KernelCVError
from ..kernels import Kernel
from . import Machine
from .multiclass import binary_problems, predict_codes
from .solver import FitResult
from .stacked import fit_stacked, stack_blocks, worth_stacking

# Test-time kernel blocks hold at most this many entries (8 MiB of float64). Blocks of
# this size are reused from the process heap; larger ones are fresh memory maps each time
# (glibc maps blocks above 32 MiB directly), whose page faults cost more than the kernel
# itself: 5,000 test rows x 2,000 training rows (ijcnn1), predict 0.60 s with 128 MiB
# blocks, 0.07 s with these.
BLOCK_ENTRIES = 2**20


def fit_gram(machine: Machine, K, y, lam, tol=1e-10, max_iter=100) -> FitResult:
    """``machine.fit`` on the Gram matrix ``K`` with separate BLAS pools (see
    :func:`kernelcv._threads.separate_blas_pools`)."""
    with separate_blas_pools():
        return machine.fit(K, y, float(lam), tol=float(tol), max_iter=int(max_iter))


def fit_scheme(machine: Machine, K, codes, n_classes: int, lam, tol=1e-10, max_iter=100):
    """Every binary machine of ``machine.multiclass`` on the Gram matrix ``K`` of all rows.

    ``codes`` are class codes ``0..n_classes-1``. Returns ``coef`` (n, m), one column per
    machine of :func:`~kernelcv.machines.multiclass.binary_problems` (zero off the rows a
    one-vs-one machine is trained on), ``intercepts`` (m,) and ``n_iter`` (m,). Cost: the
    m binary fits on their rows (one-vs-one sub-blocks of K are copied); ten or more small
    one-vs-one pairs are fitted together (:func:`kernelcv.machines.stacked.fit_stacked`).
    """
    problems = binary_problems(codes, n_classes, machine.multiclass)
    coef = np.zeros((codes.shape[0], len(problems)))
    intercepts = np.zeros(len(problems))
    n_iter = np.zeros(len(problems), dtype=np.int64)
    done = np.zeros(len(problems), dtype=bool)
    if (machine.multiclass == "ovo" and not machine.weighted
            and worth_stacking([p.rows.size for p in problems])):
        # many small pairs: one batched Newton iteration for all (same optima)
        K_stack, y_stack, valid = stack_blocks(K, [p.rows for p in problems],
                                               [p.targets(codes) for p in problems])
        with separate_blas_pools():
            stack = fit_stacked(K_stack, y_stack, valid, float(lam), machine.loss,
                                machine.fit_intercept, tol=float(tol),
                                max_iter=int(max_iter))
        done = ~stack.fallback
        for p in np.flatnonzero(done):
            coef[problems[p].rows, p] = stack.alpha[p, :problems[p].rows.size]
            intercepts[p] = stack.intercept[p]
            n_iter[p] = stack.n_iter[p]
    for p, problem in enumerate(problems):
        if done[p]:
            continue
        rows = slice(None) if problem.rows is None else problem.rows
        K_p = K if problem.rows is None else K[np.ix_(rows, rows)]
        result = fit_gram(machine.problem_machine(problem), K_p, problem.targets(codes), lam,
                          tol, max_iter)
        coef[rows, p] = result.alpha
        intercepts[p] = result.intercept
        n_iter[p] = result.n_iter
    return coef, intercepts, n_iter


def decision_values(kernel: Kernel, X, X_fit, coef, intercept=0.0, memory_budget=None):
    """``k(X, X_fit) @ coef + intercept``, computed :data:`BLOCK_ENTRIES` kernel entries
    at a time so memory stays O(BLOCK_ENTRIES) whatever the size of ``X``.

    ``coef`` is ``(n_fit,)`` or ``(n_fit, k)`` (one column per machine); cost O(m n_fit d).
    """
    rows = max(1, BLOCK_ENTRIES // max(X_fit.shape[0], 1))
    blocks = [kernel(X[start:start + rows], X_fit, memory_budget=memory_budget) @ coef
              for start in range(0, X.shape[0], rows)]
    if not blocks:
        return np.zeros((0, *np.shape(coef)[1:])) + intercept
    return np.concatenate(blocks) + intercept


class KernelModel:
    """One kernel machine fitted on ``(X, y)``: a classifier or a regressor.

    More than two classes are fitted as the binary machines of ``machine.multiclass``
    (one Gram matrix, each machine on its rows) and predicted by their vote (one-vs-one)
    or largest value (one-vs-rest).

    Parameters
    ----------
    machine : :class:`kernelcv.machines.Machine` (its loss, task and intercept setting)
    kernel : :class:`kernelcv.kernels.Kernel`
    lam : float > 0
    tol, max_iter : Newton solver settings (the estimators' defaults).
    memory_budget : see :mod:`kernelcv.memory`.

    Attributes (after :meth:`fit`)
    -------------------------------
    classes_ : the labels of a classifier (binary: ``classes_[1]`` is the +1 class).
    X_fit_, dual_coef_, intercept_, n_iter_ : as the kernelcv estimators; with more than
        two classes ``dual_coef_`` is (n, m), one column per binary machine (zero off its
        rows), and ``intercept_`` (m,).

    Notes
    -----
    Cost: O(n^2 d) for the Gram matrix, O(n^3) to fit, O(n d) per predicted point.
    """

    def __init__(self, machine: Machine, kernel: Kernel, lam, tol=1e-10, max_iter=100,
                 memory_budget=None):
        self.machine = machine
        self.kernel = kernel
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget

    def fit(self, X, y):
        """Fit on float64 ``X`` (array or CSR) and labels (two classes) or targets."""
        y = np.asarray(y)
        self.X_fit_ = X.copy()  # predictions must not change if the caller edits X
        if self.machine.is_classifier:
            classes, index = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise KernelCVError(f"a {self.machine.name} model needs two classes, got "
                                    f"{classes.size}")
            self.classes_ = classes
            if classes.size > 2:
                return self._fit_multiclass(index)
            target = np.where(index == 1, 1.0, -1.0)
        else:
            target = y.astype(np.float64)
        K = self.kernel(self.X_fit_, memory_budget=self.memory_budget)
        result = fit_gram(self.machine, K, target, self.lam, self.tol, self.max_iter)
        self.dual_coef_ = result.alpha
        self.intercept_ = float(result.intercept)
        self.n_iter_ = int(result.n_iter)
        return self

    def _fit_multiclass(self, codes):
        """Every binary machine of the scheme on one Gram matrix (:func:`fit_scheme`)."""
        K = self.kernel(self.X_fit_, memory_budget=self.memory_budget)
        self.dual_coef_, self.intercept_, self.n_iter_ = fit_scheme(
            self.machine, K, codes, self.classes_.size, self.lam, self.tol, self.max_iter)
        return self

    def decision_function(self, X):
        """``f(x) = sum_j dual_coef_[j] k(x, X_fit_[j]) + intercept_`` (one column per
        binary machine with more than two classes)."""
        return decision_values(self.kernel, X, self.X_fit_, self.dual_coef_,
                               self.intercept_, self.memory_budget)

    def predict(self, X):
        """Labels (the sign of ``f``) for a classifier, ``f(x)`` for a regressor."""
        decision = self.decision_function(X)
        if not self.machine.is_classifier:
            return decision
        if decision.ndim == 2:
            return self.classes_[predict_codes(decision, self.classes_.size,
                                               self.machine.multiclass)]
        return self.classes_[(decision > 0).astype(np.intp)]
