"""Which CV method object a search uses: :func:`make_method` from the flat options.

The flat keyword interface (:func:`kernelcv.selection.search.grid_search`, the CLI)
names a method and its options (``KernelSearchCV`` a name alone, or the object);
:func:`make_method` checks that the options belong to that method and returns the unbound
method object of :mod:`kernelcv.selection.methods` or
:mod:`kernelcv.random_features.method`.
"""

from __future__ import annotations

from ..exceptions import KernelCVError, MemoryBudgetError
from ..memory import check_dense_budget, format_bytes
from ..memory import memory_budget as memory_budget_bytes
from ..random_features.growth import MAX_FEATURES, TIME_BUDGET
from ..random_features.method import FEATURE_LOSSES, FeatureSpace
from ..random_features.refine import REFINE_MAX_EVALS
from .gacv_method import GACV
from .methods import BIF, ClosedForm, CVMethod, ExactRefit, GranularityRule
from .spectral_method import Spectral

METHOD_CLASSES = {cls.name: cls for cls in (ExactRefit, ClosedForm, BIF, GACV, FeatureSpace,
                                            Spectral)}
METHODS = tuple(METHOD_CLASSES)
# The default options of the random-feature method (refused with other methods).
_FEATURE_DEFAULTS = ("auto", None, None, None, "auto", REFINE_MAX_EVALS, MAX_FEATURES, TIME_BUDGET,
                     "auto", None, None)

__all__ = ["METHODS", "METHOD_CLASSES", "default_method", "make_method", "method_for_size",
           "method_name"]


def method_name(method) -> str | None:
    """The name of ``method``: a name (or None) as given, a method object's ``name``."""
    return method.name if isinstance(method, CVMethod) else method


def default_method(machine: str) -> str:
    """Closed-form (exact and fast) for krr/lssvm, BIF for the other machines."""
    return "closed-form" if machine in ("krr", "lssvm") else "bif"


#: The flat method options make_method takes, with their defaults.
FLAT_METHOD_OPTIONS = {
    "order": "inf", "epsilon": None, "granularity": "adaptive", "tol": 1e-6,
    "features": "auto", "feature_map": None, "feature_loss": None, "feature_seed": None,
    "refine": "auto", "refine_evals": REFINE_MAX_EVALS, "max_features": MAX_FEATURES,
    "feature_time": TIME_BUDGET, "final": "auto", "final_features": None,
    "final_kernel_limit": None,
}


def make_method(method, machine: str, *, folds=10, **options) -> CVMethod:
    """The CV method object of the flat options (``grid_search``'s, the CLI's).

    ``options`` are the flat method options of :data:`FLAT_METHOD_OPTIONS` (BIF's
    ``order``, ``tol``, ``epsilon`` and ``granularity``, the random-feature options).
    ``method`` is a name, None (the machine's default) or a method object
    (:class:`~kernelcv.selection.methods.CVMethod`, e.g. ``BIF(order=5)`` or
    ``Spectral(tol=1e-12)``), which is returned as it is: its options travel inside it,
    so the flat method options must then keep their defaults.
    ``folds="auto"`` becomes BIF granularity selection (:class:`GranularityRule` with
    ``epsilon`` and ``granularity``); the random-feature options are refused with
    another method. Returns an unbound object: :meth:`CVMethod.bind` checks the machine.
    """
    unknown = sorted(set(options) - set(FLAT_METHOD_OPTIONS))
    if unknown:
        raise TypeError(f"make_method() got an unexpected keyword argument {unknown[0]!r}")
    flat = {**FLAT_METHOD_OPTIONS, **options}
    order, epsilon, granularity, tol = (flat[k] for k in ("order", "epsilon", "granularity",
                                                          "tol"))
    features, feature_map, feature_loss, feature_seed = (
        flat[k] for k in ("features", "feature_map", "feature_loss", "feature_seed"))
    refine, refine_evals, max_features, feature_time = (
        flat[k] for k in ("refine", "refine_evals", "max_features", "feature_time"))
    final, final_features, final_kernel_limit = (
        flat[k] for k in ("final", "final_features", "final_kernel_limit"))
    if isinstance(method, CVMethod):
        flat = (order, epsilon, granularity, tol, features, feature_map, feature_loss,
                feature_seed, refine, refine_evals, max_features, feature_time, final,
                final_features, final_kernel_limit)
        if flat != ("inf", None, "adaptive", 1e-6, *_FEATURE_DEFAULTS):
            raise KernelCVError(
                f"method is the object {method!r}: give its options inside it (e.g. "
                "BIF(order=5)), not as order/epsilon/tol/features/... arguments")
        if isinstance(folds, str) and getattr(method, "granularity", None) is None:
            raise KernelCVError("folds='auto' is granularity selection: give method="
                                "BIF(granularity=GranularityRule(epsilon)), or a number of "
                                "folds or fold ids")
        return method
    by_default = method is None
    method = default_method(machine) if method is None else method
    if not isinstance(method, str) or method not in METHOD_CLASSES:
        raise KernelCVError(f"unknown method {method!r}; choose one of {', '.join(METHODS)} "
                            "or give a method object (kernelcv.selection.methods)")
    rff = method == FeatureSpace.name
    if not rff and (features, feature_map, feature_loss, feature_seed, refine,
                    refine_evals, max_features, feature_time, final, final_features,
                    final_kernel_limit) != _FEATURE_DEFAULTS:
        raise KernelCVError("features, feature_map, feature_loss, feature_seed, refine(_evals), "
                            "max_features, feature_time and final(_features, _kernel_limit) "
                            "belong to method='rff'")
    auto = isinstance(folds, str)
    if auto and rff and folds == "auto":
        raise KernelCVError("folds='auto' chooses BIF orders; give method 'rff' a number "
                            "of folds (the paper uses 5 or 10)")
    if auto:
        if folds != "auto":
            raise KernelCVError(f"folds must be an integer, fold ids or 'auto', got {folds!r}")
        if method != BIF.name:
            raise KernelCVError("folds='auto' (granularity selection) chooses the BIF "
                                "order; use it with method='bif'")
        if epsilon is None:
            raise KernelCVError("folds='auto' needs the tolerated error epsilon "
                                "(e.g. epsilon=0.1)")
        return BIF(tol=tol, granularity=GranularityRule(epsilon, granularity))
    if epsilon is not None:
        raise KernelCVError("epsilon (tolerated error) is used only with folds='auto'")
    if rff:
        return FeatureSpace(features=features, feature_map=feature_map,
                            feature_loss=feature_loss, feature_seed=feature_seed,
                            refine=refine, refine_evals=refine_evals,
                            max_features=max_features, feature_time=feature_time,
                            final=final, final_features=final_features,
                            final_kernel_limit=final_kernel_limit)
    if method == BIF.name:
        return BIF(order=order, tol=tol, by_default=by_default)
    return METHOD_CLASSES[method](by_default=by_default)


#: From this many rows the default method gives way to the low-rank feature space even
#: where its n x n matrices fit. Measured on ijcnn1 (one thread, kernelcv select, 13 x 11
#: grid, 5 folds; docs/results.md): 5,000 rows BIF 14 s / rff 71 s; 10,000 rows BIF 104 s
#: (3.6 GB) / rff 40 s (0.35 GB), test errors 0.0228 / 0.0170.
LOW_RANK_FROM = 10_000


def method_for_size(method: CVMethod, machine: str, kernels, n_samples: int, workers: int = 1,
                    memory_budget=None, *, class_weighted: bool = False
                    ) -> tuple[CVMethod, str | None]:
    """The method a search runs on ``n_samples`` rows, and a note when it is not ``method``.

    A method the user named runs as named (and is refused above the memory budget by its
    own check). The default one (``method.by_default``) gives way to a low-rank factor of
    the kernel -- :class:`~kernelcv.random_features.method.FeatureSpace` with its defaults
    (an adaptive Nystroem factor, memory O(n D), exact refits of the choice where they
    fit) -- where its ``dense_matrices * workers`` dense n x n float64 matrices exceed the
    budget (:func:`kernelcv.memory.memory_budget`), or from :data:`LOW_RANK_FROM` rows,
    where its O(n^2)-per-candidate fits cost more than the feature space. ``kernels``: the
    kernels of the grid (the feature space approximates rbf only); ``machine``: the
    machine's name; ``class_weighted``: the machine has class or sample weights, which the
    feature space does not take (such a search keeps its default method, as above) and
    the closed form does not either (krr and lssvm then run BIF order inf, exact for
    their square loss, without a note: it is the same CV error). Raises
    :class:`MemoryBudgetError` (one line) where neither fits: a
    kernel or machine the feature space does not take above the budget (below it, and
    from ``LOW_RANK_FROM`` rows, such a search keeps its default method). O(1).
    """
    if not method.by_default:
        return method, None
    if class_weighted and isinstance(method, ClosedForm):
        # the closed form has no weights; BIF's order inf is exact for the square loss
        # (its one Newton step solves each fold-out problem), so it is the default then
        method = BIF(order="inf", by_default=True)
    workers = max(int(workers), 1)
    kernels = sorted(set(kernels))
    low_rank_fits = machine in FEATURE_LOSSES and kernels == ["rbf"] and not class_weighted
    what = f"the default method {method.name!r} on {n_samples} samples with {workers} worker(s)"
    try:
        check_dense_budget(n_samples, n_samples, method.dense_matrices * workers, what,
                           memory_budget)
    except MemoryBudgetError as refused:
        if not low_rank_fits and class_weighted:
            raise MemoryBudgetError(
                f"{refused}; the low-rank search that takes over above the budget "
                "(method='rff') has no class or sample weights") from None
        if not low_rank_fits:
            raise MemoryBudgetError(
                f"{refused}; the low-rank search that takes over above the budget "
                f"(method='rff') covers the rbf kernel with {', '.join(FEATURE_LOSSES)}, "
                f"not {machine} with the {' and '.join(kernels)} "
                f"kernel{'s' if len(kernels) > 1 else ''}") from None
        need = n_samples * n_samples * 8 * method.dense_matrices * workers
        budget = format_bytes(memory_budget_bytes(memory_budget))
        reason = (f"would hold {format_bytes(need)} of dense n x n matrices, above the "
                  f"memory budget ({budget})")
    else:
        if n_samples < LOW_RANK_FROM or not low_rank_fits:
            return method, None
        reason = (f"costs O(n^2) or more per candidate from {LOW_RANK_FROM} rows (ijcnn1, "
                  "10,000 rows: 104 s and 3.6 GB against 40 s and 0.35 GB)")
    note = (f"{n_samples} samples: the default method {method.name!r} {reason}, so the "
            "search ran on a low-rank factor of the kernel instead: method 'rff' (an "
            "adaptive Nystroem feature space, memory O(nD)), its choice refined by exact "
            "refits where they fit; name a method to run it anyway")
    return FeatureSpace(), note
