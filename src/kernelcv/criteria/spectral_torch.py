"""The spectral engine's dense linear algebra on torch (a CPU or a GPU).

:class:`~kernelcv.criteria.spectral.SpectralCV` does the same work in numpy
(:mod:`.ridge_factors`); with a torch :class:`~kernelcv.devices.Device` it hands this
module the parts whose cost grows with n^2 or n^3: K itself (:func:`device_gram` forms it
there from the rows' distances), its factorization (:class:`TorchEigen`, or
:class:`TorchCholesky` per ridge), the batched MM steps of every (problem, lam, fold)
column (:func:`iterate`: one ridge solve per step, the loss's first derivative on the
device) and the fold-out values ``K_{j,R} alpha_R`` (:func:`fold_values`), for every
machine (krr and lssvm too, see :func:`~kernelcv.criteria.spectral.spectral_evaluations`).
The few columns the Newton solver finishes, the flat-intercept rule and the bookkeeping
stay in numpy. The formulas are :mod:`.ridge_factors`'s.

Precision: the factorization and the steps run in the device's dtype
(:attr:`~kernelcv.devices.Device.dtype`): float64 by default, so the two paths agree to
rounding (the tests compare them to 1e-8); float32 only where
:func:`~kernelcv.criteria.spectral.float32_is_safe` allows it.

Memory on the device: K, its eigenvectors (or one Cholesky factor) and ~6 n x C arrays.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import KernelCVError
from ..machines.losses import (
    HuberHingeLoss,
    HuberInsensitiveLoss,
    SquaredHingeLoss,
    SquareLoss,
)
from ..machines.weights import WeightedLoss, unweighted
from .ridge_factors import not_definite


def _torch():
    import torch  # the optional extra (kernelcv.devices checked it is there)

    return torch


def to_device(array, device, dtype=None):
    """A numpy array (or a tensor) on ``device`` (a :class:`~kernelcv.devices.Device`),
    floats as ``dtype`` (default float64), bool/int arrays as they are."""
    torch = _torch()
    if isinstance(array, torch.Tensor):
        floating = array.is_floating_point()
    else:
        array = np.asarray(array)
        if not array.flags.writeable:  # torch warns on read-only buffers
            array = array.copy()
        floating = array.dtype.kind == "f"
    kind = (dtype or torch.float64) if floating else None
    return torch.as_tensor(array, dtype=kind, device=device.torch_device())


def torch_dtype(dtype):
    """torch's dtype of a numpy float dtype."""
    torch = _torch()
    return torch.float32 if np.dtype(dtype) == np.float32 else torch.float64


def to_numpy(tensor) -> np.ndarray:
    """A tensor as a float64 (or bool/int) numpy array on the host."""
    array = tensor.detach().cpu().numpy()
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def index_on(K, rows):
    """An index array on the device of the tensor K."""
    return _torch().as_tensor(np.array(rows), device=K.device)  # a copy: torch writes


def device_gram(base, kernel, device):
    """The Gram matrix of ``kernel`` (:class:`~kernelcv.kernels.Kernel`) from its base
    matrix (squared distances, L1 distances or inner products, numpy or a tensor), formed
    on ``device`` in float64: ``exp(-gamma D)`` for rbf and laplace, ``(gamma D + c)^d``
    for poly, D for linear. O(n^2) on the device; the base matrix crosses once."""
    D = to_device(base, device)
    if kernel.name in ("rbf", "laplace"):
        return (D * -kernel.gamma).exp_()
    K = (D * kernel.gamma + kernel.coef0) ** int(kernel.degree) if kernel.name == "poly" \
        else D.clone()
    if not bool(_torch().isfinite(K).all()):
        raise KernelCVError(f"the {kernel.name} kernel's values overflow float64: X is not "
                            "on a reasonable scale for this kernel; standardize X")
    return K


class TorchEigen:
    """``K = Q diag(s) Q'`` on the device (``torch.linalg.eigh``): the ridge systems of
    every rho from one eigendecomposition (:class:`.ridge_factors.EigenFactor`'s
    formulas and rounding cut), in K's dtype or ``dtype`` (float32: a single-precision
    copy of K is factored).

    Parameters
    ----------
    K : (n, n) tensor on the device.
    fit_intercept : an unregularised intercept b.
    """

    shared_rho = False

    def __init__(self, K, fit_intercept: bool, dtype=None):
        torch = _torch()
        self.torch = torch
        n = K.shape[0]
        if dtype is not None and dtype != K.dtype:
            K = K.to(dtype)  # a single-precision copy
        eigenvalues, Q = torch.linalg.eigh(K)
        top = float(eigenvalues[-1]) if n else 0.0
        keep = eigenvalues > n * float(torch.finfo(K.dtype).eps) * max(top, 0.0)
        self.s = torch.flip(eigenvalues[keep], dims=(0,)).contiguous()
        self.Q = torch.flip(Q[:, keep], dims=(1,)).contiguous()
        self.u = self.Q.T @ torch.ones(n, dtype=K.dtype, device=K.device)
        self.n = n
        self.fit_intercept = bool(fit_intercept)
        self.dtype, self.device = K.dtype, K.device

    def ridge_solve(self, Z, rho):
        """f and b of ``(K + rho I) alpha + b 1 = z`` for each column of the tensor Z."""
        Z_hat = self.Q.T @ Z
        w = 1.0 / (self.s[:, None] + rho[None, :])
        if self.fit_intercept:
            u = self.u[:, None]
            tail_z = Z.sum(dim=0) - (u * Z_hat).sum(dim=0)
            tail_u = self.n - float(self.u @ self.u)
            b = (((u * w) * Z_hat).sum(dim=0) + tail_z / rho) / (
                (u * u * w).sum(dim=0) + tail_u / rho)
            Z_hat = Z_hat - b[None, :] * u
        else:
            b = self.torch.zeros(Z.shape[1], dtype=Z.dtype, device=Z.device)
        Z_hat = Z_hat * (self.s[:, None] * w)
        return self.Q @ Z_hat + b[None, :], b


class TorchCholesky:
    """``K + rho I = L L'`` on the device for one rho (:class:`.ridge_factors.
    CholeskyFactor`'s formulas). K's diagonal is shifted in place for the factorization
    and restored exactly, so the device holds K and L only (2 n^2); ``dtype`` float32
    factors a single-precision copy (K, its copy and L: 2 n^2 in float64 units).

    Raises
    ------
    KernelCVError
        When ``K + rho I`` is not numerically positive definite.
    """

    shared_rho = True

    def __init__(self, K, rho: float, fit_intercept: bool, dtype=None):
        torch = _torch()
        self.torch = torch
        if dtype is not None and dtype != K.dtype:
            K = K.to(dtype)  # a single-precision copy, shifted freely
            K.diagonal().add_(rho)
            self.L, info = torch.linalg.cholesky_ex(K)
        else:
            diagonal = K.diagonal()
            saved = diagonal.clone()
            diagonal += rho
            try:
                self.L, info = torch.linalg.cholesky_ex(K)
            finally:
                diagonal.copy_(saved)
        if int(info) != 0:
            raise not_definite(rho)
        self.rho = float(rho)
        self.fit_intercept = bool(fit_intercept)
        self.dtype, self.device = K.dtype, K.device
        if self.fit_intercept:
            one = torch.ones(K.shape[0], 1, dtype=K.dtype, device=K.device)
            self.a_one = torch.cholesky_solve(one, self.L)[:, 0]
            self.one_a_one = float(self.a_one.sum())

    def ridge_solve(self, Z, rho):
        """f and b for each column of the tensor Z (every column's rho is this one's)."""
        A = self.torch.cholesky_solve(Z, self.L)
        if self.fit_intercept:
            b = A.sum(dim=0) / self.one_a_one
            A = A - self.a_one[:, None] * b[None, :]
        else:
            b = self.torch.zeros(Z.shape[1], dtype=Z.dtype, device=Z.device)
        return Z - self.rho * A, b


def iterate(factor, F, Y, held_out, rho, loss, M, steps, tol, max_steps):
    """Accelerated MM steps of every column of ``F`` (numpy, changed in place) until each
    stops moving (:meth:`~kernelcv.criteria.spectral.SpectralCV._iterate`'s rule), the
    ridge systems solved by ``factor`` (:class:`TorchEigen` or :class:`TorchCholesky`).

    ``Y`` (n, C) the targets of each column, ``held_out`` (n, C) its held-out rows,
    ``rho`` and ``M`` (C,) each column's ridge and majorizer curvature, ``steps`` (C,)
    counted in place. Returns the columns still moving after ``max_steps``.
    """
    torch = _torch()
    dtype, device = factor.dtype, factor.device

    def tensor(array):
        array = np.asarray(array)
        kind = dtype if array.dtype.kind == "f" else None
        return torch.as_tensor(array, dtype=kind, device=device)

    derivative = first_derivative(loss, Y, tensor)
    mask = tensor(held_out)
    rho, M = tensor(rho), tensor(M)
    V = tensor(F)
    Fc = V.clone()
    momentum = torch.ones(F.shape[1], dtype=dtype, device=device)
    counts = torch.zeros(F.shape[1], dtype=torch.int64, device=device)
    active = torch.arange(F.shape[1], device=device)
    for _ in range(max_steps):
        if active.numel() == 0:
            break
        V_old = V[:, active]
        g = derivative(active, V_old).masked_fill(mask[:, active], 0.0)
        F_new, _b = factor.ridge_solve(V_old - g / M[active][None, :], rho[active])
        F_old = Fc[:, active]
        step_change = (F_new - F_old).abs().amax(dim=0)
        mapping = (F_new - V_old).abs().amax(dim=0)
        scale = torch.clamp(F_new.abs().amax(dim=0), min=1.0)
        restart = ((V_old - F_new) * (F_new - F_old)).sum(dim=0) > 0
        t_old = momentum[active]
        t_new = 0.5 * (1.0 + torch.sqrt(1.0 + 4.0 * t_old * t_old))
        beta = torch.where(restart, torch.zeros_like(t_old), (t_old - 1.0) / t_new)
        V[:, active] = F_new + beta[None, :] * (F_new - F_old)
        Fc[:, active] = F_new
        momentum[active] = torch.where(restart, torch.ones_like(t_new), t_new)
        counts[active] += 1
        done = torch.maximum(step_change, mapping) <= tol * scale
        active = active[~done]
    F[:] = to_numpy(Fc)
    steps += to_numpy(counts)
    return to_numpy(active).astype(np.intp)


def ridge_intercepts(factor, Z, rho) -> np.ndarray:
    """The intercepts b of the ridge systems of the numpy columns Z (``factor``'s)."""
    torch = _torch()
    _f, b = factor.ridge_solve(
        torch.as_tensor(Z, dtype=factor.dtype, device=factor.device),
        torch.as_tensor(rho, dtype=factor.dtype, device=factor.device))
    return to_numpy(b)


def fold_values(K, rows, coefficients) -> np.ndarray:
    """``K[rows] @ coefficients`` (numpy in and out), the product on K's device."""
    torch = _torch()
    index = index_on(K, rows)
    C = torch.as_tensor(np.asarray(coefficients, dtype=np.float64), dtype=K.dtype,
                        device=K.device)
    return to_numpy(K[index] @ C)


def first_derivative(loss, Y, tensor):
    """``derivative(columns, V)``: the loss's first derivative ``loss'(y, v)`` on the
    device for the given columns of the targets ``Y`` (numpy, put on the device by
    ``tensor``), as the numpy ``loss.derivatives(...)[0]`` (times the class and sample
    weights of a :class:`~kernelcv.machines.weights.WeightedLoss`)."""
    torch = _torch()
    base = unweighted(loss)
    weights = None
    if isinstance(loss, WeightedLoss):
        weights = tensor(loss.weights(np.asarray(Y)))
    Y = tensor(Y)

    if isinstance(base, SquareLoss):
        def raw(y, v):
            return 2.0 * (v - y)
    elif isinstance(base, SquaredHingeLoss):
        def raw(y, v):
            return -2.0 * y * torch.clamp(1.0 - y * v, min=0.0)
    elif isinstance(base, HuberHingeLoss):
        width = float(base.width)

        def raw(y, v):
            return -y * _smooth_plus_slope(torch, 1.0 - y * v, width)
    elif isinstance(base, HuberInsensitiveLoss):
        width, epsilon = float(base.width), float(base.epsilon)

        def raw(y, v):
            r = v - y
            return (_smooth_plus_slope(torch, r - epsilon, width)
                    - _smooth_plus_slope(torch, -r - epsilon, width))
    else:
        raise TypeError(f"no torch derivative of the loss {type(base).__name__}")

    def derivative(columns, V):
        g = raw(Y[:, columns], V)
        return g if weights is None else g * weights[:, columns]

    return derivative


def _smooth_plus_slope(torch, z, width):
    """``psi'(z) = clip((z + w) / (2 w), 0, 1)`` of the Huber-smoothed ``max(0, z)``."""
    return torch.clamp((z + width) / (2.0 * width), min=0.0, max=1.0)
