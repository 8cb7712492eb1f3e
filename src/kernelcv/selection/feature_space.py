"""The random-feature CV method (``method="rff"``): its options, its task and its notes.

:class:`FeatureSpace` ranks (gamma, lam) by exact t-fold CV of a linear machine on D random
features (Feng & Liao), in memory O(n D) and time linear in n, then (``refine``) walks the
grid by exact refit CV of the final kernel machine (:mod:`kernelcv.selection.refine`).
The checks run before any work; the notes are attached to the search result: a choice on
the edge of the grid, D > n, and the Nystroem landmarks' x-only leak across folds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from .._threads import blas_threads_for
from ..criteria.random_features import LOSSES, c_to_lam, lam_to_c, paper_cs, paper_gammas, path_cv
from ..exceptions import KernelCVError
from ..features import (
    MAPS,
    FeatureMap,
    check_feature_memory,
    check_finite_features,
    check_n_features,
)
from ..machines import Machine
from .methods import CVMethod
from .refine import REFINE_MAX_EVALS, check_refine, check_refine_memory

# Machines a random-feature search supports, with their default loss in feature space.
FEATURE_LOSSES = {"svm": "squared_hinge", "l2svm": "squared_hinge", "lssvm": "square",
                  "krr": "square"}

def edge_notes(candidates, best_index, features):
    """A warning when the random-feature choice lies on the edge of the grid.

    At the smallest gamma the feature-space CV is suspect (D features cannot resolve
    narrow kernels, so a nearly linear model wins): the note says so, unless the choice
    was confirmed by exact refit CV (status ``refined``), where only the grid is to blame.
    """
    best = candidates[best_index]
    gammas = [c["gamma"] for c in candidates]
    lams = [c["lam"] for c in candidates]
    edges = []
    if best["gamma"] in (min(gammas), max(gammas)) and len(set(gammas)) > 1:
        edges.append("gamma")
    if best["lam"] in (min(lams), max(lams)) and len(set(lams)) > 1:
        edges.append("C")
    if not edges:
        return []
    note = f"the chosen {' and '.join(edges)} lie(s) on the edge of the grid"
    if (best["gamma"] == min(gammas) and len(set(gammas)) > 1
            and best.get("status") != "refined"):
        return [f"{note}: with D = {features} features a nearly linear model (smallest "
                "gamma) often wins because the features cannot resolve narrower kernels; "
                "try more features (e.g. --features 300 --feature-loss square) before "
                "trusting it"]
    checked = (" (by the exact refit CV of the refinement)"
               if best.get("status") == "refined" else "")
    return [f"{note}{checked}; consider extending the grid (the exact SVC fit at a large C "
            "can be slow)"]


def feature_notes(features: int, feature_map: str, n: int) -> list[str]:
    """Notes on the feature space: D > n, and Nystroem's x-only leak across folds."""
    notes = []
    D = features
    if D > n:
        notes.append(f"D = {D} features > n = {n} samples: the feature space saves nothing over "
                     "the exact kernel (O(n D^2) work, D x D matrices); use fewer features "
                     "or an exact method")
    if feature_map == "nystroem":
        notes.append("the Nystroem landmarks were drawn from all rows, held-out folds "
                     "included (their inputs x, never their labels, shape the features), "
                     "so the CV errors can be slightly optimistic")
    return notes


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
    check_n_features(features)
    if feature_map not in MAPS:
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
    features : D (default 30).
    feature_map : ``"rff"`` (random Fourier features) or ``"nystroem"``.
    feature_loss : loss of the linear machine (default: ``"squared_hinge"`` for
        svm/l2svm, ``"square"`` for krr/lssvm; ``"hinge"`` runs LIBLINEAR's L1-loss SVM).
    feature_seed : seed of the feature draw (default: the fold seed when it is an
        integer, else 0).
    refine, refine_evals : the exact local refinement after the grid ("auto", True or
        False; at most ``refine_evals`` exact refit CVs).

    Notes
    -----
    Default grid: Feng & Liao's gamma = 2^-15, 2^-13..2^9 and C = 2^-5, 2^-3..2^15
    (lam = 1 / (2 n C)). Cost per gamma: O(n D) for the features plus the loss's path
    (``square``: O(n D^2 + t D^3) for every lam; ``squared_hinge``: a few Newton steps
    of O(n D^2) per fold and lam); the O(nnz(X) D) base product is computed once.
    """

    name: ClassVar[str] = "rff"
    exact: ClassVar[bool] = False
    refines: ClassVar[bool] = True
    kernel_grid: ClassVar[bool] = False

    features: int = 30
    feature_map: str = "rff"
    feature_loss: str | None = None
    feature_seed: int | None = None
    refine: object = "auto"
    refine_evals: int = REFINE_MAX_EVALS
    # Resolved by bind(): the machine, its task and the feature-space intercept.
    machine_name: str = ""
    classifier: bool = True
    feature_intercept: bool = False

    def bind(self, machine: Machine, kernel: str, random_state=None):
        """Check the options against the machine; resolve the loss, seed and intercept.

        The feature-space model has a free intercept exactly when the machine has one
        (krr never; lssvm, l2svm, svm and svr by default), so the linear model, the
        refinement's refits and the final kernel machine agree. The svm's refinement and
        final fit are LIBSVM's ``SVC``, which always has an intercept: svm without one is
        refused.
        """
        check_feature_options(machine.name, kernel, None, self.features, self.feature_map,
                              self.feature_loss)
        if self.scoring is not None:
            raise KernelCVError("method 'rff' ranks by the feature-space CV error; a "
                                "scoring needs held-out values: use method 'bif' or 'exact'")
        if machine.is_multiclass:
            raise KernelCVError("method 'rff' is binary for now; for more than two classes "
                                "use method 'bif' (or 'closed-form' for krr/lssvm)")
        if machine.name == "svm" and not machine.fit_intercept:
            raise KernelCVError("method 'rff' refines and fits svm as LIBSVM's SVC, which "
                                "always has an intercept: drop fit_intercept=False "
                                "(--no-intercept) or use machine 'l2svm'")
        check_refine(self.refine, self.refine_evals)
        seed = self.feature_seed
        if seed is None:
            seed = (int(random_state) if isinstance(random_state, int | np.integer)
                    and not isinstance(random_state, bool) else 0)
        return replace(
            self, features=int(self.features),
            feature_loss=self.feature_loss or FEATURE_LOSSES[machine.name],
            feature_seed=int(seed), refine_evals=int(self.refine_evals),
            machine_name=machine.name, classifier=machine.is_classifier,
            feature_intercept=bool(machine.fit_intercept))

    def default_gammas(self):
        return paper_gammas()

    def default_lams(self, n_samples):
        return [float(v) for v in c_to_lam(paper_cs(), n_samples)]

    def check_memory(self, X, n_samples, workers, memory_budget=None):
        estimate = check_feature_memory(X, self.features, self.feature_map, workers,
                                        memory_budget)
        check_refine_memory(self.refine, self.machine_name, n_samples, memory_budget)
        return estimate

    def config_entries(self, machine):
        return {**super().config_entries(machine), "features": self.features,
                "feature_map": self.feature_map, "feature_loss": self.feature_loss,
                "feature_seed": self.feature_seed,
                "feature_intercept": self.feature_intercept, "classifier": self.classifier,
                "refine": self.refine, "refine_evals": self.refine_evals}

    def prepare(self, X, memory_budget=None, parallel=False):
        """The fitted map and its gamma-free base, once for every gamma (O(nnz(X) D)).

        The Nystroem landmarks are drawn from all rows, held-out folds included: the
        fold-out models see the inputs x (never the labels) of some held-out points
        through the map, an x-only leak that the report notes. Raises
        :class:`KernelCVError` when the base is not finite (data too large for the map).
        """
        with _feature_threads(X.shape[0], self.features):
            fmap = FeatureMap(self.feature_map, self.features, self.feature_seed).fit(X)
            return {"map": fmap, "base": fmap.base(X)}

    def fitted_map(self, data):
        return data["map"]

    def score_label(self, folds, metric):
        return f"{folds}-fold CV {metric} ({self.feature_map}, D = {self.features})"

    def evaluate_setting(self, data, y, fold_ids, setting, lams, *, machine,
                         random_state=None, memory_budget=None):
        """All lam of one gamma in feature space (see :mod:`kernelcv.criteria.random_features`).

        Records are shaped like the kernel methods' (``order_used`` None, never
        degenerate) plus ``C = 1 / (2 n lam)``.
        """
        tic = time.perf_counter()
        n = y.shape[0]
        with _feature_threads(n, self.features):
            Z = data["map"].features(data["base"], setting["gamma"])
            check_finite_features(Z, f"the features at gamma = {setting['gamma']:g}")
            path = path_cv(Z, y, fold_ids, lams, self.feature_loss,
                           classifier=self.classifier, random_state=self.feature_seed,
                           fit_intercept=self.feature_intercept)
        setup = (time.perf_counter() - tic - path.seconds.sum()) / len(lams)
        records = []
        for k, lam in enumerate(lams):
            errors = path.fold_errors[k]
            records.append({
                "lam": float(lam), "C": float(lam_to_c(lam, n)),
                "score": float(path.cv_error[k]), "cv_error": float(path.cv_error[k]),
                "fold_errors": [float(e) for e in errors],
                "fold_sizes": [int(c) for c in path.fold_sizes],
                "n_folds": int(path.fold_sizes.size), "order_used": None,
                "degenerate": False, "heldout_ratio": None,
                "seconds": float(path.seconds[k] + setup),
                "fit_seconds": float(path.seconds[k]),
                "notes": list(path.notes) if k == 0 else [],
            })
        return records

    def report_entries(self, config):
        return {"feature_space": {k: config[k] for k in (
            "features", "feature_map", "feature_loss", "feature_seed", "feature_intercept",
            "memory_estimate", "refine", "refine_evals")}}

    def notes(self, candidates, best_index, n_samples):
        return [*edge_notes(candidates, best_index, self.features),
                *feature_notes(self.features, self.feature_map, n_samples)]
