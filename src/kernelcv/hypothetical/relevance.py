"""The relevance-object machine: secondary features from kernels or similarity matrices.

Each training object ``omega_i`` and each similarity ``S_k`` (a kernel or a user-supplied
precomputed matrix) gives one secondary feature ``x_{j,(k,i)} = S_k(omega_j, omega_i)``.
The elastic-net SVM on these ``m n`` columns keeps only relevant (kernel, object) pairs,
so ``mu`` selects relevant training objects and kernels at once; the hypothetical
criterion picks ``mu`` without refits. Cost: O(n^2 m) memory for the secondary features,
plus the elastic-net path on an ``n x m n`` design.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel

from ..exceptions import KernelCVError
from .elastic_net import enet_svm_path
from .ridge import DEFAULT_NOISE_VAR

__all__ = ["rbf_similarities", "relevance_path", "secondary_features"]


def secondary_features(similarities, n_reference=None):
    """Stack similarity matrices into secondary features, validating them.

    Parameters
    ----------
    similarities : array (n, r) or a sequence of such arrays (one per kernel)
        Row ``j`` holds the similarities of object ``j`` to the ``r`` reference (training)
        objects.
    n_reference : int, optional
        Required number of columns ``r`` (e.g. the training size, for test matrices).

    Returns
    -------
    features : (n, m r) float64 array; index : list of ``(kernel, object)`` per column.
    """
    if isinstance(similarities, np.ndarray) and similarities.ndim == 2:
        similarities = [similarities]
    mats = []
    for k, S in enumerate(similarities):
        S = np.asarray(S, dtype=np.float64)
        if S.ndim != 2:
            raise KernelCVError(f"similarity matrix {k} must be 2-D, got {S.ndim}-D")
        if not np.all(np.isfinite(S)):
            raise KernelCVError(f"similarity matrix {k} contains NaN or infinite values")
        if mats and S.shape != mats[0].shape:
            raise KernelCVError(f"similarity matrix {k} has shape {S.shape} but matrix 0 "
                                f"has {mats[0].shape}; all must match")
        mats.append(S)
    if not mats:
        raise KernelCVError("give at least one similarity matrix")
    if n_reference is not None and mats[0].shape[1] != n_reference:
        raise KernelCVError(f"similarity matrices must have {n_reference} columns (one per "
                            f"reference object), got {mats[0].shape[1]}")
    r = mats[0].shape[1]
    index = [(k, i) for k in range(len(mats)) for i in range(r)]
    return np.hstack(mats), index


def rbf_similarities(X, gammas, reference=None):
    """Gaussian similarities ``exp(-gamma ||x - x_i||^2)`` to ``reference`` for each gamma."""
    X = np.asarray(X, dtype=np.float64)
    reference = X if reference is None else np.asarray(reference, dtype=np.float64)
    return [rbf_kernel(X, reference, gamma=float(g)) for g in gammas]


def relevance_path(similarities, y, mus=None, C=1.0, noise_var=DEFAULT_NOISE_VAR, loo=False,
                   n_mus=12):
    """:func:`~kernelcv.hypothetical.elastic_net.enet_svm_path` on secondary features.

    ``similarities`` are square training matrices (``n x n``). The result adds
    ``best_objects`` (sorted relevant training objects) and ``best_kernels`` (kernels with
    at least one relevant object) for the criterion's ``mu``.
    """
    features, index = secondary_features(similarities)
    n = np.shape(y)[0]
    if features.shape[0] != n or features.shape[1] % n:
        raise KernelCVError(f"training similarity matrices must be {n} x {n} for {n} "
                            f"labels, got {features.shape[0]} rows")
    out = enet_svm_path(features, y, mus=mus, C=C, noise_var=noise_var, loo=loo,
                        n_mus=n_mus)
    pairs = [index[j] for j in out["best_relevant"]]
    out["best_objects"] = sorted({i for _, i in pairs})
    out["best_kernels"] = sorted({k for k, _ in pairs})
    return out
