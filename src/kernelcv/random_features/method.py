"""The random-feature CV method (``method="rff"``): its options and its task.

:class:`FeatureSpace` ranks (gamma, lam) by exact t-fold CV of a linear machine on D random
features (Feng & Liao), in memory O(n D) and time linear in n, then (``refine``) walks the
grid by exact refit CV of the final kernel machine (:mod:`kernelcv.random_features.refine`).
With ``features="auto"`` (the default) D grows until the choice is stable
(:mod:`kernelcv.random_features.growth`). With more than two classes every binary
machine of the scheme is a linear machine on the same features
(:mod:`kernelcv.random_features.multiclass`).
The checks run before any work; the notes attached to the search result (a choice on the
edge of the grid, D > n, the Nystroem landmarks' x-only leak across folds, the growth)
are worded in :mod:`kernelcv.random_features.notes`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from .._threads import blas_threads_for
from ..exceptions import KernelCVError, MemoryBudgetError
from ..features import (
    MAPS,
    RFF,
    FeatureMap,
    check_feature_memory,
    check_finite_features,
    check_n_features,
    map_memory,
)
from ..machines import Machine
from ..memory import format_bytes
from ..memory import memory_budget as memory_budget_bytes
from ..reading.rowchunks import ArraySource, chunk_rows_for, is_row_source, row_bytes
from ..selection.methods import CVMethod
from ..selection.screening import SCREENING_REFUSED
from .dask_rows import dask_rows
from .final import FINALS
from .growth import (
    MAX_FEATURES,
    START_FEATURES,
    TIME_BUDGET,
    TOLERANCE,
    grow_features,
    path_records,
    sums_memory,
)
from .linear_cv import LOSSES, c_to_lam, paper_cs, paper_gammas, path_cv
from .multiclass import multiclass_path_cv
from .notes import edge_notes, feature_notes, growth_notes
from .refine import (
    REFINE_MAX_EVALS,
    check_refine,
    check_refine_memory,
    refine_for_final,
    refine_search,
    refine_wanted,
    refit_name,
)
from .rowmap import LocalRows

# Machines a random-feature search supports, with their default loss in feature space
# for a fixed D (the paper's protocol); the adaptive count uses the square loss.
FEATURE_LOSSES = {"svm": "squared_hinge", "l2svm": "squared_hinge", "lssvm": "square",
                  "krr": "square"}
# Bytes per streamed row held besides the chunks (measured with tracemalloc: 49).
STREAMED_ROW_BYTES = 56
# The default maps: Nystroem for the adaptive count, RFF (the paper's) for a fixed D.
ADAPTIVE_MAP, FIXED_MAP = "nystroem", "rff"

def check_growth_options(max_features, min_features, feature_time, feature_tol):
    """Options of the adaptive feature count, checked before any work."""
    check_n_features(max_features)
    check_n_features(min_features)
    for name, value in (("feature_time", feature_time), ("feature_tol", feature_tol)):
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                or not np.isfinite(value) or value < 0 or (name == "feature_time"
                                                           and value == 0):
            kind = "positive" if name == "feature_time" else "non-negative"
            raise KernelCVError(f"{name} must be a {kind} number, got {value!r}")


def check_feature_options(machine, kernel, folds, features, feature_map, feature_loss):
    """Options of the random-feature search, checked before any work."""
    if machine not in FEATURE_LOSSES:
        raise KernelCVError(f"method 'rff' supports the machines {', '.join(FEATURE_LOSSES)}, "
                            f"not {machine!r}")
    if kernel != "rbf":
        raise KernelCVError(f"method 'rff' approximates the Gaussian (rbf) kernel, not "
                            f"{kernel!r}; use --kernel rbf or another method")
    if isinstance(folds, str):
        raise KernelCVError("folds='auto' chooses BIF orders; give method 'rff' a number "
                            "of folds (the paper uses 5 or 10)")
    if features != "auto":
        check_n_features(features)
    if feature_map is not None and feature_map not in MAPS:
        raise KernelCVError(f"unknown feature map {feature_map!r}; choose one of "
                            f"{', '.join(MAPS)}")
    if feature_loss is not None and feature_loss not in LOSSES:
        raise KernelCVError(f"unknown feature-space loss {feature_loss!r}; choose one of "
                            f"{', '.join(LOSSES)}")
    if feature_loss in ("hinge", "squared_hinge") and machine in ("krr", "lssvm"):
        raise KernelCVError(f"the {feature_loss} loss is a classification loss; "
                            f"{machine} uses feature_loss='square'")


# Below this many features the D x D products are too small to share between BLAS
# threads; idle spinning threads made a 400-sample search ~20x slower (measured).
_THREADED_FEATURES = 300


def _feature_threads(n, D):
    return blas_threads_for(n if D >= _THREADED_FEATURES else 0)


@dataclass(frozen=True)
class FeatureSpace(CVMethod):
    """Exact t-fold CV of a linear machine on D random features, then exact refinement.

    Parameters
    ----------
    features : D, or ``"auto"`` (default): grow D from ``min_features`` (64) by doubling
        up to ``max_features`` (2048) until the choice is stable within ``feature_tol``
        standard errors of the CV error (1), within ``feature_time`` seconds (60) and
        the memory budget (:mod:`kernelcv.random_features.growth`).
    feature_map : ``"rff"`` (random Fourier features) or ``"nystroem"`` (default:
        nystroem with ``features="auto"``, rff with a fixed D, the paper's protocol).
    feature_loss : loss of the linear machine (default: ``"square"`` with
        ``features="auto"``; with a fixed D ``"squared_hinge"`` for svm/l2svm, ``"square"``
        for krr/lssvm; ``"hinge"`` runs LIBLINEAR's L1-loss SVM).
    feature_seed : seed of the feature draw (default: the fold seed when it is an
        integer, else 0).
    refine, refine_evals : the exact local refinement after the grid ("auto", True or
        False; at most ``refine_evals`` exact refit CVs).
    final : the model a front door fits after the search (``kernelcv select``'s test
        error, ``KernelSearchCV``'s ``best_estimator_``): ``"kernel"`` (one exact fit at
        the chosen gamma and ``C = 1/(2 n lam)``), ``"linear"`` (the linear model in
        feature space, with ``final_features`` features, default twice the search's D;
        it turns ``refine="auto"`` off and refuses ``refine=True``) or ``"auto"``
        (kernel up to ``final_kernel_limit`` samples, default 100,000, and within the
        memory budget; linear otherwise, with a note).

    Notes
    -----
    Default grid: Feng & Liao's gamma = 2^-15, 2^-13..2^9 and C = 2^-5, 2^-3..2^15
    (lam = 1 / (2 n C)). Cost per gamma: O(n D) for the features plus the loss's path
    (``square``: O(n D^2 + t D^3) for every lam; ``squared_hinge``: a few Newton steps
    of O(n D^2) per fold and lam); the O(nnz(X) D) base product is computed once. With
    more than two classes every binary machine of the scheme is cross-validated on the
    same features (k (k - 1) / 2 or k of them; :mod:`kernelcv.random_features.multiclass`)
    and the multiclass error ranks.
    """

    name: ClassVar[str] = "rff"
    exact: ClassVar[bool] = False
    refines: ClassVar[bool] = True
    kernel_grid: ClassVar[bool] = False

    features: int | str = "auto"
    feature_map: str | None = None
    feature_loss: str | None = None
    feature_seed: int | None = None
    refine: object = "auto"
    refine_evals: int = REFINE_MAX_EVALS
    max_features: int = MAX_FEATURES
    min_features: int = START_FEATURES
    feature_time: float = TIME_BUDGET
    feature_tol: float = TOLERANCE
    final: str = "auto"
    final_features: int | None = None
    final_kernel_limit: int | None = None
    # Resolved by the adaptive growth: the D used, and the growth itself (path, map).
    features_used: int | None = None
    growth: object = field(default=None, compare=False, repr=False)
    # Resolved by bind(): the machine, its task and the feature-space intercept.
    machine_name: str = ""
    refit_machine: str = ""
    classifier: bool = True
    feature_intercept: bool = False
    # more than two classes: their number and the scheme ("ovo"/"ovr"); else 2 and None
    n_classes: int = 2
    strategy: str | None = None

    def __post_init__(self):
        if self.final not in FINALS:
            raise KernelCVError(f"final must be one of {', '.join(FINALS)}, got "
                                f"{self.final!r}")
        for name in ("final_features", "final_kernel_limit"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, int | np.integer) or value < 1):
                raise KernelCVError(f"{name} must be a positive integer, got {value!r}")

    def bind(self, machine: Machine, kernel: str, random_state=None):
        """Check the options against the machine; resolve the loss, seed and intercept.

        The feature-space model has a free intercept exactly when the machine has one
        (krr never; lssvm, l2svm, svm and svr by default), so the linear model, the
        refinement's refits and the final kernel machine agree. The binary svm's
        refinement and final fit are LIBSVM's ``SVC``, which always has an intercept: svm
        without one is refused. With more than two classes every binary machine of the
        scheme is a linear machine in feature space
        (:mod:`kernelcv.random_features.multiclass`), and the refinement and final fit
        are the kernelcv multiclass machine (svm: the Huber SVMs of the other methods).
        """
        if machine.class_weight is not None or machine.row_weighted:
            raise KernelCVError("method 'rff' has no class or sample weights: use method "
                                "'bif' (the default), 'spectral' or 'exact'")
        check_feature_options(machine.name, kernel, None, self.features, self.feature_map,
                              self.feature_loss)
        check_growth_options(self.max_features, self.min_features, self.feature_time,
                             self.feature_tol)
        if self.scoring is not None:
            raise KernelCVError("method 'rff' ranks by the feature-space CV error; a "
                                "scoring needs held-out values: use method 'bif' or 'exact'")
        if machine.name == "svm" and not machine.fit_intercept and not machine.is_multiclass:
            raise KernelCVError("method 'rff' refines and fits svm as LIBSVM's SVC, which "
                                "always has an intercept: drop fit_intercept=False "
                                "(--no-intercept) or use machine 'l2svm'")
        check_refine(self.refine, self.refine_evals)
        refine = refine_for_final(self.refine, self.final)
        seed = self.feature_seed
        if seed is None:
            seed = (int(random_state) if isinstance(random_state, int | np.integer)
                    and not isinstance(random_state, bool) else 0)
        adaptive = self.features == "auto"
        loss = self.feature_loss or ("square" if adaptive else FEATURE_LOSSES[machine.name])
        return replace(
            self, features="auto" if adaptive else int(self.features),
            feature_map=self.feature_map or (ADAPTIVE_MAP if adaptive else FIXED_MAP),
            feature_loss=loss, max_features=int(self.max_features),
            min_features=int(self.min_features), feature_time=float(self.feature_time),
            feature_tol=float(self.feature_tol),
            feature_seed=int(seed), refine=refine, refine_evals=int(self.refine_evals),
            machine_name=machine.name, refit_machine=refit_name(machine),
            classifier=machine.is_classifier, feature_intercept=bool(machine.fit_intercept),
            n_classes=machine.n_classes if machine.is_multiclass else 2,
            strategy=machine.multiclass if machine.is_multiclass else None)

    def default_gammas(self):
        return paper_gammas()

    def default_lams(self, n_samples):
        return [float(v) for v in c_to_lam(paper_cs(), n_samples)]

    def reserve_lams(self, n_samples):
        return []  # the paper's C grid, walked by the feature growth

    @property
    def adaptive(self) -> bool:
        """Whether D grows (``features="auto"``)."""
        return self.features == "auto"

    @property
    def is_multiclass(self) -> bool:
        """Whether the machines are a multiclass scheme (more than two classes)."""
        return self.strategy is not None

    @property
    def checkpointable(self) -> bool:
        return not self.adaptive

    def describe(self) -> str:
        if self.adaptive:
            return ("the adaptive feature count of method 'rff' (features='auto'), whose "
                    "grid changes with D: give a fixed number of features (--features D)")
        return super().describe()

    @property
    def n_features(self):
        """The D of the scores: the fixed D, or the one the growth stopped at."""
        return self.features_used if self.adaptive else self.features

    def check_memory(self, X, n_samples, workers, memory_budget=None):
        """The estimate of the search's peak memory, refused when over the budget.

        In memory with a fixed D: the n x D features (:func:`check_feature_memory`).
        With the sums (the square loss, or any loss on streamed rows): one chunk, the
        fold sums of one setting, the map's own storage (at the first size of the
        adaptive count), plus, for streamed rows, :data:`STREAMED_ROW_BYTES` per row (the
        targets as read and as +-1, the int64 fold ids and their temporaries) and the
        text block being parsed (:func:`~kernelcv.random_features.growth.sums_memory`).
        """
        streamed = is_row_source(X)
        D = min(self.min_features, n_samples) if self.adaptive else self.features
        if not streamed and (not self.adaptive or self.feature_loss != "square"
                             or self.is_multiclass):
            estimate = check_feature_memory(X, D, self.feature_map, workers, memory_budget)
        else:
            cells = 10 * (self.n_classes if self.is_multiclass else 1)  # (fold, class)
            estimate = sums_memory(D, cells, 1, chunk_rows_for(D, row_bytes(X)), row_bytes(X),
                                   map_memory(X, D, self.feature_map))
            if streamed:
                estimate += STREAMED_ROW_BYTES * n_samples + getattr(X, "parse_bytes", 0)
            limit = memory_budget_bytes(memory_budget)
            if estimate > limit:
                hint = ("use --feature-map nystroem (D landmark rows, not a d x D draw) or "
                        if self.feature_map == RFF else "")
                raise MemoryBudgetError(
                    f"the rff search needs about {format_bytes(estimate)} at D = {D} "
                    f"({'its first size' if self.adaptive else 'fixed'}), more than the "
                    f"memory budget {format_bytes(limit)}; {hint}raise the budget with "
                    "--memory-budget")
        check_refine_memory(self.refine, self.refit_machine, n_samples, memory_budget)
        return estimate

    def check_screening(self, screening):
        # the feature growth walks the grid itself, then the refinement walks it by exact
        # refits: neither follows a screened part of the grid
        if screening.enabled:
            raise KernelCVError(SCREENING_REFUSED)

    def refine_choice(self, candidates, best_index, run):
        """The exact refinement of the feature-space choice
        (:func:`~kernelcv.random_features.refine.refine_search`)."""
        return refine_search(run.X, run.y, run.fold_ids, candidates, best_index, run.machine,
                             run.average, self.refine, self.refine_evals,
                             run.execution.progress, workers=run.execution.workers,
                             memory_budget=run.execution.memory_budget)

    def edge_notes(self, edges, best, reasons):
        return []  # worded by notes(), with the feature-space grid's own ends

    def config_entries(self, machine):
        entries = {**super().config_entries(machine), "features": self.features,
                   "feature_map": self.feature_map, "feature_loss": self.feature_loss,
                   "feature_seed": self.feature_seed,
                   "feature_intercept": self.feature_intercept, "classifier": self.classifier,
                   "refine": self.refine, "refine_evals": self.refine_evals}
        if self.adaptive:  # only then: checkpoints of a fixed D keep their keys
            entries.update(max_features=self.max_features, min_features=self.min_features,
                           feature_time=self.feature_time, feature_tol=self.feature_tol)
        return entries

    def prepare(self, X, memory_budget=None, parallel=False):
        """The fitted map and its gamma-free base, once for every gamma (O(nnz(X) D)).

        The Nystroem landmarks are drawn from all rows, held-out folds included: the
        fold-out models see the inputs x (never the labels) of some held-out points
        through the map, an x-only leak that the report notes. Raises
        :class:`KernelCVError` when the base is not finite (data too large for the map).
        With ``features="auto"`` or streamed rows nothing is prepared: the growth draws
        its own map.
        """
        if self.adaptive or is_row_source(X):
            return {}
        with _feature_threads(X.shape[0], self.features):
            fmap = FeatureMap(self.feature_map, self.features, self.feature_seed).fit(X)
            return {"map": fmap, "base": fmap.base(X)}

    def search_grid(self, X, y, fold_ids, settings, setting_lams, shared, execution):
        """With ``features="auto"``, streamed rows (X a row source of
        :mod:`kernelcv.reading.rowchunks`) or a Dask cluster (``scheduler`` or backend "dask": the
        rows go to its workers by partitions, :mod:`kernelcv.random_features.dask_rows`): the
        growth of D, or one size (:func:`~kernelcv.random_features.growth.grow_features`);
        else None (the driver evaluates the grid on the features in memory)."""
        streamed = is_row_source(X)
        cluster = execution.scheduler is not None or execution.backend == "dask"
        if not (self.adaptive or streamed or cluster):
            return None
        notes = []
        if (streamed or cluster) and self.is_multiclass and self.feature_loss != "square":
            raise KernelCVError(f"with rows read in chunks or on a Dask cluster, more than "
                                f"two classes need feature_loss 'square' (its sums per fold "
                                f"and class), not {self.feature_loss!r}; or load the rows "
                                "in memory")
        if streamed or cluster:
            self._check_streamed(y.shape[0], notes, streamed)
        with _feature_threads(y.shape[0], self.max_features):
            if cluster:
                with dask_rows(execution.scheduler, X, y, fold_ids) as rows:
                    growth = grow_features(self, settings, setting_lams, rows, shared,
                                           execution)
            else:
                rows = LocalRows(X if streamed else ArraySource(X, y), y, fold_ids)
                growth = grow_features(self, settings, setting_lams, rows, shared,
                                       execution, None if streamed else X)
        method = replace(self, features_used=growth.features, growth=growth,
                         refine=False if streamed else self.refine)
        return growth.per_setting, growth.choice, method, [*growth.notes, *notes]

    def _check_streamed(self, n, notes, streamed=True):
        """What a search on streamed rows (or rows on a cluster) cannot do: LIBLINEAR's
        hinge, the exact refinement (both need the rows in memory)."""
        if self.feature_loss == "hinge":
            raise KernelCVError("the hinge loss runs LIBLINEAR on the features in memory; "
                                "with rows read in chunks or on a Dask cluster use "
                                "feature_loss 'square' or 'squared_hinge'")
        if not streamed:
            return
        if self.refine is True:
            raise KernelCVError("the exact refinement refits kernel machines on the rows in "
                                "memory; with rows read in chunks use refine 'auto' or off")
        if refine_wanted(self.refine, n):
            notes.append("not refined: the exact refinement needs the rows in memory, and "
                         "they were read in chunks")

    def fitted_map(self, data):
        if self.growth is not None:
            return self.growth.feature_map
        return data.get("map")

    def score_label(self, folds, metric):
        return f"{folds}-fold CV {metric} ({self.feature_map}, D = {self.n_features})"

    def evaluate_setting(self, data, y, fold_ids, setting, lams, *, machine,
                         random_state=None, memory_budget=None, warm_starts=None):
        """All lam of one gamma in feature space (see :mod:`kernelcv.random_features.linear_cv`).

        Records are shaped like the kernel methods' (``order_used`` None, never
        degenerate) plus ``C = 1 / (2 n lam)`` and ``features`` (D). ``warm_starts`` is
        not used (the feature-space path warm-starts along lam itself).
        """
        tic = time.perf_counter()
        n = y.shape[0]
        with _feature_threads(n, self.features):
            Z = data["map"].features(data["base"], setting["gamma"])
            check_finite_features(Z, f"the features at gamma = {setting['gamma']:g}")
            if self.is_multiclass:
                path = multiclass_path_cv(Z, y, fold_ids, lams, self.feature_loss,
                                          self.n_classes, self.strategy,
                                          random_state=self.feature_seed,
                                          fit_intercept=self.feature_intercept)
            else:
                path = path_cv(Z, y, fold_ids, lams, self.feature_loss,
                               classifier=self.classifier, random_state=self.feature_seed,
                               fit_intercept=self.feature_intercept)
        setup = (time.perf_counter() - tic - path.seconds.sum()) / len(lams)
        return path_records(path, lams, n, data["map"].n_features, setup)

    def report_entries(self, config):
        entry = {k: config[k] for k in (
            "features", "feature_map", "feature_loss", "feature_seed", "feature_intercept",
            "memory_estimate", "refine", "refine_evals")}
        growth = self.growth
        entry["adaptive"] = self.adaptive
        if self.adaptive:
            entry.update(features=self.n_features, max_features=self.max_features,
                         min_features=self.min_features, feature_time=self.feature_time,
                         feature_tol=self.feature_tol)
            if growth is not None:
                entry.update(path=growth.path, stop=growth.stop)
        return {"feature_space": entry}

    def notes(self, candidates, best_index, n_samples):
        D = self.n_features or self.max_features
        more = ("a larger --max-features or --feature-time" if self.adaptive
                else "e.g. --features 300 --feature-loss square")
        return [*edge_notes(candidates, best_index, D, more),
                *feature_notes(D, self.feature_map, n_samples),
                *growth_notes(self.growth if self.adaptive else None)]
