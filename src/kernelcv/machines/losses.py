"""Piecewise-quadratic losses of the kernel machines, as functions of the prediction f.

Each loss gives its value, first derivative ``g = d loss / d f`` and second derivative
``h = d^2 loss / d f^2``. All of them are piecewise quadratic, so ``h`` is piecewise
constant and a Newton step on a fixed set of pieces is exact; this is what the solver
(:mod:`kernelcv.machines.solver`) and the BIF series (:mod:`kernelcv.criteria.bif`) use.

=============  ======================================================  ===============
loss           value                                                    h where > 0
=============  ======================================================  ===============
square         ``(y - f)^2``                                            2
squared hinge  ``max(0, 1 - y f)^2``                                    2 (margin < 1)
Huber hinge    0 if m > 1 + w; ``(1 + w - m)^2 / (4 w)`` if |1 - m| <= w;  ``1 / (2 w)``
               ``1 - m`` if m < 1 - w  (margin ``m = y f``, width ``w``)
Huber eps-ins. with ``u = |y - f| - eps``: 0 if u < -w; ``(u + w)^2 / (4 w)``  ``1 / (2 w)``
               if |u| <= w; ``u`` if u > w
=============  ======================================================  ===============

The Huber losses tend to the hinge loss ``max(0, 1 - m)`` and to the epsilon-insensitive
loss ``max(0, |y - f| - eps)`` as the width ``w -> 0``; they differ from them by at most
``w / 4``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import KernelCVError


@dataclass(frozen=True)
class SquareLoss:
    """``(y - f)^2``: kernel ridge regression and the LS-SVM."""

    name = "square"

    def value(self, y, f):
        return (y - f) ** 2

    def derivatives(self, y, f):
        return 2.0 * (f - y), np.full_like(f, 2.0)


@dataclass(frozen=True)
class SquaredHingeLoss:
    """``max(0, 1 - y f)^2``: the L2-SVM (labels +-1)."""

    name = "squared_hinge"

    def value(self, y, f):
        return np.maximum(0.0, 1.0 - y * f) ** 2

    def derivatives(self, y, f):
        slack = np.maximum(0.0, 1.0 - y * f)
        return -2.0 * y * slack, np.where(slack > 0, 2.0, 0.0)


def smooth_plus(z, width):
    """Huber-smoothed ``max(0, z)`` and its first two derivatives.

    ``psi(z) = 0`` for ``z < -w``, ``(z + w)^2 / (4 w)`` for ``|z| <= w`` and ``z`` for
    ``z > w``; ``psi' in [0, 1]``, ``psi'' = 1 / (2 w)`` inside the band and 0 outside.
    """
    first, second = smooth_plus_derivatives(z, width)
    # Below z = w, psi = w psi'^2.
    value = np.where(z > width, z, width * first * first)
    return value, first, second


def smooth_plus_derivatives(z, width):
    """``(psi'(z), psi''(z))`` of :func:`smooth_plus` without its value.

    ``psi' = clip((z + w) / (2 w), 0, 1)``; ``psi'' = 1 / (2 w)`` where ``|z| <= w``.
    This runs in every Newton and line-search step of the solver, so it avoids
    ``np.clip``'s wrapper and works in place: four passes over z.
    """
    w = width
    first = np.empty(np.shape(z))
    np.add(z, w, out=first)
    first *= 0.5 / w
    np.maximum(first, 0.0, out=first)
    np.minimum(first, 1.0, out=first)
    # |z| <= w exactly where 0 <= (z + w) / (2 w) <= 1 before clipping; compare z itself
    # so that the band's ends match smooth_plus's definition bit for bit.
    second = (np.abs(z) <= w) * (0.5 / w)
    return first, second


@dataclass(frozen=True)
class HuberHingeLoss:
    """Hinge loss with its kink smoothed: ``psi(1 - y f)`` (see :func:`smooth_plus`)."""

    width: float = 0.01
    name = "huber_hinge"

    def __post_init__(self):
        _check_width(self.width)

    def value(self, y, f):
        return smooth_plus(1.0 - y * f, self.width)[0]

    def derivatives(self, y, f):
        first, second = smooth_plus_derivatives(1.0 - y * f, self.width)
        return -y * first, second

    def knots(self, y):
        """(n, 2) decision values where each point changes piece (``y f = 1 -+ w``)."""
        return np.column_stack([y * (1.0 - self.width), y * (1.0 + self.width)])


@dataclass(frozen=True)
class HuberInsensitiveLoss:
    """Smoothed epsilon-insensitive loss ``psi(f - y - eps) + psi(y - f - eps)``.

    For ``eps >= width`` the two terms never overlap and this is the table's formula;
    for smaller ``eps`` (including 0, a smoothed absolute loss) it stays differentiable.
    """

    epsilon: float = 0.1
    width: float = 0.01
    name = "huber_insensitive"

    def __post_init__(self):
        _check_width(self.width)
        if not np.isfinite(self.epsilon) or self.epsilon < 0:
            raise KernelCVError(f"epsilon must be a finite number >= 0, got {self.epsilon!r}")

    def value(self, y, f):
        r = f - y
        return (smooth_plus(r - self.epsilon, self.width)[0]
                + smooth_plus(-r - self.epsilon, self.width)[0])

    def derivatives(self, y, f):
        r = f - y
        up1, up2 = smooth_plus_derivatives(r - self.epsilon, self.width)
        down1, down2 = smooth_plus_derivatives(-r - self.epsilon, self.width)
        return up1 - down1, up2 + down2

    def knots(self, y):
        """(n, 4) decision values where each point changes piece (``|f - y| = eps -+ w``)."""
        e, w = self.epsilon, self.width
        return y[:, None] + np.array([-e - w, -e + w, e - w, e + w])[None, :]


def _check_width(width) -> None:
    if not np.isfinite(width) or width <= 0:
        raise KernelCVError(f"huber width must be a positive finite number, got {width!r}")
