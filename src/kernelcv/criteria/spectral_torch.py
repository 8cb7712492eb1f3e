"""The spectral engine's dense linear algebra on torch (a CPU or a GPU).

:class:`~kernelcv.criteria.spectral.SpectralCV` does the same work in numpy; with a torch
:class:`~kernelcv.devices.Device` it hands this module the parts whose cost grows with
n^2 or n^3: the eigendecomposition of K, the batched MM steps of every (problem, lam,
fold) column (two products with the eigenbasis per step, the loss's first derivative on
the device) and the fold-out values ``K_{j,R} alpha_R``, for every machine (krr and
lssvm too, see :func:`~kernelcv.criteria.spectral.spectral_evaluations`). The few columns
the Newton solver finishes, the flat-intercept rule and the bookkeeping stay in numpy. Every tensor
is float64 (see :mod:`kernelcv.devices`), so the two paths agree to rounding: the tests
compare them to 1e-8.

Cost as in :mod:`.spectral`: one ``eigh`` (O(n^3)), ``4 n r C`` flops per MM step; memory
on the device: K, its eigenvectors and ~6 n x C arrays.
"""

from __future__ import annotations

import numpy as np

from ..devices import Device
from ..machines.losses import (
    HuberHingeLoss,
    HuberInsensitiveLoss,
    SquaredHingeLoss,
    SquareLoss,
)
from ..machines.weights import WeightedLoss, unweighted


class TorchBasis:
    """K and its eigenbasis on a torch device, and the engine's steps on it.

    Parameters
    ----------
    K : (n, n) numpy Gram matrix.
    device : a torch :class:`~kernelcv.devices.Device`.
    fit_intercept : an unregularised intercept b.
    """

    def __init__(self, K, device: Device, fit_intercept: bool):
        import torch  # the optional extra (kernelcv.devices checked it is there)

        self.torch = torch
        self.device = device.torch_device()
        self.fit_intercept = bool(fit_intercept)
        self.K = torch.as_tensor(np.ascontiguousarray(K), dtype=torch.float64,
                                 device=self.device)
        n = self.K.shape[0]
        eigenvalues, Q = torch.linalg.eigh(self.K)
        top = float(eigenvalues[-1]) if n else 0.0
        keep = eigenvalues > n * np.finfo(np.float64).eps * max(top, 0.0)
        self.s = torch.flip(eigenvalues[keep], dims=(0,)).contiguous()
        self.Q = torch.flip(Q[:, keep], dims=(1,)).contiguous()
        self.u = self.Q.T @ torch.ones(n, dtype=torch.float64, device=self.device)
        self.n = n

    def tensor(self, array):
        """A numpy array on the device (float64, or as it is for bool/int arrays)."""
        array = np.asarray(array)
        dtype = self.torch.float64 if array.dtype.kind == "f" else None
        return self.torch.as_tensor(array, dtype=dtype, device=self.device)

    @staticmethod
    def numpy(tensor) -> np.ndarray:
        return tensor.detach().cpu().numpy()

    def ridge_solve(self, Z, rho):
        """f and b of the LS-SVM ``(K + rho I) alpha + b 1 = z`` for each column of the
        tensor Z (:meth:`SpectralCV._ridge_solve`'s formulas)."""
        torch = self.torch
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
            b = torch.zeros(Z.shape[1], dtype=torch.float64, device=self.device)
        Z_hat = Z_hat * (self.s[:, None] * w)
        return self.Q @ Z_hat + b[None, :], b

    def iterate(self, F, Y, held_out, rho_all, loss, M, steps, tol, max_steps):
        """Accelerated MM steps of every column of ``F`` (numpy, changed in place) until
        each stops moving (:meth:`SpectralCV._iterate`'s rule); ``Y`` (n, C) the targets
        of each column, ``held_out`` (n, C) its held-out rows, ``steps`` (C,) counted in
        place. Returns the columns still moving after ``max_steps``."""
        torch = self.torch
        derivative = first_derivative(loss, self.tensor(Y), self)
        mask = self.tensor(held_out)
        rho = self.tensor(rho_all)
        V = self.tensor(F)
        Fc = V.clone()
        momentum = torch.ones(F.shape[1], dtype=torch.float64, device=self.device)
        counts = torch.zeros(F.shape[1], dtype=torch.int64, device=self.device)
        active = torch.arange(F.shape[1], device=self.device)
        for _ in range(max_steps):
            if active.numel() == 0:
                break
            V_old = V[:, active]
            g = derivative(active, V_old).masked_fill(mask[:, active], 0.0)
            F_new, _b = self.ridge_solve(V_old - g / M, rho[active])
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
        F[:] = self.numpy(Fc)
        steps += self.numpy(counts)
        return self.numpy(active).astype(np.intp)

    def fold_values(self, rows, coefficients) -> np.ndarray:
        """``K[rows] @ coefficients`` (numpy in and out), the product on the device."""
        index = self.torch.as_tensor(np.asarray(rows), device=self.device)
        return self.numpy(self.K[index] @ self.tensor(coefficients))


def first_derivative(loss, Y, basis: TorchBasis):
    """``derivative(columns, V)``: the loss's first derivative ``loss'(y, v)`` on the
    device for the given columns of the targets ``Y`` (a tensor), as the numpy
    ``loss.derivatives(...)[0]`` (times the class and sample weights of a
    :class:`~kernelcv.machines.weights.WeightedLoss`)."""
    torch = basis.torch
    base = unweighted(loss)
    weights = None
    if isinstance(loss, WeightedLoss):
        weights = basis.tensor(loss.weights(basis.numpy(Y)))

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
