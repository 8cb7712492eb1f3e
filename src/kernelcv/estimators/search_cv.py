"""``KernelSearchCV``, a scikit-learn search object backed by the fast CV criteria, and
``ESTIMATORS``, the registry of the estimator behind each machine name.

The search itself is :func:`kernelcv.selection.search.run_search`; this module maps a
scikit-learn parameter grid onto its kernel settings (:mod:`._search_space`) and its
candidate records back to ``cv_results_`` (:mod:`._search_results`). Pipelines with
``method="exact"`` and scorers that need a fitted model go fold by fold
(:mod:`._search_refit`).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import replace
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.metrics import get_scorer
from sklearn.model_selection import PredefinedSplit, cross_val_predict
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted, validate_data

from ..criteria.scoring import PROBABILITY_SCORES, SCORES, HeldoutScore, scorer_response
from ..exceptions import KernelCVError
from ..machines import make_machine
from ..machines.calibration import PairScale, fit_score_scale
from ..random_features.final import check_final_kernel, fit_final
from ..random_features.method import FeatureSpace
from ..selection.after_grid.calibration import calibrate_choice, class_codes
from ..selection.method_choice import make_method, method_for_size
from ..selection.methods import BIF, ClosedForm, ExactRefit
from ..selection.moved_options import moved_error
from ..selection.options import Execution, Safeguards, SearchSpace
from ..selection.screening import Screening
from ..selection.search import run_search, warn_edges
from ..selection.spectral_method import Spectral
from ..validation import explicit_splits, make_folds, partitions, splitter_fold_ids
from ._base import _resolve_gamma
from ._search_refit import FoldByFold, Reserve, fold_splits, refit_search
from ._search_results import cv_results
from ._search_space import (
    ESTIMATORS,
    default_grid,
    grid_candidates,
    lam_as,
    regulariser_name,
    split_estimator,
)
from ._stand_ins import stand_in_kernel

__all__ = ["ESTIMATORS", "KernelSearchCV"]
_PAPER_HINT = ("the papers' grid: param_grid={'gamma': kernelcv.selection.space.grids."
               "default_gammas(), ...}")


class KernelSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Grid search over kernel parameters and regularisation, at about one fit per candidate.

    A drop-in for :class:`sklearn.model_selection.GridSearchCV` over the kernelcv
    estimators (or a ``Pipeline`` ending in one): candidates are scored by exact
    closed-form CV (krr, lssvm), by the BIF approximation (l2svm, svm, svr), by exact
    refit CV or by GACV, sharing one Gram matrix per kernel setting; approximate searches
    confirm their best candidates by exact refit CV and choose on the exact values.
    docs/search-cv.md describes every option and the differences from GridSearchCV.

    Parameters
    ----------
    estimator : None, str, kernelcv estimator, SVC, SVR, KernelRidge or Pipeline
        None: ``"lssvm"`` for class labels, ``"krr"`` for real targets (inferred from y
        in ``fit``); a machine name (``"krr"``, ``"lssvm"``, ``"l2svm"``, ``"svm"``,
        ``"svr"``); an instance of a kernelcv estimator (its non-searched parameters are
        kept); scikit-learn's ``SVC``, ``SVR`` or ``KernelRidge``, searched as the
        kernelcv machine that stands in for it (``svm``, ``svr``, ``krr``; kernel, width,
        C or alpha and epsilon carried over; ``stand_in_`` says which); or a ``Pipeline``
        whose last step is one of these. With a Pipeline the fast
        criteria fit the preprocessing steps once on all the training data given to
        ``fit`` (unsupervised scaling leaks no label, but a supervised step would see the
        held-out labels); ``method="exact"`` refits them on every training part, as
        GridSearchCV does.
    param_grid : dict or list of dicts, default=None
        Keys among ``kernel``, ``gamma`` (numbers, ``"scale"`` or ``"auto"``), ``degree``,
        ``coef0`` and one of ``lam``, ``C`` (``lam = 1 / (2 n C)``, SVC's) or ``alpha``
        (``lam = alpha / n``, KernelRidge's), n the samples given to ``fit``; in a
        Pipeline prefixed ``<last step>__``. Default: ``lam = 2^i/n``, i = -3..11 (C =
        2^-12..4), widened toward C = 2^11 where the choice reaches that edge (the
        values evaluated join ``cv_results_``; ties go to the candidate farthest from
        the grid's edges), and for the rbf and laplace kernels gamma from the data's
        distances: the powers ``2^(2k+1)`` of the papers' grid without those whose
        kernel matrix is numerically the identity or near-constant (``gamma_grid_``;
        docs/grids.md); ``method="rff"`` and the poly kernel keep the method's fixed
        grids.
    scoring : str, callable, list, dict or None, default=None
        None: accuracy (classifiers) or negative MSE (regressors). The fast criteria
        compute ``"accuracy"``, ``"balanced_accuracy"``, ``"roc_auc"``,
        ``"average_precision"``, ``"f1"``, ``"precision"``, ``"recall"`` (two classes;
        the +1 class is the larger label), ``"f1_macro"`` and the other ``_macro``,
        ``_micro``, ``_weighted`` averages, ``"neg_mean_squared_error"``,
        ``"neg_root_mean_squared_error"``, ``"neg_mean_absolute_error"`` and ``"r2"``
        from the held-out decision values, and ``"neg_log_loss"``,
        ``"neg_brier_score"``, ``"roc_auc_ovr"``, ``"roc_auc_ovo"`` (and ``_weighted``)
        from cross-fitted probabilities of them (:mod:`kernelcv.criteria.scoring`), as
        well as every other scikit-learn scorer name (scored by scikit-learn's scorer on
        the held-out predictions, probabilities or per-class scores); callables
        ``scorer(estimator, X, y)``
        need ``method="exact"``, as do several metrics (a list, or a dict of names to
        scorers, with ``refit`` naming the one that chooses).
    n_jobs : int or None, default=None
        Kernel settings evaluated in parallel (joblib; fold-by-fold searches: folds and
        candidates, as GridSearchCV). Given here, an ``execution`` must leave its own
        ``n_jobs`` at the default; left None, ``execution.n_jobs`` applies.
    refit : bool, str or callable, default=True
        Fit ``best_estimator_`` on all data. A callable takes ``cv_results_`` and returns
        the index of the candidate to refit (``best_index_``), as in GridSearchCV; with
        several metrics, the name of the one that chooses.
    cv : int, splitter, iterable of (train, test) or array of fold ids, default=None (10)
        An int t: stratified (classifiers) shuffled folds seeded by ``random_state``, the
        same as ``StratifiedKFold(t, shuffle=True, random_state=random_state)``
        (``KFold`` for regressors); a scikit-learn splitter whose test sets partition the
        samples (``KFold``, ``StratifiedKFold``, ``GroupKFold`` with ``groups`` in
        ``fit``, ``LeaveOneOut``, ``PredefinedSplit``); an array of fold ids
        (``method="exact"`` takes any splits, fold by fold). Granularity selection (t and
        the BIF order per lam, formerly ``cv="auto"``) is a method:
        ``method=BIF(granularity=GranularityRule(epsilon, "adaptive"))``, with cv None.
    verbose : int, default=0
        1: one line before and after the search on stderr; 2: progress of every stage.
    pre_dispatch, error_score, return_train_score : GridSearchCV's
        Used where folds are fitted one by one (``method="exact"`` with a Pipeline or a
        scorer that needs a model, and every ``return_train_score=True`` search, which
        needs ``method="exact"``: the fast criteria form held-out values only). The fast
        criteria have no failing fits to score: a candidate they cannot evaluate is a
        one-line ``KernelCVError`` (as ``error_score="raise"``); ``pre_dispatch`` does
        not apply to their parallelism over kernel settings.
    method : str or method object, default=None
        A name, ``"closed-form"``, ``"bif"``, ``"exact"``, ``"gacv"``, ``"rff"`` or
        ``"spectral"``, with the method's default options (None: closed-form for
        krr/lssvm, bif otherwise), or a method object of :mod:`kernelcv.selection`
        carrying its options: ``BIF(order=, tol=, granularity=GranularityRule(epsilon,
        rule))``, ``FeatureSpace(features=, feature_map=, feature_loss=, feature_seed=,
        refine=, refine_evals=, max_features=, feature_time=, final=, final_features=,
        final_kernel_limit=)`` (``method="rff"``; ``final`` chooses ``best_estimator_``:
        ``"kernel"``, ``"linear"`` or ``"auto"``), ``Spectral(tol=)``, ``ExactRefit()``,
        ``ClosedForm()``, ``GACV()``. ``"spectral"``: exact CV of every candidate of a
        kernel setting from one eigendecomposition (no confirmations).
    screen : {"off", "coarse", "halving", "auto"}, default="off"
        Evaluate the whole grid (GridSearchCV's behaviour), or only the candidates a
        coarse-to-fine walk reaches (``kernelcv select``'s screening,
        :mod:`kernelcv.selection.screening`; ``"halving"`` starts the walk from an n/4
        subsample's ranking). Candidates left out are NaN in ``cv_results_`` with status
        ``"screened out"``. ``"auto"``: off for ``spectral``, ``closed-form`` and ``rff``
        (every lam of a setting costs about one), else ``"halving"`` from 200 rows,
        ``"coarse"`` below. On 10-class digits (8 x 8 grid, 5 folds) ``"auto"`` took
        10.2 s instead of 15.8 s, with the same choice.
    random_state : int, default=0
        Seed of the fold assignment (and of the random features, unless the
        ``FeatureSpace`` gives ``feature_seed``).
    safeguards : Safeguards or None, default=None (``Safeguards()``)
        The exact refits after an approximate search: ``Safeguards(confirm=3,
        recheck_degenerate=True)``, the best candidates confirmed by exact refit CV
        (0: none) and whether degenerate candidates are re-evaluated exactly.
    execution : Execution or None, default=None (``Execution()``)
        Where the fast search runs and what it may use: ``Execution(backend="auto",
        scheduler=None, checkpoint=None, memory_budget=None, progress=None)`` (joblib or
        Dask, a JSON Lines file of finished settings, a byte budget such as ``"8G"``;
        see :class:`kernelcv.selection.Execution`). ``progress(stage, done, total)``,
        when given, is called instead of ``verbose=2``'s printing; ``n_jobs`` see above.

    The flat options of kernelcv 0.1 (``folds``, ``order``, ``epsilon``,
    ``granularity``, ``confirm``, ``recheck_degenerate``, ``backend``, ``scheduler``,
    ``checkpoint``, ``memory_budget`` and the rff options ``features``, ...,
    ``feature_time``, ``final``) are refused with a ``KernelCVError`` naming the object
    that holds them now (docs/search-cv.md, "Moved in 0.2").

    Attributes
    ----------
    best_params_, best_index_, best_score_ : the chosen candidate (as given in the grid),
        its index in ``cv_results_`` (always rank 1) and ``mean_test_score`` there.
    best_estimator_ : the estimator (or Pipeline) refit on all data at the chosen
        parameters (C and alpha as lam); for an ``SVC``, ``SVR`` or ``KernelRidge`` its
        kernelcv stand-in.
    calibration_ : classifiers searched by a kernel method: the
        :class:`~kernelcv.machines.calibration.ScoreScale` behind ``predict_proba``,
        fitted on the chosen candidate's out-of-fold decision values (its exact
        confirmation's, or one exact refit CV of it; fold-by-fold searches: their own
        refits' values); None otherwise.
    stand_in_ : None, or the line that says which kernelcv machine was searched in
        place of a scikit-learn ``SVC``, ``SVR`` or ``KernelRidge`` (printed with
        ``verbose``).
    cv_results_ : dict of arrays with GridSearchCV's keys; ``mean_test_score`` holds the
        value the choice was made on (exact where computed; NaN and status
        ``unverified`` for an approximate value better than the choice that was never
        confirmed), ``approx_test_score`` and ``exact_test_score`` the two kinds of
        value, plus ``lam``, ``method``, ``order_used``, ``n_folds``, ``status`` and
        ``degenerate`` (see :mod:`kernelcv.estimators._search_results`).
    scorer_, multimetric_, n_splits_, refit_time_, classes_, n_features_in_ : as in
        GridSearchCV (``multimetric_`` and a dict ``scorer_`` for ``scoring`` as a list or
        dict, which needs ``method="exact"``).
    feature_names_in_ : the column names of a DataFrame X with string names, as in
        GridSearchCV (absent otherwise).
    search_ : the :class:`kernelcv.selection.search.SearchResult` (None on the
        fold-by-fold path).
    gamma_grid_ : dict or None: how the default gamma grid was derived from the data
        (:meth:`kernelcv.selection.space.gamma_range.GammaGrid.to_dict`); None with a
        ``param_grid`` or without a data-derived default.

    Notes
    -----
    Scores are averaged over folds without weights, as in GridSearchCV. Fold-out models
    keep the same lam (the objective is normalised by the number of training points), so
    with ``method="exact"`` the choice equals ``GridSearchCV`` over the same estimator,
    lam grid and folds. More than two classes are cross-validated with the estimator's
    ``multiclass`` scheme (one-vs-one by default).
    """

    def __new__(cls, *args, **kwargs):
        # scikit-learn reads the parameters from __init__'s signature, which therefore
        # cannot take **kwargs: the options that moved into objects in 0.2 are refused
        # here, with the new spelling, instead of by Python's bare TypeError.
        moved = [name for name in kwargs if name not in cls._get_param_names()]
        if moved:
            raise _moved(cls.__name__, moved)
        return super().__new__(cls)

    def __init__(self, estimator=None, param_grid=None, *, scoring=None, n_jobs=None,
                 refit=True, cv=None, verbose=0, pre_dispatch="2*n_jobs",
                 error_score=np.nan, return_train_score=False, method=None, screen="off",
                 random_state=0, safeguards=None, execution=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.cv = cv
        self.verbose = verbose
        self.pre_dispatch = pre_dispatch
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.method = method
        self.screen = screen
        self.random_state = random_state
        self.safeguards = safeguards
        self.execution = execution

    def set_params(self, **params):
        """Set parameters, as scikit-learn's; the options moved into objects in 0.2 are
        refused with their new spelling."""
        moved = [name for name in params
                 if "__" not in name and name not in self._get_param_names()]
        error = _moved(type(self).__name__, moved) if moved else None
        if isinstance(error, KernelCVError):
            raise error
        return super().set_params(**params)  # scikit-learn's error for an unknown name

    # ------------------------------------------------------------------ options
    def _cv(self, method):
        if isinstance(self.cv, str):
            raise KernelCVError(
                f"cv={self.cv!r}: granularity selection is a method since kernelcv 0.2; "
                "write method=BIF(granularity=GranularityRule(epsilon, 'adaptive')) and "
                "leave cv=None")
        if isinstance(method, BIF) and method.granularity is not None:
            if self.cv is not None:
                raise KernelCVError(
                    "BIF granularity selection chooses the folds per lam (fixed 10 folds "
                    "serve its degeneracy checks); leave cv=None")
            return "auto"
        return 10 if self.cv is None else self.cv

    def _safeguards(self) -> Safeguards:
        if self.safeguards is None:
            return Safeguards()
        if not isinstance(self.safeguards, Safeguards):
            raise KernelCVError(f"safeguards must be a kernelcv.Safeguards, got "
                                f"{self.safeguards!r}")
        return self.safeguards

    def _execution(self) -> Execution:
        """The execution of the search: ``execution`` with the flat ``n_jobs`` (which wins
        when given; an ``execution`` must then leave its own at the default) and, with
        ``verbose=2`` and no ``progress`` of its own, the stage lines on stderr."""
        execution = self.execution
        if execution is None:
            execution = Execution(n_jobs=self.n_jobs)
        elif not isinstance(execution, Execution):
            raise KernelCVError(f"execution must be a kernelcv.Execution, got {execution!r}")
        elif self.n_jobs is not None:
            if execution.n_jobs != Execution().n_jobs:
                raise KernelCVError(
                    f"n_jobs={self.n_jobs!r} and execution=Execution(n_jobs="
                    f"{execution.n_jobs!r}): give n_jobs once (KernelSearchCV's n_jobs, "
                    "scikit-learn's name)")
            execution = replace(execution, n_jobs=self.n_jobs)
        if execution.progress is None and self.verbose >= 2:
            execution = replace(execution, progress=self._progress)
        return execution

    def _scoring(self, classifier):
        """``(HeldoutScore or None, scorer_, fold-by-fold needed)``; ``scorer_`` is a dict
        of scorers for several metrics (fold by fold, chosen by ``refit``)."""
        scoring = self.scoring
        if isinstance(scoring, list | tuple | set | dict):
            return None, self._scorers(scoring), True
        if scoring is None:
            name = "accuracy" if classifier else "neg_mean_squared_error"
            return None, get_scorer(name), False
        if callable(scoring):
            return None, scoring, True
        if not isinstance(scoring, str):
            raise KernelCVError(f"scoring must be a string or a callable, got {scoring!r}")
        try:
            scorer = get_scorer(scoring)
        except ValueError:
            raise KernelCVError(f"unknown scoring {scoring!r}; see "
                                "sklearn.metrics.get_scorer_names()") from None
        if scoring in SCORES or scorer_response(scoring) is not None:
            score = HeldoutScore(scoring)
            score.check(classifier)
            return score, scorer, False
        return None, scorer, True

    def _scorers(self, scoring) -> dict:
        """The named scorers of several metrics, as GridSearchCV takes them (a list of
        scorer names, or a dict of names to scorer names or callables); ``refit`` must
        name the one that chooses (or be a callable)."""
        if isinstance(scoring, dict):
            items = list(scoring.items())
        else:
            items = [(name, name) for name in scoring]
            if not all(isinstance(name, str) for name, _ in items):
                raise KernelCVError("scoring as a list holds scorer names (strings)")
        if not items or len({name for name, _ in items}) != len(items):
            raise KernelCVError("scoring as a list or dict needs distinct metric names")
        scorers = {}
        for name, scorer in items:
            if callable(scorer):
                scorers[name] = scorer
                continue
            try:
                scorers[name] = get_scorer(scorer)
            except (ValueError, TypeError):
                raise KernelCVError(f"unknown scoring {scorer!r}; see "
                                    "sklearn.metrics.get_scorer_names()") from None
        if not callable(self.refit) and self.refit not in scorers:
            raise KernelCVError(
                "with several metrics refit must name the one that chooses ("
                f"{', '.join(map(repr, scorers))}) or be a callable, got {self.refit!r}")
        return scorers

    def _progress(self, stage, done, total):
        if done == total or done == 0:
            print(f"[KernelSearchCV] {stage}: {done}/{total}", file=sys.stderr)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, groups=None, sample_weight=None):
        """Search the grid on (X, y) and refit the best candidate on all data.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels of any type, or real targets.
        groups : array-like of shape (n_samples,), default=None
            Group labels for a splitter that uses them (``GroupKFold``).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows' loss terms in every fit (each fold-out model keeps its
            rows' weights), as ``GridSearchCV.fit(X, y, sample_weight=w)`` passes them to
            ``SVC.fit``; the CV scores stay unweighted, as GridSearchCV's. Not with
            ``method="rff"``.

        Returns
        -------
        self : object
        """
        tic = time.perf_counter()
        if X is None or y is None:
            raise KernelCVError("both X and y are required")
        head, base, prefix, self.stand_in_ = split_estimator(self.estimator, y)
        # what is refitted: the Pipeline with its last step replaced by the searched
        # (kernelcv or stand-in) estimator
        self._searched = (Pipeline([*self.estimator.steps[:-1], (prefix[:-2], base)])
                          if isinstance(self.estimator, Pipeline) else base)
        if self.stand_in_ is not None and self.verbose:
            print(f"[KernelSearchCV] {self.stand_in_}", file=sys.stderr)
        classifier = is_classifier(base)
        score, self.scorer_, fold_by_fold = self._scoring(classifier)
        self.multimetric_ = isinstance(self.scorer_, dict)
        # the method object: as given, or a name's with its default options
        method = make_method(self.method, base._machine_name)
        refits = isinstance(method, ExactRefit)  # fold by fold, as GridSearchCV, or not
        if self.multimetric_ and not refits:
            raise KernelCVError(
                "several metrics at once are computed fold by fold: use method='exact' (the "
                "fast criteria rank by one metric)")
        if fold_by_fold and not refits:
            raise KernelCVError(
                f"scoring {self.scoring!r} cannot be computed from held-out decision "
                f"values; the fast criteria offer {', '.join(SCORES)}; use one of them, or "
                "method='exact' (fold-by-fold refits, as GridSearchCV)")
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        cv = self._cv(method)
        pairs = explicit_splits(cv, X, y, groups) if refits else None
        any_splits = pairs is not None and not partitions(pairs, n)
        # method 'exact' takes any splits fold by fold (ShuffleSplit, RepeatedKFold), as
        # GridSearchCV; the shared criteria need test sets that partition the rows
        try:
            # "auto": BIF granularity selection, which chooses its own folds
            folds = cv if isinstance(cv, str) else pairs if any_splits else splitter_fold_ids(
                cv if pairs is None else pairs, X, y, groups if pairs is None else None)
        except KernelCVError as error:
            if "partition" not in str(error):
                raise
            raise KernelCVError(f"{error}; method='exact' takes any splits, fold by fold "
                                "(as GridSearchCV)") from None
        safeguards, execution = self._safeguards(), self._execution()
        # the default method's n x n matrices may not fit: a low-rank feature space instead
        method, size_note = method_for_size(
            method, base._machine_name, _grid_kernels(self.param_grid, prefix, base), n,
            execution.workers, execution.memory_budget,
            class_weighted=getattr(base, "class_weight", None) is not None
            or sample_weight is not None)
        if size_note is not None and self.screen not in ("auto", "off"):
            raise KernelCVError(f"{size_note}; that search walks the grid itself: give "
                                "screen='off', or name a method to screen")
        if size_note is not None and self.verbose:
            print(f"[KernelSearchCV] {size_note}", file=sys.stderr)
        rff = isinstance(method, FeatureSpace)
        regulariser = regulariser_name(self.estimator) if self.estimator is not None \
            else "lam"
        default, derived = (None, None) if self.param_grid is not None else default_grid(
            base, head, method, X, y, prefix, regulariser)
        self.gamma_grid_ = None if derived is None else derived.to_dict()
        if derived is not None and self.verbose:
            print(f"[KernelSearchCV] {derived.note(_PAPER_HINT)}", file=sys.stderr)
        params, search_params = grid_candidates(self.param_grid, prefix, n, default)
        if self.stand_in_ is not None:  # scikit-learn's kernel names in the grid
            search_params = [{**p, "kernel": stand_in_kernel(p["kernel"])} if "kernel" in p
                             else p for p in search_params]
        lams = [p.get("lam", base.lam) for p in search_params]
        if self.return_train_score and not refits:
            raise KernelCVError(
                "return_train_score=True needs each fold-out model's scores on its own "
                "training part, which the fast criteria never form (they give held-out "
                "values only); use method='exact' (fold by fold, as GridSearchCV)")
        if (head is not None and refits or fold_by_fold or self.return_train_score
                or any_splits):
            reserve = None if self.param_grid is not None else Reserve(
                tuple(method.reserve_lams(n)),
                partial(_shown_at, f"{prefix}{regulariser}", regulariser, n))
            self._fit_fold_by_fold(head, base, prefix, params, search_params, lams, X, y,
                                   folds, classifier, execution.n_jobs, sample_weight,
                                   reserve)
        else:
            reserve = [] if self.param_grid is not None else method.reserve_lams(n)
            self._fit_fast(head, base, prefix, params, search_params, lams, X, y, folds,
                           classifier, score, method, rff, safeguards, execution,
                           sample_weight, reserve)
            if size_note is not None:
                self.search_.notes.insert(0, size_note)
        self.best_params_ = params[self.best_index_]
        chooser = ("score" if not self.multimetric_ or callable(self.refit)
                   else self.refit)
        if f"mean_test_{chooser}" in self.cv_results_:
            self.best_score_ = float(self.cv_results_[f"mean_test_{chooser}"][self.best_index_])
        if self.verbose:
            print(f"[KernelSearchCV] best {self.best_params_}: {self.best_score_:.4g} "
                  f"({time.perf_counter() - tic:.2f} s)", file=sys.stderr)
        return self

    def _refit_callable(self):
        """``refit=callable``, as GridSearchCV: it picks ``best_index_`` from
        ``cv_results_`` (then the refitted model is that candidate's)."""
        if not callable(self.refit):
            return
        index = self.refit(self.cv_results_)
        n = len(self.cv_results_["params"])
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) \
                or not 0 <= index < n:
            raise KernelCVError(f"refit callable returned {index!r}; it must return an "
                                f"index of cv_results_ (0..{n - 1})")
        self.best_index_ = int(index)

    def _fit_fold_by_fold(self, head, base, prefix, params, search_params, lams, X, y,
                          folds, classifier, n_jobs, sample_weight=None, reserve=None):
        estimator = clone(self._searched)
        fit_params = (None if sample_weight is None
                      else {f"{prefix}sample_weight": np.asarray(sample_weight)})
        if isinstance(folds, list):  # (train, test) pairs that do not partition the rows
            fold_ids, splits = None, folds
        else:
            fold_ids = make_folds(np.asarray(y), folds, classifier, self.random_state)
            splits = None
        self.n_splits_ = len(splits) if fold_ids is None else int(fold_ids.max()) + 1
        if self.verbose:
            print(f"[KernelSearchCV] {self.n_splits_} folds for each of {len(params)} "
                  "candidates, fold by fold (method 'exact')", file=sys.stderr)
        self.search_ = None
        options = FoldByFold(
            n_jobs=n_jobs, verbose=self.verbose, error_score=self.error_score,
            return_train_score=self.return_train_score, pre_dispatch=self.pre_dispatch,
            refit=self.refit if self.multimetric_ and not callable(self.refit) else None,
            fit_params=fit_params, sample_weight=sample_weight)
        self.cv_results_, self.best_index_ = refit_search(
            estimator, params, search_params, prefix, X, y,
            fold_splits(fold_ids) if splits is None else splits, self.scorer_, lams=lams,
            options=options, reserve=reserve)
        self._refit_callable()
        if classifier:
            self.classes_ = np.unique(np.asarray(y))
        _record_input(self, X)
        if self.refit:
            refit_tic = time.perf_counter()
            chosen = clone(estimator).set_params(
                **{f"{prefix}{k}": v for k, v in search_params[self.best_index_].items()})
            self.best_estimator_ = clone(chosen).fit(X, y, **(fit_params or {}))
            self.refit_time_ = time.perf_counter() - refit_tic
            self.calibration_ = None
            if classifier and fold_ids is not None:  # its out-of-fold values: t more fits
                values = cross_val_predict(chosen, X, y, cv=PredefinedSplit(fold_ids),
                                           method="decision_function", params=fit_params)
                self.calibration_ = fit_score_scale(values, class_codes(y), sample_weight)

    def _fit_fast(self, head, base, prefix, params, search_params, lams, X, y, folds,
                  classifier, score, method, rff, safeguards, execution, sample_weight=None,
                  reserve=()):
        """The search on the fast criteria. ``reserve``: lam values below the default
        grid, evaluated where the choice reaches them (run_search); the ones evaluated
        join ``params``, ``search_params`` and ``lams`` (changed in place)."""
        fitted_head = None if head is None else clone(head).fit(X, y)
        X_search = X if fitted_head is None else fitted_head.transform(X)
        X_checked = base._validate_fit_input(X_search, y, y_numeric=not classifier)[0]
        n = X_checked.shape[0]
        settings, setting_lams, order, keys = _settings(base, X_checked, search_params)
        if score is not None:
            method = replace(method, scoring=score)
        machine = base._machine_name
        if rff and self.refit and method.final == "kernel":
            check_final_kernel(machine, n, execution.memory_budget)
        options = base._machine_options()
        kernels = {s["kernel"] for s in settings}
        if self.verbose:
            print(f"[KernelSearchCV] {len(params)} candidates ({len(settings)} kernel "
                  f"settings), method {method.name!r}", file=sys.stderr)
        result = run_search(
            X_checked, np.asarray(y),
            make_machine(machine, huber_width=options.get("huber_width", 0.01),
                         epsilon=options.get("epsilon", 0.1),
                         fit_intercept=options.get("fit_intercept"),
                         multiclass=options.get("multiclass", "ovo"),
                         class_weight=options.get("class_weight")),
            method, SearchSpace.explicit(kernels.pop() if len(kernels) == 1 else "mixed",
                                         settings, setting_lams, reserve),
            folds=folds, random_state=self.random_state, average="folds",
            safeguards=safeguards, execution=execution,
            screening=Screening(strategy=_screen_strategy(self.screen, n, method)),
            sample_weight=sample_weight)
        self.search_ = result
        warn_edges(result, stacklevel=4)
        lookup = {(order[c["setting"]], float(c["lam"])): i
                  for i, c in enumerate(result.candidates)}
        if reserve:
            _add_widened(result, order, keys, params, search_params, lams, prefix,
                         "lam" if self.estimator is None
                         else regulariser_name(self.estimator))
        mapped = [result.candidates[lookup[key]] if key in lookup
                  else _screened_out(result) for key in keys]
        chosen = None
        if result.confirmed or result.refined or reserve:
            chosen = keys.index((order[result.best["setting"]], float(result.best["lam"])))
        self.cv_results_, self.best_index_ = cv_results(
            params, mapped, chosen, default_classifier=classifier and score is None,
            score_is_error=result.criterion.score_is_error, lams=lams,
            weighted=sample_weight is not None)
        self._refit_callable()
        self.n_splits_ = result.folds if isinstance(result.folds, int) else None
        if classifier:
            self.classes_ = np.unique(np.asarray(y))
        _record_input(self, X)
        if not self.refit:
            return
        best = search_params[self.best_index_]
        refit_tic = time.perf_counter()
        if rff:
            # The final model is a clone of the given estimator (its options kept) at the
            # chosen gamma and lam.
            final, self.final_kind_, notes = fit_final(
                X_checked, np.asarray(y), result, method.final, execution.memory_budget,
                best={"gamma": _resolve_gamma(best.get("gamma", base.gamma), X_checked),
                      "lam": best.get("lam", base.lam)}, estimator=base,
                kernel_limit=method.final_kernel_limit, final_features=method.final_features)
            result.notes.extend(notes)
            self.best_estimator_ = final if fitted_head is None else Pipeline(
                [*fitted_head.steps, (prefix[:-2], final)])
        elif isinstance(self.estimator, Pipeline):
            weights = {} if sample_weight is None else {f"{prefix}sample_weight": sample_weight}
            self.best_estimator_ = clone(self._searched).set_params(
                **{f"{prefix}{k}": v for k, v in best.items()}).fit(X, y, **weights)
        else:
            self.best_estimator_ = clone(base).set_params(**best).fit(
                X, y, sample_weight=sample_weight)
        self.refit_time_ = time.perf_counter() - refit_tic
        self.calibration_ = None
        if classifier and not rff:
            key = keys[self.best_index_]
            # a refit callable may pick a candidate the screening never evaluated
            candidate = (result.candidates[lookup[key]] if key in lookup
                         else {**dict(key[0]), "lam": key[1], "n_folds": self.n_splits_})
            self.calibration_ = calibrate_choice(result, lookup.get(key), candidate,
                                                  X_checked, np.asarray(y))

    # ------------------------------------------------------------------ predict
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

    def _has_probabilities(self):
        """Raise AttributeError with the reason where a fitted search has no
        probabilities (no ``calibration_``): ``hasattr(search, "predict_proba")`` is then
        False, as scikit-learn's searches answer for an estimator without them, and the
        message says why."""
        if hasattr(self, "calibration_") and self.calibration_ is None:
            raise AttributeError("predict_proba needs a classifier searched by a kernel "
                                 "method (not a regressor, not method='rff') on folds "
                                 "whose test sets partition the rows (its calibration "
                                 "uses each row's out-of-fold value)")

    @property
    def predict_proba(self):
        """Class probabilities of ``best_estimator_``'s decision values, scaled by
        ``calibration_`` (fitted on the chosen candidate's out-of-fold values; the most
        probable class is always the predicted one). Columns follow ``classes_``.
        ``predict_proba(X)``; an attribute only where the search has probabilities."""
        self._has_probabilities()
        return self._predict_proba

    @property
    def predict_log_proba(self):
        """``log(predict_proba(X))``; an attribute only where ``predict_proba`` is."""
        self._has_probabilities()
        return self._predict_log_proba

    def _predict_proba(self, X):
        estimator = self._check_refit("predict_proba")
        if isinstance(self.calibration_, PairScale):
            return self.calibration_.probabilities(_machine_values(estimator, X))
        return self.calibration_.probabilities(estimator.decision_function(X))

    def _predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self._predict_proba(X))

    def transform(self, X):
        """``best_estimator_.transform`` (for a Pipeline that ends in a transformer)."""
        return self._check_refit("transform").transform(X)

    def score(self, X, y):
        """``best_estimator_.score`` (accuracy or R^2) when ``scoring`` is None, as
        GridSearchCV; else ``scorer_(best_estimator_, X, y)`` (several metrics: the
        ``refit`` one's, or the estimator's own score with a callable ``refit``); a
        probability score (``neg_log_loss``, ``neg_brier_score``, ``roc_auc_ovr``, ...) is
        taken of the search's own ``predict_proba``."""
        estimator = self._check_refit("score")
        if self.scoring is None:
            return estimator.score(X, y)
        if isinstance(self.scorer_, dict):
            if callable(self.refit):
                return estimator.score(X, y)
            return self.scorer_[self.refit](estimator, X, y)
        if self.scoring in PROBABILITY_SCORES or scorer_response(self.scoring) == \
                "predict_proba":  # the search's calibrated probabilities
            return self.scorer_(self, X, y)
        return self.scorer_(estimator, X, y)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "cv_results_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        estimator = self.estimator
        if isinstance(estimator, str) and estimator in ESTIMATORS:
            estimator = ESTIMATORS[estimator]()
        if isinstance(estimator, Pipeline):
            estimator = estimator.steps[-1][1]
        if estimator is not None and hasattr(estimator, "__sklearn_tags__"):
            tags.estimator_type = estimator.__sklearn_tags__().estimator_type
        return tags


def _record_input(search, X) -> None:
    """``n_features_in_`` and, for a DataFrame with string column names,
    ``feature_names_in_`` (as GridSearchCV has them), without converting X."""
    validate_data(search, X, skip_check_array=True, reset=True)


def _settings(base, X, search_params):
    """Kernel settings of the candidates, each with its lam values, and each candidate's
    (setting key, lam)."""
    fixed = base.get_params()
    groups: dict[tuple, list[float]] = defaultdict(list)
    settings: dict[tuple, dict] = {}
    keys = []
    for params in search_params:
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
    return [settings[k] for k in order], [groups[k] for k in order], order, keys


def _grid_kernels(param_grid, prefix: str, base) -> list[str]:
    """The kernels a search's grid names (``<prefix>kernel`` values), else the estimator's."""
    grids = param_grid if isinstance(param_grid, list) else [param_grid or {}]
    kernels = [stand_in_kernel(k) for grid in grids for k in grid.get(f"{prefix}kernel", [])]
    return kernels or [base.kernel]


def _screen_strategy(screen, n_samples: int, method) -> str:
    """``screen="auto"``: ``"off"`` for methods that evaluate a kernel setting's every lam
    at once (spectral, closed-form) or a feature space, ``"halving"`` from 200 rows, else
    ``"coarse"`` (``kernelcv select``'s rule); other values as given."""
    if screen != "auto":
        return screen
    if isinstance(method, Spectral | ClosedForm | FeatureSpace):
        return "off"
    return "halving" if n_samples >= 200 else "coarse"


def _shown_at(key, regulariser, n_samples, params, lam) -> dict:
    """A widened candidate's parameters as shown: ``params`` (a candidate of the same
    kernel setting) with its regularisation ``key`` set to ``lam`` in the estimator's own
    terms (:func:`lam_as`)."""
    return {**params, key: lam_as(regulariser, lam, n_samples)}


def _add_widened(result, order, keys, params, search_params, lams, prefix="",
                 regulariser="lam") -> None:
    """Put the reserve candidates the search evaluated (a default grid widened toward
    large C) among the default grid's candidates, each setting's lam values ascending as
    in the grid: ``keys``, ``params``, ``search_params`` and ``lams`` change in place."""
    known = set(keys)
    rows = list(zip(keys, params, search_params, lams, strict=True))
    for candidate in result.candidates:
        key = (order[candidate["setting"]], float(candidate["lam"]))
        if key not in known:
            gamma = dict(key[0]).get("gamma")
            entry = {"lam": key[1]} if gamma is None else {"gamma": gamma, "lam": key[1]}
            shown = {**({} if gamma is None else {f"{prefix}gamma": gamma}),
                     f"{prefix}{regulariser}": lam_as(regulariser, key[1], result.n_samples)}
            rows.append((key, shown, entry, key[1]))
    setting_position = {setting: i for i, setting in enumerate(order)}
    rows.sort(key=lambda row: (setting_position[row[0][0]], row[0][1]))
    keys[:], params[:], search_params[:], lams[:] = (list(part) for part in zip(*rows,
                                                                                strict=True))


def _screened_out(result) -> dict:
    """The record of a candidate that screening did not evaluate (NaN in cv_results_,
    status ``"screened out"``)."""
    return {"score": None, "cv_error": None, "exact_error": None, "fold_errors": None,
            "fold_sizes": None, "seconds": 0.0, "method": result.method, "order_used": None,
            "n_folds": result.folds, "status": "screened out", "degenerate": False}


def _machine_values(estimator, X):
    """The (n, m) one-vs-one machines' values of a fitted estimator or Pipeline."""
    if isinstance(estimator, Pipeline):
        X = estimator[:-1].transform(X) if len(estimator.steps) > 1 else X
        estimator = estimator.steps[-1][1]
    return estimator.machine_values(X)


def _moved(owner: str, names) -> Exception:
    """The error for keyword names that are not parameters: ``folds`` (the former alias of
    ``cv``) or an option moved into an object in 0.2 (:func:`moved_error`)."""
    rest = [name for name in names if name != "folds"]
    error = moved_error(owner, rest) if rest else None
    if "folds" not in names or isinstance(error, TypeError):
        return error
    text = f"{owner}(folds=...): the alias folds went in kernelcv 0.2; write cv=..."
    return KernelCVError(text if error is None else f"{text}; and {error}")
