"""``KernelSearchCV``, a scikit-learn search object backed by the fast CV criteria, and
``ESTIMATORS``, the registry of the estimator behind each machine name.

The search itself is :func:`kernelcv.selection.search.grid_search`; this module maps a
scikit-learn parameter grid onto its kernel settings and back to ``cv_results_``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted

from ..exceptions import KernelCVError
from ..machines import make_machine
from ..selection.feature_space import FeatureSpace
from ..selection.final import check_final_kernel, fit_final
from ..selection.options import Execution, Safeguards, SearchSpace
from ..selection.refine import refine_for_final
from ..selection.search import make_method, run_search
from ._base import _resolve_gamma
from ._classifiers import HuberSVMClassifier, L2SVMClassifier, LSSVMClassifier
from ._regressors import HuberSVMRegressor, KernelRidgeRegressor

ESTIMATORS = {
    "krr": KernelRidgeRegressor,
    "lssvm": LSSVMClassifier,
    "l2svm": L2SVMClassifier,
    "svm": HuberSVMClassifier,
    "svr": HuberSVMRegressor,
}
_KERNEL_KEYS = ("kernel", "gamma", "degree", "coef0")
_SEARCHABLE = (*_KERNEL_KEYS, "lam")


class KernelSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Grid search over kernel parameters and lam, at the cost of about one fit per candidate.

    A drop-in for :class:`sklearn.model_selection.GridSearchCV` for the kernelcv estimators:
    candidates are scored by exact closed-form CV (krr, lssvm), by the BIF approximation
    (l2svm, svm, svr), by exact refit CV or by GACV, sharing one Gram matrix per kernel
    setting. Approximate searches confirm their best candidates by exact refit CV.

    Parameters
    ----------
    estimator : str or kernelcv estimator, default="krr"
        A machine name (``"krr"``, ``"lssvm"``, ``"l2svm"``, ``"svm"``, ``"svr"``) or an
        instance of one of the kernelcv estimators; its non-searched parameters (kernel,
        huber_width, epsilon, fit_intercept, ...) are kept.
    param_grid : dict or list of dicts, default=None
        Keys among ``kernel``, ``gamma`` (numbers, ``"scale"`` or ``"auto"``), ``degree``,
        ``coef0`` and ``lam``. Default: the papers' grids, ``gamma = 1/(2 sigma^2)`` with
        ``sigma = 2^-10..2^10`` and ``lam = 2^i/n``, ``i = -3..11``.
    method : {"closed-form", "bif", "exact", "gacv"}, default=None
        Closed-form for krr/lssvm, bif otherwise.
    folds : int, array of fold ids or "auto", default=10
        Stratified shuffled folds for classifiers; ``"auto"`` chooses t and the BIF order
        per lam from ``epsilon`` (granularity selection).
    order : int, "inf" or "auto", default="inf"
        BIF order.
    epsilon : float, default=None
        Tolerated approximation error for ``folds="auto"``.
    granularity : {"adaptive", "bound"}, default="adaptive"
    confirm : int, default=3
        Best candidates of an approximate search re-evaluated by exact refit CV.
    recheck_degenerate : bool, default=True
    refit : bool, default=True
        Fit ``best_estimator_`` on all data.
    n_jobs : int, default=None
        Parallel kernel settings (joblib).
    backend : {"auto", "sequential", "loky", "threading", "dask"}, default="auto"
    scheduler : str or distributed.Client, default=None
        A Dask scheduler to send kernel settings to.
    random_state : int, default=0
        Seed of the fold assignment.
    checkpoint : path, default=None
        JSON Lines file recording finished kernel settings; a rerun resumes from it.
    memory_budget : int or str, default=None
    features : int, default=30
        ``method="rff"``: the number D of random features.
    feature_map : {"rff", "nystroem"}, default="rff"
        ``method="rff"``: random Fourier features or Nystroem landmarks.
    feature_loss : {"squared_hinge", "hinge", "square"}, default=None
        ``method="rff"``: loss of the linear machine in feature space (default
        squared_hinge for svm/l2svm, square for krr/lssvm).
    final : {"auto", "kernel", "linear"}, default="auto"
        ``method="rff"``: ``best_estimator_`` is the exact kernel machine (scikit-learn's
        SVC with ``C = 1/(2 n lam)`` for svm; a clone of ``estimator`` at the chosen
        gamma and lam for l2svm, krr and lssvm), the linear model in feature space, or
        (auto) the kernel machine up to 100,000 samples when its dense n x n matrices
        fit the memory budget, the linear one otherwise. ``"kernel"`` is refused before
        the search when they do not fit. The options belong to ``method="rff"``.
    refine : {"auto", True, False}, default="auto"
        ``method="rff"``: walk the grid from the feature-space choice by exact refit CV of
        the final kernel machine (SVC for svm) to a local minimum (see
        :mod:`kernelcv.selection.refine`); "auto" refines up to 5,000 samples.
    refine_evals : int, default=30
        ``method="rff"``: at most this many exact refit CVs in the refinement.

    Attributes
    ----------
    best_params_, best_index_, best_score_ : the chosen candidate, its index in
        ``cv_results_`` and its score (accuracy for classifiers, negative MSE for regressors,
        negative GACV for ``method="gacv"``; the exact score when it was confirmed).
    best_estimator_ : the estimator refit on all data with ``best_params_``.
    cv_results_ : dict of arrays, with GridSearchCV's keys ``params``, ``param_<name>``,
        ``split<k>_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time`` (seconds of each candidate's evaluation),
        plus ``method``, ``order_used``, ``n_folds``, ``status``, ``degenerate`` and
        ``exact_test_score`` (NaN where no exact refit was made, or where an rff
        refinement stopped it early: status ``pruned``).
    search_ : the underlying :class:`kernelcv.selection.search.SearchResult`.

    Notes
    -----
    With ``method="rff"`` the default grid is Feng & Liao's (gamma = 2^-15, 2^-13..2^9,
    lam = 1/(2 n C) for C = 2^-5, 2^-3..2^15); the refined candidates carry exact scores
    (``exact_test_score``; for svm those of scikit-learn's SVC; NaN for the ``pruned``
    ones, which cannot be the best) and the choice is the best of them.
    Scores are averaged over folds without weights, as in GridSearchCV. Fold-out models
    keep the same lam (the objective is normalised by the number of training points), so
    with ``method="exact"`` the choice equals ``GridSearchCV`` over the same estimator
    and folds. More than two classes are cross-validated with the estimator's
    ``multiclass`` scheme (one-vs-rest by default; see :mod:`kernelcv.criteria.multiclass`):
    with ``method="exact"`` the choice equals ``GridSearchCV`` over
    ``OneVsOneClassifier`` (or ``OneVsRestClassifier``) of the same estimator.
    """

    def __init__(self, estimator="krr", param_grid=None, *, method=None, folds=10,
                 order="inf", epsilon=None, granularity="adaptive", confirm=3,
                 recheck_degenerate=True, refit=True, n_jobs=None, backend="auto",
                 scheduler=None, random_state=0, checkpoint=None, memory_budget=None,
                 features=30, feature_map="rff", feature_loss=None, final="auto",
                 refine="auto", refine_evals=30):
        self.estimator = estimator
        self.param_grid = param_grid
        self.method = method
        self.folds = folds
        self.order = order
        self.epsilon = epsilon
        self.granularity = granularity
        self.confirm = confirm
        self.recheck_degenerate = recheck_degenerate
        self.refit = refit
        self.n_jobs = n_jobs
        self.backend = backend
        self.scheduler = scheduler
        self.random_state = random_state
        self.checkpoint = checkpoint
        self.memory_budget = memory_budget
        self.features = features
        self.feature_map = feature_map
        self.feature_loss = feature_loss
        self.final = final
        self.refine = refine
        self.refine_evals = refine_evals

    def _base_estimator(self):
        if isinstance(self.estimator, str):
            if self.estimator not in ESTIMATORS:
                raise KernelCVError(f"unknown machine {self.estimator!r}; choose one of "
                                    f"{', '.join(ESTIMATORS)}")
            return ESTIMATORS[self.estimator]()
        if not any(type(self.estimator) is cls for cls in ESTIMATORS.values()):
            raise KernelCVError(
                "KernelSearchCV needs a kernelcv estimator or machine name, got "
                f"{type(self.estimator).__name__}; use sklearn's GridSearchCV for others")
        return clone(self.estimator)

    def _candidates(self, base, X, n, method):
        grid = self.param_grid
        if grid is None:  # the method's default search space
            grid = {"gamma": method.default_gammas(), "lam": method.default_lams(n)}
        candidates = list(ParameterGrid(grid))
        if not candidates:
            raise KernelCVError("param_grid is empty")
        for params in candidates:
            unknown = set(params) - set(_SEARCHABLE)
            if unknown:
                raise KernelCVError(
                    f"KernelSearchCV searches {', '.join(_SEARCHABLE)}; cannot search "
                    f"{', '.join(sorted(unknown))} (set it on the estimator instead)")
        fixed = base.get_params()
        groups: dict[tuple, list[float]] = defaultdict(list)
        settings: dict[tuple, dict] = {}
        keys = []
        for params in candidates:
            merged = {**fixed, **params}
            setting = {"kernel": merged["kernel"]}
            if merged["kernel"] != "linear":
                setting["gamma"] = _resolve_gamma(merged["gamma"], X)
            if merged["kernel"] == "poly":
                setting["degree"] = merged["degree"]
                setting["coef0"] = merged["coef0"]
            key = tuple(sorted(setting.items()))
            settings.setdefault(key, setting)
            groups[key].append(merged["lam"])
            keys.append((key, float(merged["lam"])))
        order = list(settings)
        return candidates, [settings[k] for k in order], [groups[k] for k in order], \
            order, keys

    def fit(self, X, y):
        """Search the grid on (X, y) and refit the best candidate on all data.

        Returns
        -------
        self : object
        """
        base = self._base_estimator()
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        X_checked = base._validate_fit_input(X, y, y_numeric=not is_classifier(base))[0]
        rff = self.method == FeatureSpace.name
        if rff and self.final not in ("auto", "kernel", "linear"):
            raise KernelCVError(f"final must be 'auto', 'kernel' or 'linear', got "
                                f"{self.final!r}")
        if not rff and ((self.features, self.feature_map, self.feature_loss, self.final,
                         self.refine, self.refine_evals)
                        != (30, "rff", None, "auto", "auto", 30)):
            raise KernelCVError("features, feature_map, feature_loss, final, refine and "
                                "refine_evals belong to method='rff'")
        feature_options = {"features": self.features, "feature_map": self.feature_map,
                           "feature_loss": self.feature_loss,
                           "refine": refine_for_final(self.refine, self.final),
                           "refine_evals": self.refine_evals} if rff else {}
        machine = base._machine_name
        method = make_method(self.method, machine, folds=self.folds, order=self.order,
                             epsilon=self.epsilon, granularity=self.granularity,
                             **feature_options)
        candidates, settings, setting_lams, order, keys = self._candidates(
            base, X_checked, n, method)
        if rff and self.refit and self.final == "kernel":
            check_final_kernel(machine, n, self.memory_budget)
        options = base._machine_options()
        kernels = {s["kernel"] for s in settings}
        result = run_search(
            X_checked, np.asarray(y),
            make_machine(machine, huber_width=options.get("huber_width", 0.01),
                         epsilon=options.get("epsilon", 0.1),
                         fit_intercept=options.get("fit_intercept"),
                         multiclass=options.get("multiclass", "ovr")),
            method, SearchSpace.explicit(kernels.pop() if len(kernels) == 1 else "mixed",
                                         settings, setting_lams),
            folds=self.folds, random_state=self.random_state, average="folds",
            safeguards=Safeguards(self.confirm, self.recheck_degenerate),
            execution=Execution(n_jobs=self.n_jobs, backend=self.backend,
                                scheduler=self.scheduler, checkpoint=self.checkpoint,
                                memory_budget=self.memory_budget))
        self.search_ = result
        lookup = {(order[c["setting"]], float(c["lam"])): i
                  for i, c in enumerate(result.candidates)}
        mapped = [result.candidates[lookup[key]] for key in keys]
        self.cv_results_ = _cv_results(candidates, mapped, is_classifier(base))
        if result.confirmed or result.refined:
            # Chosen by exact error among the confirmed (or refined) candidates.
            best_key = (order[result.best["setting"]], float(result.best["lam"]))
            self.best_index_ = keys.index(best_key)
        else:
            # As GridSearchCV: the first candidate with the best mean score.
            self.best_index_ = int(np.argmax(self.cv_results_["mean_test_score"]))
        self.best_params_ = candidates[self.best_index_]
        exact = self.cv_results_["exact_test_score"][self.best_index_]
        self.best_score_ = float(exact if np.isfinite(exact)
                                 else self.cv_results_["mean_test_score"][self.best_index_])
        if is_classifier(base):
            self.classes_ = np.unique(np.asarray(y))
        if self.refit and rff:
            # The final model is a clone of the given estimator (its options kept) at the
            # chosen gamma and lam, taken from best_params_ (the ParameterGrid order).
            self.best_estimator_, self.final_kind_, notes = fit_final(
                X_checked, np.asarray(y), result, self.final, self.memory_budget,
                best={"gamma": _resolve_gamma(self.best_params_.get("gamma", base.gamma),
                                              X_checked),
                      "lam": self.best_params_.get("lam", base.lam)},
                estimator=base)
            result.notes.extend(notes)
        elif self.refit:
            self.best_estimator_ = clone(base).set_params(**self.best_params_).fit(X, y)
        self.n_features_in_ = X_checked.shape[1]
        return self

    def _check_refit(self, name):
        check_is_fitted(self)
        if not self.refit:
            raise AttributeError(f"{name} needs refit=True")
        return self.best_estimator_

    def predict(self, X):
        """Predict with ``best_estimator_``."""
        return self._check_refit("predict").predict(X)

    def decision_function(self, X):
        """Decision values of ``best_estimator_`` (classifiers)."""
        return self._check_refit("decision_function").decision_function(X)

    def score(self, X, y):
        """``best_estimator_.score``: accuracy (classifiers) or R^2 (regressors)."""
        return self._check_refit("score").score(X, y)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "search_")


def _to_score(error, classifier):
    if error is None:
        return np.nan
    return 1.0 - error if classifier else -error


def _split_scores(candidate, classifier):
    """Per-fold scores: accuracy ``correct / l_k`` (computed as scikit-learn does) or -MSE."""
    errors = candidate["fold_errors"]
    if errors is None:
        return None
    if not classifier:
        return np.array([-e for e in errors])
    sizes = np.asarray(candidate["fold_sizes"], dtype=np.int64)
    correct = sizes - np.rint(np.asarray(errors) * sizes).astype(np.int64)
    return correct / sizes


def _cv_results(params, candidates, classifier) -> dict:
    """GridSearchCV-shaped results from the search's candidate records."""
    n = len(params)
    results: dict = {"params": params}
    names = sorted({key for p in params for key in p})
    for name in names:
        column = np.ma.MaskedArray(np.empty(n, dtype=object), mask=True)
        for i, p in enumerate(params):
            if name in p:
                column[i] = p[name]
        results[f"param_{name}"] = column
    splits = [_split_scores(c, classifier) for c in candidates]
    fold_counts = {len(s) for s in splits if s is not None}
    if len(fold_counts) == 1 and all(s is not None for s in splits):
        for k in range(fold_counts.pop()):
            results[f"split{k}_test_score"] = np.array([s[k] for s in splits])
    # Averaged as GridSearchCV does (np.average of the split scores), so exact searches
    # produce bit-identical means and ties.
    means = np.array([-c["score"] if s is None else np.average(s)
                      for c, s in zip(candidates, splits, strict=True)])
    stds = np.array([np.nan if s is None else np.std(s) for s in splits])
    results["mean_test_score"] = means
    results["std_test_score"] = stds
    results["rank_test_score"] = np.array(
        [int(np.sum(means > m)) + 1 for m in means], dtype=np.int32)
    results["mean_fit_time"] = np.array([c["seconds"] for c in candidates])
    results["method"] = np.array([c["method"] for c in candidates], dtype=object)
    results["order_used"] = np.array([c["order_used"] for c in candidates], dtype=object)
    results["n_folds"] = np.array([c["n_folds"] for c in candidates])
    results["status"] = np.array([c["status"] for c in candidates], dtype=object)
    results["degenerate"] = np.array([c["degenerate"] for c in candidates])
    results["exact_test_score"] = np.array(
        [_to_score(c["exact_error"], classifier) for c in candidates])
    return results
