"""The notes a random-feature search (``method="rff"``) attaches to its result.

A choice on the edge of the grid (:func:`edge_notes`), the feature space itself (D > n,
Nystroem's x-only leak across folds: :func:`feature_notes`) and the adaptive feature
count's outcome (:func:`growth_notes`).
"""

from __future__ import annotations


def edge_notes(candidates, best_index, features,
               more="e.g. --features 300 --feature-loss square"):
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
    features = best.get("features", features)
    note = f"the chosen {' and '.join(edges)} lie(s) on the edge of the grid"
    if (best["gamma"] == min(gammas) and len(set(gammas)) > 1
            and best.get("status") != "refined"):
        return [f"{note}: with D = {features} features a nearly linear model (smallest "
                "gamma) often wins because the features cannot resolve narrower kernels; "
                f"try more features ({more}) before trusting it"]
    checked = (" (by the exact refit CV of the refinement)"
               if best.get("status") == "refined" else "")
    return [f"{note}{checked}; consider extending the grid (the exact kernel fit at a large C "
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


def growth_notes(growth) -> list[str]:
    """The printed note of the adaptive feature count: the D used and why."""
    if growth is None:
        return []
    why = {"stable": "the choice was stable over the last two sizes",
           "time": "the time budget of the growth ran out",
           "memory": "the next size exceeds the memory budget",
           "max_features": "the largest size allowed (max_features) was reached",
           "n": "D reached the number of samples"}[growth.stop]
    sizes = ", ".join(str(step["features"]) for step in growth.path)
    return [f"adaptive feature count: D = {growth.features} ({why}; sizes {sizes})"]
