"""Feature scaling of the command line (``--scale``), fitted on the training data only.

``standard`` divides each feature by its standard deviation after subtracting its mean;
``minmax`` maps each feature's training range to [0, 1]. Both are computed on the
training data and applied unchanged to the test data (LIBSVM's ``svm-scale`` workflow,
in one step). Sparse data are only divided, never shifted (a shift would make them dense):
for the rbf and laplace kernels a shift changes no distance, so the kernels are the same;
for poly and linear it does, and the report says ``centred: false``. A constant feature
keeps scale 1. Cost: O(nnz(X)).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import KernelCVError

SCALINGS = ("none", "standard", "minmax")


def fit_scaling(X, kind: str) -> dict | None:
    """The shift and scale of ``kind`` on training data ``X`` (None for ``"none"``)."""
    if kind not in SCALINGS:
        raise KernelCVError(f"--scale must be one of {', '.join(SCALINGS)}, got {kind!r}")
    if kind == "none":
        return None
    sparse = sp.issparse(X)
    if kind == "standard":
        # Moments of X / m with m the column's largest |x|, times m: features near 1e200
        # would overflow their squares (a warning, then an infinite scale) otherwise.
        m = _column_magnitudes(X)
        if sparse:
            Z = X.multiply(1.0 / m).tocsr()
            mean = np.asarray(Z.mean(axis=0)).ravel()
            squares = np.asarray(Z.multiply(Z).mean(axis=0)).ravel()
            scale = np.sqrt(np.maximum(squares - mean**2, 0.0))
        else:
            mean, scale = (X / m).mean(axis=0), (X / m).std(axis=0)
        shift, scale = mean * m, scale * m
    else:
        low = np.asarray(X.min(axis=0).toarray()).ravel() if sparse else X.min(axis=0)
        high = np.asarray(X.max(axis=0).toarray()).ravel() if sparse else X.max(axis=0)
        shift, scale = low, high - low
    if not np.all(np.isfinite(scale)):
        raise KernelCVError("--scale minmax: a feature's range overflows float64 (its values "
                            "span more than 1.8e308); use --scale standard")
    scale = np.where(scale > 0, scale, 1.0)
    return {"kind": kind, "centred": not sparse,
            "shift": None if sparse else np.asarray(shift, dtype=np.float64),
            "scale": np.asarray(scale, dtype=np.float64)}


def _column_magnitudes(X) -> np.ndarray:
    """Each column's largest ``|x|`` (1 for an all-zero column)."""
    if sp.issparse(X):
        m = np.asarray(abs(X).max(axis=0).toarray()).ravel()
    else:
        m = np.max(np.abs(X), axis=0) if X.shape[0] else np.ones(X.shape[1])
    return np.where(m > 0, m, 1.0)


def apply_scaling(X, scaling: dict | None):
    """``(X - shift) / scale`` (sparse: ``X / scale``); X unchanged for None."""
    if scaling is None or X is None:
        return X
    if sp.issparse(X):
        return sp.csr_matrix(X.multiply(1.0 / scaling["scale"]))
    shifted = X if scaling["shift"] is None else X - scaling["shift"]
    return shifted / scaling["scale"]


def scaling_entry(scaling: dict | None) -> dict | None:
    """The report's ``scaling`` entry: the kind and whether the data were centred."""
    if scaling is None:
        return None
    return {"kind": scaling["kind"], "centred": scaling["centred"]}
