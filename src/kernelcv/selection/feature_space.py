"""Options and notes of a random-feature search (``method="rff"``).

The checks run before any work; the notes are attached to the search result: a choice on
the edge of the grid, D > n, and the Nystroem landmarks' x-only leak across folds.
"""

from __future__ import annotations

from ..criteria.random_features import LOSSES
from ..exceptions import KernelCVError
from ..features import MAPS, check_n_features

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


def feature_notes(config, n):
    """Notes on the feature space: D > n, and Nystroem's x-only leak across folds."""
    notes = []
    D = config["features"]
    if D > n:
        notes.append(f"D = {D} features > n = {n} samples: the feature space saves nothing over "
                     "the exact kernel (O(n D^2) work, D x D matrices); use fewer features "
                     "or an exact method")
    if config["feature_map"] == "nystroem":
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
