"""What ``KernelSearchCV`` searches: the estimator (a name, a kernelcv estimator, or a
``Pipeline`` ending in one, or a machine inferred from y), and the parameter grid mapped
onto the search's kernel settings and lam values.

Regularisation keys of a grid:

* ``lam``: the project's ``(1/n) sum loss + lam ||f||^2``;
* ``C`` (SVC's ``1/2 ||f||^2 + C sum loss``): ``lam = 1 / (2 n C)``;
* ``alpha`` (KernelRidge's ``sum loss + alpha ||f||^2``): ``lam = alpha / n``;

with n the number of samples given to ``fit``. The final model, refit on those n
samples, is then exactly SVC's (KernelRidge's) at that C (alpha); the fold-out models
keep the same lam (the project's convention), which is SVC's ``C n / (n - l_k)`` on a
training part of ``n - l_k`` samples.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC, SVR
from sklearn.utils.multiclass import type_of_target

from ..exceptions import KernelCVError
from ..selection.space.gamma_range import GammaGrid, data_gamma_grid
from ..validation import check_positive
from ._classifiers import HuberSVMClassifier, L2SVMClassifier, LSSVMClassifier
from ._regressors import HuberSVMRegressor, KernelRidgeRegressor
from ._stand_ins import stand_in

ESTIMATORS = {
    "krr": KernelRidgeRegressor,
    "lssvm": LSSVMClassifier,
    "l2svm": L2SVMClassifier,
    "svm": HuberSVMClassifier,
    "svr": HuberSVMRegressor,
}
KERNEL_KEYS = ("kernel", "gamma", "degree", "coef0")
REGULARISATION_KEYS = ("lam", "C", "alpha")
SEARCHABLE = (*KERNEL_KEYS, *REGULARISATION_KEYS)
# The machine a search without an estimator uses, per task of y.
DEFAULT_MACHINES = {"classification": "lssvm", "regression": "krr"}


def infer_machine(y) -> str:
    """``"lssvm"`` for class labels (binary or multiclass), ``"krr"`` for real targets.

    Labels are classes when scikit-learn's ``type_of_target`` says binary or multiclass
    (strings, booleans, integers, or floats that are all whole numbers); continuous
    targets are regression. Multi-output targets are refused.
    """
    try:
        kind = type_of_target(np.asarray(y))
    except ValueError as error:
        raise KernelCVError(f"cannot tell the task from y: {error}") from None
    if kind in ("binary", "multiclass"):
        return DEFAULT_MACHINES["classification"]
    if kind == "continuous":
        return DEFAULT_MACHINES["regression"]
    raise KernelCVError(f"y is {kind}; KernelSearchCV needs one column of class labels or "
                        "real targets")


def split_estimator(estimator, y):
    """``(preprocessing, final estimator, parameter prefix, stand-in note)`` of what is
    searched.

    ``estimator`` is None (inferred from y), a machine name, a kernelcv estimator, a
    scikit-learn ``SVC``, ``SVR`` or ``KernelRidge`` (searched as its kernelcv stand-in,
    :mod:`._stand_ins`; the note says which) or a :class:`~sklearn.pipeline.Pipeline`
    whose last step is one of these (preprocessing is then the other steps, unfitted,
    and the prefix ``"<last step name>__"``). The note is None without a stand-in.
    """
    if estimator is None:
        estimator = infer_machine(y)
    if isinstance(estimator, str):
        if estimator not in ESTIMATORS:
            raise KernelCVError(f"unknown machine {estimator!r}; choose one of "
                                f"{', '.join(ESTIMATORS)}")
        return None, ESTIMATORS[estimator](), "", None
    n = len(y)
    if isinstance(estimator, Pipeline):
        name, last = estimator.steps[-1]
        last, note = _kernelcv_estimator(last, n)
        if last is None:
            raise KernelCVError(
                "KernelSearchCV searches a Pipeline whose last step is a kernelcv "
                f"estimator, SVC, SVR or KernelRidge; its last step {name!r} is "
                f"{type(estimator.steps[-1][1]).__name__}")
        head = clone(Pipeline(estimator.steps[:-1])) if len(estimator.steps) > 1 else None
        return head, last, f"{name}__", note
    found, note = _kernelcv_estimator(estimator, n)
    if found is None:
        raise KernelCVError(
            "KernelSearchCV needs a kernelcv estimator, SVC, SVR, KernelRidge, a machine "
            f"name or a Pipeline ending in one of them, got {type(estimator).__name__}; "
            "use sklearn's GridSearchCV for others")
    return None, found, "", note


def _kernelcv_estimator(estimator, n_samples):
    """``(a fresh kernelcv estimator, stand-in note or None)``, or ``(None, None)``."""
    if _is_kernelcv(estimator):
        return clone(estimator), None
    found = stand_in(estimator, n_samples)
    return (None, None) if found is None else (found.estimator, found.note)


def _is_kernelcv(estimator) -> bool:
    return any(type(estimator) is cls for cls in ESTIMATORS.values())


def regulariser_name(estimator) -> str:
    """The name a default grid gives the regularisation of ``estimator`` (a Pipeline: its
    last step): ``"C"`` for scikit-learn's SVC and SVR, ``"alpha"`` for KernelRidge, so
    that ``best_params_`` can be set on the estimator given; ``"lam"`` for kernelcv's."""
    last = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    if isinstance(last, SVC | SVR):
        return "C"
    return "alpha" if isinstance(last, KernelRidge) else "lam"


def lam_as(name: str, lam: float, n_samples: int) -> float:
    """``lam`` in the regularisation ``name``: SVC's ``C = 1 / (2 n lam)``, KernelRidge's
    ``alpha = n lam``, or lam itself (the inverse of :func:`_search_params`'s mapping)."""
    if name == "C":
        return 1.0 / (2.0 * n_samples * lam)
    return n_samples * lam if name == "alpha" else lam


def default_grid(base, head, method, X, y, prefix="", regulariser="lam"
                 ) -> tuple[dict, GammaGrid | None]:
    """The grid of a search without ``param_grid``: ``(grid, data-derived gamma grid)``,
    its keys named as a Pipeline's last step's (``prefix``, e.g. ``"svc__"``) and its
    regularisation as the estimator given names it (``regulariser``:
    :func:`regulariser_name`).

    For the rbf and laplace kernels and a method that builds Gram matrices, gamma comes
    from the distances of the rows the machine sees (after ``head``, fitted on X here)
    (:func:`~kernelcv.selection.space.gamma_range.data_gamma_grid`, O(n^2 d)); otherwise it is
    the method's fixed grid. lam is ``2^i / n``, i = -3..11.
    """
    derived = None
    gammas = method.default_gammas()
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if method.kernel_grid and base.kernel in ("rbf", "laplace"):
        seen = X if head is None else clone(head).fit(X, y).transform(X)
        seen = base._validate_fit_input(seen, y, y_numeric=not is_classifier(base))[0]
        derived = data_gamma_grid(seen, base.kernel)
        gammas = list(derived.values)
    return {f"{prefix}gamma": gammas,
            f"{prefix}{regulariser}": [lam_as(regulariser, lam, n)
                                       for lam in method.default_lams(n)]}, derived


def grid_candidates(param_grid, prefix: str, n_samples: int, default: dict | None):
    """The user's candidates (ParameterGrid order) and their search parameters.

    Returns ``(params, search_params)``: ``params`` as given (what ``cv_results_`` and
    ``best_params_`` show), ``search_params`` with the prefix stripped and ``C``/``alpha``
    replaced by ``lam`` (see the module docstring).
    """
    grid = default if param_grid is None else param_grid
    try:
        params = list(ParameterGrid(grid))
    except (TypeError, ValueError) as error:
        raise KernelCVError(f"param_grid: {error}") from None
    if not params:
        raise KernelCVError("param_grid is empty")
    searched = [_search_params(p, prefix, n_samples) for p in params]
    return params, searched


def _search_params(params: dict, prefix: str, n: int) -> dict:
    out = {}
    for key, value in params.items():
        if prefix and not key.startswith(prefix):
            raise KernelCVError(
                f"cannot search {key!r}: in a Pipeline KernelSearchCV searches the last "
                f"step's parameters, named {prefix}<name> ({prefix}gamma, {prefix}C, ...)")
        name = key[len(prefix):]
        if name not in SEARCHABLE:
            raise KernelCVError(
                f"KernelSearchCV searches {', '.join(SEARCHABLE)}; cannot search {name} "
                "(set it on the estimator instead)")
        out[name] = value
    given = [key for key in REGULARISATION_KEYS if key in out]
    if len(given) > 1:
        raise KernelCVError(f"give one of lam, C and alpha per grid, not {' and '.join(given)}")
    if "C" in out:
        out["lam"] = 1.0 / (2.0 * n * check_positive("C", out.pop("C")))
    elif "alpha" in out:
        out["lam"] = check_positive("alpha", out.pop("alpha")) / n
    return out
