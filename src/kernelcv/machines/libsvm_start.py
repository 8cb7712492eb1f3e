"""A starting point for the Huber machines from LIBSVM's solution of the unsmoothed problem.

The primal Newton solver (:mod:`kernelcv.machines.solver`) is exact but needs many
iterations on the Huber-smoothed hinge and eps-insensitive losses when it starts far
from the optimum: the smoothed band is narrow (width ``2 w``, ``w = 0.01`` by default),
each iteration moves only the points whose piece changes near the current point, and its
exact line search takes short steps (measured on a 2,000-row subsample of ijcnn1, RBF
kernel: 27-79 iterations from zero, 14 on average from the neighbouring lam's solution).

LIBSVM's SMO (scikit-learn's ``SVC`` / ``SVR`` with ``kernel="precomputed"`` on the same
Gram matrix) solves the *unsmoothed* problem with ``C = 1 / (2 n lam)``. Its solution
differs from the smoothed one by O(w) and puts almost every point on its final piece, so
the Newton solver, started there, finishes in 2-4 iterations with the same optimum (the
objective agrees to 1e-15 with the solve from zero). Measured on that subsample,
16 grid points, one thread: 24.6 s of Newton from zero -> 3.0 s of LIBSVM plus Newton.

The start only changes the speed, never the answer: the Newton solver still iterates to
its own optimality conditions. Its cost is LIBSVM's: O(n^2) kernel reads per pass over
the data, bounded here by ``max_iter = LIBSVM_PASSES * n`` SMO steps (a start that
stopped there is still a good start); LIBSVM copies nothing larger than the n x n
matrix already held.

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
~5 ms; digits one-vs-rest select 26.5 s -> 22.6 s, vowel 16.8 s -> 12.0 s).
"""

from __future__ import annotations

import warnings

import numpy as np

from .losses import HuberHingeLoss, HuberInsensitiveLoss

# Training sets from this many rows start the Huber machines from LIBSVM by default
# (below it the ~1 s import of scikit-learn costs more than the start saves).
LIBSVM_START_MIN_ROWS = 1000
# The same for the binary problems of a multiclass machine (the import is shared by k or
# k (k - 1) / 2 machines per candidate).
LIBSVM_START_MIN_ROWS_MULTICLASS = 250
# LIBSVM's SMO steps are bounded by this many times n (a start needs no tight optimum).
LIBSVM_PASSES = 100
# LIBSVM's stopping tolerance on its KKT violation (scikit-learn's default).
LIBSVM_TOL = 1e-3


def supports_libsvm_start(loss) -> bool:
    """Whether LIBSVM solves the unsmoothed version of ``loss`` (Huber hinge and
    Huber eps-insensitive losses)."""
    return isinstance(loss, HuberHingeLoss | HuberInsensitiveLoss)


def libsvm_start(K, y, lam, loss, fit_intercept):
    """LIBSVM's solution of the unsmoothed problem, as ``(alpha, intercept)``.

    Parameters
    ----------
    K : (n, n) Gram matrix; y : (n,) targets (+-1 for the hinge loss).
    lam : regularisation (LIBSVM's ``C = 1 / (2 n lam)``).
    loss : :class:`HuberHingeLoss` (-> ``SVC``) or :class:`HuberInsensitiveLoss`
        (-> ``SVR`` with the loss's epsilon).
    fit_intercept : whether the machine has an intercept; without one LIBSVM's intercept
        is dropped (the start is then further from the optimum, still a good one).

    Returns
    -------
    (alpha, intercept) with ``f = K alpha + intercept``, or None when LIBSVM cannot be
    used here (a loss it does not solve, one class only, non-finite output).
    """
    if not supports_libsvm_start(loss):
        return None
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC, SVR

    n = y.shape[0]
    C = 1.0 / (2.0 * n * lam)
    options = {"kernel": "precomputed", "C": C, "tol": LIBSVM_TOL,
               "max_iter": LIBSVM_PASSES * max(n, 100)}
    if isinstance(loss, HuberHingeLoss):
        if np.unique(y).size != 2:
            return None
        model = SVC(**options)
    else:
        model = SVR(epsilon=loss.epsilon, **options)
    with warnings.catch_warnings():
        # A start that hit max_iter is still a start; the Newton solver finishes it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(K, y)
    alpha = np.zeros(n)
    # dual_coef_ holds y_j * (LIBSVM's dual variable), i.e. f = sum_j coef_j k(x_j, .) + b,
    # signed towards classes_[1] = +1 for SVC.
    alpha[model.support_] = model.dual_coef_[0]
    intercept = float(model.intercept_[0]) if fit_intercept else 0.0
    if not (np.all(np.isfinite(alpha)) and np.isfinite(intercept)):
        return None
    return alpha, intercept
