"""Smooth leave-one-out error of an LS-SVM and its exact gradient (Bo, Wang & Jiao, SLOO-MPS).

Model. With labels ``y`` in {-1, +1}, kernel matrix ``K`` and ``H = K + I/C``, the LS-SVM
with bias solves the bordered system ``[[H, 1], [1', 0]] [alpha; b] = [y; 0]``. Write
``A`` for that bordered matrix and ``P`` for the top-left n x n block of ``A^-1``::

    P = H^-1 - v v' / s,   v = H^-1 1,   s = 1' v,   alpha = P y,   b = v' y / s.

(Without the bias, ``P = H^-1``.) Leave-one-out. Removing sample k deletes row and column
k of ``A`` (the bias row stays); by the block-inverse formula the held-out residual is

    r_k = y_k - f^(-k)(x_k) = alpha_k / P_kk,     so   yhat_k = y_k - alpha_k / P_kk

is the exact leave-one-out decision value, for every k at once (tested against n refits).

Smooth LOO error (the paper's tanh smoothing of the step function, width ``gamma_s``)::

    E = (1/n) sum_k (1 - y_k tanh(gamma_s * yhat_k)) / 2.

Gradient. ``dA^-1 = -A^-1 dA A^-1`` with ``dA`` nonzero only in the H block gives
``dP = -P dH P`` and ``dalpha = -P dH alpha``. With ``c_k = dE/dr_k =
gamma_s y_k (1 - tanh^2(gamma_s yhat_k)) / (2n)``, ``u = c / diag(P)`` and
``w = c alpha / diag(P)^2``::

    dE = <G, dH>,    G = P diag(w) P - sym((P u) alpha'),

so after the O(n^3) work shared by all parameters (one Cholesky, ``P``, ``P diag(w) P``)
each parameter costs one O(n^2) inner product ``<G, dH/dtheta>`` (O(n^2 d) for all the
ARD widths together, without forming the per-feature matrices).

Kernels (the paper's mixture): ``H = sum_i theta_i^2 K_i + I/C`` with Gaussian
``exp(-||x - x'||^2 / beta)`` and Laplace ``exp(-||x - x'||_1 / beta)`` components (the
L1 norm as in :mod:`kernelcv.kernels`), beta in {0.01, 0.1, 1, 10, 100} by default;
optionally an ARD Gaussian ``theta^2 exp(-sum_d (x_d - x'_d)^2 / beta_d)`` and a free ``C``.
The optimiser works on logarithms (``log theta_i^2``, ``log(1/beta_d)``, ``log C``), so
every parameter stays positive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
from sklearn.metrics.pairwise import euclidean_distances, manhattan_distances

from ..exceptions import KernelCVError
from ..memory import check_dense_budget

KERNEL_NAMES = ("gaussian", "laplace")
PAPER_BETAS = (0.01, 0.1, 1.0, 10.0, 100.0)
DEFAULT_GAMMA_S = 10.0


@dataclass(frozen=True)
class MixtureSpec:
    """Which kernels are tuned: fixed-width components, an optional ARD Gaussian, free C.

    The parameter vector (all logarithms) is ``[log theta_i^2 for each component (the ARD
    component last), log(1/beta_d) for each feature if ard, log C if tune_C]``.
    """

    kernels: tuple = ("gaussian", "laplace")
    betas: tuple = PAPER_BETAS
    ard: bool = False
    tune_C: bool = False

    @property
    def components(self) -> list[tuple[str, float]]:
        """The fixed-width components as ``(name, beta)``, kernels outer, betas inner."""
        return [(name, float(beta)) for name in self.kernels for beta in self.betas]

    @property
    def n_weights(self) -> int:
        return len(self.components) + int(self.ard)

    def n_params(self, n_features: int) -> int:
        return self.n_weights + (n_features if self.ard else 0) + int(self.tune_C)

    def weight_names(self) -> list[str]:
        names = [f"{name}(beta={beta:g})" for name, beta in self.components]
        return names + (["ard_gaussian"] if self.ard else [])


def make_spec(kernels=("gaussian", "laplace"), betas=PAPER_BETAS, ard=False,
              tune_C=False) -> MixtureSpec:
    """Validate the kernel choice; raises :class:`KernelCVError` with the remedy."""
    if isinstance(kernels, str):
        kernels = [k.strip() for k in kernels.split(",") if k.strip()]
    kernels = tuple(str(k).lower() for k in kernels)
    unknown = [k for k in kernels if k not in KERNEL_NAMES]
    if unknown:
        raise KernelCVError(f"unknown kernel {unknown[0]!r} for tuning; choose from "
                            f"{', '.join(KERNEL_NAMES)}")
    if len(set(kernels)) != len(kernels):
        raise KernelCVError(f"kernel list {', '.join(kernels)} names a kernel twice")
    try:
        betas = tuple(float(b) for b in np.atleast_1d(np.asarray(betas, dtype=float)))
    except (TypeError, ValueError):
        raise KernelCVError(f"betas must be positive numbers, got {betas!r}") from None
    if kernels and not betas:
        raise KernelCVError("the list of betas is empty; give at least one width > 0")
    bad = [b for b in betas if not (np.isfinite(b) and b > 0)]
    if bad:
        raise KernelCVError(f"kernel widths beta must be positive and finite, got {bad[0]!r}")
    if not kernels and not ard:
        raise KernelCVError("the kernel list is empty; give gaussian and/or laplace "
                            "(or ask for the ARD Gaussian)")
    return MixtureSpec(kernels=kernels, betas=betas, ard=bool(ard), tune_C=bool(tune_C))


def distance_bases(spec: MixtureSpec, X, Y=None) -> dict:
    """The parameter-free matrices the spec needs: squared Euclidean and/or L1 distances.

    O(n m d). Diagonal zeros are exact when ``Y`` is None.
    """
    out = {}
    if "gaussian" in spec.kernels:
        D = euclidean_distances(X, Y, squared=True)
        if Y is None:
            np.fill_diagonal(D, 0.0)
        out["sq"] = D
    if "laplace" in spec.kernels:
        out["l1"] = manhattan_distances(X, Y)
    return out


def component_grams(spec: MixtureSpec, bases: dict, columns=None) -> np.ndarray:
    """Stack of the fixed-width Gram matrices, shape (n_components, n, m); O(n m) each."""
    mats = []
    for name, beta in spec.components:
        D = bases["sq" if name == "gaussian" else "l1"]
        if columns is not None:
            D = D[:, columns]
        mats.append(np.exp(-D / beta))
    if not mats:
        shape = next(iter(bases.values())).shape if bases else (0, 0)
        return np.empty((0, shape[0], shape[1] if columns is None else len(columns)))
    return np.stack(mats)


def ard_gram(X, Y, inv_widths) -> np.ndarray:
    """``exp(-sum_d (x_d - y_d)^2 / beta_d)`` with ``inv_widths = 1/beta``; O(n m d)."""
    scale = np.sqrt(inv_widths)
    D = euclidean_distances(X * scale, None if Y is None else Y * scale, squared=True)
    if Y is None:
        np.fill_diagonal(D, 0.0)
    return np.exp(-np.maximum(D, 0.0))


def split_params(spec: MixtureSpec, params, n_features: int, C: float):
    """``(weights theta^2, ARD inverse widths or None, C)`` from the log-parameter vector."""
    params = np.asarray(params, dtype=np.float64)
    m = spec.n_weights
    weights = np.exp(params[:m])
    inv_widths = np.exp(params[m:m + n_features]) if spec.ard else None
    if spec.tune_C:
        C = float(np.exp(params[-1]))
    return weights, inv_widths, C


@dataclass
class LOOFit:
    """An LS-SVM fit with its leave-one-out quantities."""

    alpha: np.ndarray
    b: float
    P: np.ndarray       # top-left block of the inverse bordered matrix
    loo: np.ndarray     # exact leave-one-out decision values yhat_k


def loo_fit(H, y, fit_intercept=True) -> LOOFit:
    """Solve the LS-SVM on ``H = K + I/C`` and return the exact LOO decision values.

    ``yhat_k = y_k - alpha_k / P_kk`` (module docstring). Cost O(n^3): one Cholesky and
    the explicit inverse. Raises ``numpy.linalg.LinAlgError`` if ``H`` is not positive
    definite.
    """
    n = y.shape[0]
    factor = la.cho_factor(H, lower=True, check_finite=True)
    P = la.cho_solve(factor, np.eye(n), check_finite=False)
    P = 0.5 * (P + P.T)
    b = 0.0
    if fit_intercept:
        v = P.sum(axis=1)
        s = v.sum()
        P -= np.outer(v, v) / s
        b = float(v @ y / s)
    alpha = P @ y
    diag = np.diag(P).copy()
    return LOOFit(alpha=alpha, b=b, P=P, loo=y - alpha / diag)


def smooth_loo_value(loo, y, gamma_s=DEFAULT_GAMMA_S) -> float:
    """``(1/n) sum (1 - y tanh(gamma_s yhat)) / 2``."""
    return float(np.mean(0.5 * (1.0 - y * np.tanh(gamma_s * loo))))


def loo_error(loo, y) -> float:
    """Exact LOO 0-1 error; a zero decision value counts as +1."""
    return float(np.mean(np.where(loo >= 0, 1.0, -1.0) != y))


def smooth_loo_dH(fit: LOOFit, y, gamma_s=DEFAULT_GAMMA_S):
    """Smooth LOO error and its derivative ``G = dE/dH`` (symmetric n x n); O(n^3)."""
    n = y.shape[0]
    t = np.tanh(gamma_s * fit.loo)
    value = float(np.mean(0.5 * (1.0 - y * t)))
    c = gamma_s * y * (1.0 - t * t) / (2.0 * n)
    diag = np.diag(fit.P)
    u = c / diag
    w = c * fit.alpha / diag**2
    G = (fit.P * w) @ fit.P
    Pu = fit.P @ u
    G -= 0.5 * (np.outer(Pu, fit.alpha) + np.outer(fit.alpha, Pu))
    return value, G


class SmoothLOOObjective:
    """The smooth LOO error of one binary LS-SVM as a function of the log-parameters.

    Parameters
    ----------
    X : ndarray (n, d), dense float64 (needed by the ARD kernel only).
    y : ndarray (n,) of -1/+1.
    spec : MixtureSpec
    C : float > 0, regularisation (the starting value when ``spec.tune_C``).
    gamma_s : float > 0, tanh sharpness.
    fit_intercept : bool, LS-SVM bias term (the paper's model has one).
    bases : dict, optional precomputed :func:`distance_bases` of X (shared between the
        binary problems of a multiclass fit).
    memory_budget : see :mod:`kernelcv.memory`.

    Notes
    -----
    Memory: the component Gram matrices are computed once (``n_components`` n x n), plus
    about 8 n x n work arrays. Time per evaluation: O(m n^2) to form H, O(n^3) for the
    Cholesky, the inverse and ``P diag(w) P``, then O(n^2) per weight, O(n^2 d) for all
    ARD widths.
    """

    def __init__(self, X, y, spec: MixtureSpec, C=1.0, gamma_s=DEFAULT_GAMMA_S,
                 fit_intercept=True, bases=None, memory_budget=None):
        n = y.shape[0]
        check_dense_budget(n, n, len(spec.components) + 8 + 2 * int(spec.ard),
                           "smooth leave-one-out tuning", memory_budget)
        self.X = X
        self.y = np.asarray(y, dtype=np.float64)
        self.spec = spec
        self.C = float(C)
        self.gamma_s = float(gamma_s)
        self.fit_intercept = bool(fit_intercept)
        if bases is None:
            bases = distance_bases(spec, X)
        self.Ks = component_grams(spec, bases)
        self.n_features = X.shape[1]
        self.n_evaluations = 0

    def initial_params(self) -> np.ndarray:
        """The starting point: every theta = 1, ARD widths beta_d = d, the given C."""
        start = np.zeros(self.spec.n_params(self.n_features))
        if self.spec.ard:
            m = self.spec.n_weights
            start[m:m + self.n_features] = -np.log(self.n_features)
        if self.spec.tune_C:
            start[-1] = np.log(self.C)
        return start

    def kernel(self, params):
        """``(K_mix, weights, inv_widths, C, K_ard)`` at ``params``; O(m n^2 + n^2 d)."""
        weights, inv_widths, C = split_params(self.spec, params, self.n_features, self.C)
        m_fixed = len(self.spec.components)
        n = self.y.shape[0]
        K = np.tensordot(weights[:m_fixed], self.Ks, axes=1) if m_fixed else np.zeros((n, n))
        K_ard = None
        if self.spec.ard:
            K_ard = ard_gram(self.X, None, inv_widths)
            K = K + weights[-1] * K_ard
        return K, weights, inv_widths, C, K_ard

    def fit(self, params) -> LOOFit:
        """The LS-SVM fit and its exact LOO values at ``params``."""
        K, _, _, C, _ = self.kernel(params)
        K[np.diag_indices_from(K)] += 1.0 / C
        return loo_fit(K, self.y, self.fit_intercept)

    def __call__(self, params):
        """``(E, dE/dparams)``: the smooth LOO error and its exact gradient."""
        self.n_evaluations += 1
        K, weights, inv_widths, C, K_ard = self.kernel(params)
        K[np.diag_indices_from(K)] += 1.0 / C
        fit = loo_fit(K, self.y, self.fit_intercept)
        value, G = smooth_loo_dH(fit, self.y, self.gamma_s)
        grad = np.empty(self.spec.n_params(self.n_features))
        m_fixed = len(self.spec.components)
        if m_fixed:
            grad[:m_fixed] = weights[:m_fixed] * (self.Ks.reshape(m_fixed, -1) @ G.ravel())
        if self.spec.ard:
            d = self.n_features
            grad[m_fixed] = weights[-1] * np.vdot(K_ard, G)
            M = G * K_ard  # dH/dlog(s_d) = -w s_d D_d o K_ard
            row = M.sum(axis=1)
            X = self.X
            quad = np.einsum("id,id->d", X, M @ X)
            sums = 2.0 * (X * X).T @ row - 2.0 * quad
            grad[m_fixed + 1:m_fixed + 1 + d] = -weights[-1] * inv_widths * sums
        if self.spec.tune_C:
            grad[-1] = -np.trace(G) / C
        return value, grad

    def describe(self, params) -> dict:
        """Readable parameters: theta per component, ARD widths beta_d, C."""
        weights, inv_widths, C = split_params(self.spec, params, self.n_features, self.C)
        out = {"theta": dict(zip(self.spec.weight_names(), np.sqrt(weights).tolist(),
                                 strict=True)), "C": C}
        if self.spec.ard:
            out["ard_widths"] = (1.0 / inv_widths).tolist()
        return out
