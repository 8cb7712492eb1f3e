"""The relevance-object machine: secondary features from kernels or similarity matrices.

Each training object ``omega_i`` and each similarity ``S_k`` (a kernel or a user-supplied
precomputed matrix) gives one secondary feature ``x_{j,(k,i)} = S_k(omega_j, omega_i)``.
The elastic-net SVM on these ``m n`` columns keeps only relevant (kernel, object) pairs,
so ``mu`` selects relevant training objects and kernels at once; the hypothetical
criterion picks ``mu`` without refits. Cost: O(n^2 m) memory for the secondary features,
plus the elastic-net path on an ``n x m n`` design.

A new object ``omega`` needs only its similarities to the retained (kernel, object)
pairs: ``f(omega) = sum_{(k, i) in F} a_{k,i} S_k(omega, omega_i) + b``
(:func:`relevant_features`, O(|F| d) per object for the built-in kernels).
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel

from ..exceptions import KernelCVError
from ..kernels import KERNELS, Kernel
from ..memory import check_dense_budget
from .elastic_net import enet_svm_path
from .ridge import DEFAULT_NOISE_VAR

__all__ = [
    "kernel_similarities",
    "make_kernels",
    "rbf_similarities",
    "relevance_path",
    "relevant_features",
    "secondary_features",
]


def _kernel_from_spec(spec, n_features):
    """One kernel from ``Kernel``, a dict or a string ``name[:value]`` (see make_kernels)."""
    if isinstance(spec, Kernel):
        return spec
    default_gamma = 1.0 / max(1, n_features)
    if isinstance(spec, dict):
        params = dict(spec)
        name = params.pop("kernel", params.pop("name", "rbf"))
        unknown = set(params) - {"gamma", "degree", "coef0"}
        if unknown:
            raise KernelCVError(f"unknown kernel parameter(s) {sorted(unknown)}; use gamma, "
                                "degree and coef0")
        params.setdefault("gamma", default_gamma)
        if name not in KERNELS:
            raise KernelCVError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
        return Kernel(name=name, **params)
    if not isinstance(spec, str):
        raise KernelCVError(f"a kernel is a name such as 'rbf:0.5', a dict or a Kernel, "
                            f"got {spec!r}")
    name, _, value = spec.partition(":")
    name = name.strip()
    if name not in KERNELS:
        raise KernelCVError(f"unknown kernel {name!r} in {spec!r}; choose one of "
                            f"{', '.join(KERNELS)} (e.g. 'rbf:0.5', 'poly:2')")
    try:
        number = float(value) if value.strip() else None
    except ValueError:
        raise KernelCVError(f"cannot read the number in kernel {spec!r}") from None
    if name == "poly":
        degree = 2 if number is None else number
        if degree != int(degree) or degree < 1:
            raise KernelCVError(f"the polynomial degree in {spec!r} must be a whole number >= 1")
        return Kernel(name="poly", gamma=default_gamma, degree=int(degree), coef0=1.0)
    return Kernel(name=name, gamma=default_gamma if number is None else number)


def make_kernels(specs, n_features):
    """Kernels from specifications, for secondary features.

    Parameters
    ----------
    specs : sequence of kernels, each a :class:`kernelcv.kernels.Kernel`, a dict
        (``{"kernel": "rbf", "gamma": 0.5}``) or a string: ``"rbf:GAMMA"``,
        ``"laplace:GAMMA"``, ``"poly:DEGREE"`` (``gamma = 1 / n_features``, ``coef0 = 1``),
        ``"linear"``; ``"rbf"`` / ``"laplace"`` alone use ``gamma = 1 / n_features``.
    n_features : int, the dimension of the objects (for the default ``gamma``).

    Returns
    -------
    list of :class:`kernelcv.kernels.Kernel`.
    """
    if isinstance(specs, (str, Kernel, dict)):
        specs = [specs]
    kernels = [_kernel_from_spec(spec, n_features) for spec in specs]
    if not kernels:
        raise KernelCVError("give at least one kernel")
    return kernels


def kernel_similarities(X, kernels, reference=None):
    """``[S_k(X, reference) for k]`` (``reference`` defaults to ``X``); O(m n r d)."""
    return [kernel(X, X if reference is None else reference) for kernel in kernels]


def relevant_features(X, kernels, reference, pairs):
    """Secondary features of new objects on the retained ``(kernel, object)`` pairs only.

    Parameters
    ----------
    X : (n_new, d) new objects; kernels : list of Kernel; reference : (r, d) training objects
    pairs : sequence of ``(k, i)``: kernel ``k``, training object ``i``

    Returns
    -------
    (n_new, len(pairs)) array with column ``c`` equal to ``S_k(X, reference[i])`` for
    ``pairs[c] = (k, i)``. Cost O(n_new |pairs| d): one kernel block per kernel used.
    """
    out = np.zeros((X.shape[0], len(pairs)))
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    for k in np.unique(pairs[:, 0]):
        cols = np.flatnonzero(pairs[:, 0] == k)
        out[:, cols] = kernels[k](X, reference[pairs[cols, 1]])
    return out


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
                   n_mus=12, memory_budget=None):
    """:func:`~kernelcv.hypothetical.elastic_net.enet_svm_path` on secondary features.

    ``similarities`` are square training matrices (``n x n``). The result adds
    ``best_objects`` (sorted relevant training objects) and ``best_kernels`` (kernels with
    at least one relevant object) for the criterion's ``mu``. The ``n x m n`` design is
    checked against ``memory_budget`` (see :mod:`kernelcv.memory`) before it is built.
    """
    if isinstance(similarities, np.ndarray) and similarities.ndim == 2:
        similarities = [similarities]
    shapes = [np.shape(S) for S in similarities]
    if shapes and all(len(shape) == 2 for shape in shapes):
        # stacked features, their centred copy and the design with the bias column
        check_dense_budget(shapes[0][0], sum(shape[1] for shape in shapes), 3,
                           "the relevance machine's secondary features", memory_budget)
    features, index = secondary_features(similarities)
    n = np.shape(y)[0]
    rows, cols = features.shape[0], features.shape[1] // len({k for k, _ in index})
    if rows != n or cols != n:
        raise KernelCVError(f"training similarity matrices must be {n} x {n} for {n} "
                            f"labels, got {rows} x {cols}")
    out = enet_svm_path(features, y, mus=mus, C=C, noise_var=noise_var, loo=loo,
                        n_mus=n_mus)
    pairs = [index[j] for j in out["best_relevant"]]
    out["best_objects"] = sorted({i for _, i in pairs})
    out["best_kernels"] = sorted({k for k, _ in pairs})
    return out
