"""The Newton systems of successive iterations of one fit, solved from one Cholesky factor.

Each iteration of :func:`kernelcv.machines.solver.fit_kernel_machine` solves the system
``M_A = K_AA + diag(s_A)`` on the points A on a quadratic piece (``s = 2 lam n / h``).
From a good start (LIBSVM's solution, the neighbouring lam's) A moves by a few points
after the first iteration, and s keeps its value wherever h does (the Huber bands have
one curvature): on the 2,000-row subsamples of w8a and ijcnn1 the second iteration drops
1-5 % of |A| (|A| = 300-2,000) and later ones a handful of points. Factoring every
iteration's system anew costs ``|A|^3 / 3`` each time.

:class:`ActiveSystems` keeps the Cholesky factor ``L`` of the last system it factored,
``M_B`` on the base set B, and solves a later system on ``A = C + I`` (C: the base points
still active with the same shift; I: the others, new or with a changed shift; O = B - C
the base points left out) without a new factorisation:

1. **removing O** (Schur complement of the inverse): ``P = M_CC`` is ``M_B`` without the
   rows and columns O, and ``P^-1 v = [L^-T (u + W mu)]_C`` with ``u = L^-1 [v; 0]``,
   ``W = L^-1 E_O`` and ``mu = -(W' W)^-1 W' u`` (``W' W = (M_B^-1)_OO``);
2. **adding I** (bordering): with ``B = K_CI`` and ``Q = K_II + diag(s_I)``, the Schur
   complement ``S = Q - B' P^-1 B`` gives ``x_I = S^-1 (r_I - B' P^-1 r_C)`` and
   ``x_C = P^-1 (r_C - B x_I)``.

Every such solve is checked by its residual ``M_A x - r`` (``L L'`` stands for ``M_B``:
two triangular products): above :data:`RESIDUAL_TOL` of ``||M_A|| ||x|| + ||r||`` the
system is factored afresh (and becomes the base), as it is when the change is too large
to pay (:data:`MAX_CHANGE`), the system small (:data:`MIN_ACTIVE`) or the base needed
jitter. So the solution has the quality of a direct Cholesky solve either way.

Cost of an updated system: ``|B|^2 (|O| + 2 |I|)`` (W and ``P^-1 B``) plus ``4 |B|^2``
per right-hand side (two triangular solves, two products for the residual), against
``|A|^3 / 3`` and an ``|A|^2`` gather for a new factor.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dtrmm
from scipy.linalg.lapack import dpotrf, dpotrs, dtrtrs

# Systems below this many points are always factored anew (the update's bookkeeping costs
# about what the factorisation does).
MIN_ACTIVE = 400
# An update is used while |O| + 2 |I| is at most this share of |A| (its cost in units of
# |B|^2 against |A| / 3 for a new factor; triangular solves with a few columns run at a
# fraction of the factorisation's speed).
MAX_CHANGE = 0.1
# Relative residual ``||M_A x - r|| / (||M_A|| ||x|| + ||r||)`` above which an updated
# solve is redone from a new factor (a direct Cholesky solve gives ~1e-16).
RESIDUAL_TOL = 1e-12


class ActiveSystems:
    """Solvers of ``K_AA + diag(shift)`` for the successive active sets of one fit.

    Parameters
    ----------
    K : (n, n) Gram matrix (held, not copied).
    factorise : ``factorise(M, active)``, the solver's Cholesky (with jitter where needed)
        of ``M`` as a :class:`~kernelcv.machines.solver.Factorisation`.
    """

    def __init__(self, K, factorise):
        self.K = K
        self.factorise = factorise
        self.base = None  # (_Factored, shift on its active set)
        self.refactored = 0
        self.updates = 0

    def factor(self, active, shift):
        """A Factorisation of ``M_A``, or an updated solver with its interface
        (``active``, ``jitter``, ``cho``, ``solve(rhs)``; ``rhs`` (|A|,) or (|A|, k), rows
        in the order of ``active``)."""
        update = self._update(active, shift)
        if update is not None:
            self.updates += 1
            return update
        return self.fresh(active, shift)

    def fresh(self, active, shift):
        """A new Cholesky factor of ``M_A``; it becomes the base of later updates."""
        M = self.K[active[:, None], active]
        M.flat[::active.size + 1] += shift
        factored = self.factorise(M, active)
        self.base = (factored, np.asarray(shift, dtype=np.float64).copy())
        self.refactored += 1
        return factored

    def _update(self, active, shift):
        if self.base is None or active.size < MIN_ACTIVE:
            return None
        base, base_shift = self.base
        if base.jitter > 0:
            return None
        in_base = np.searchsorted(base.active, active)
        in_base[in_base == base.active.size] = 0
        kept = (base.active[in_base] == active) & (base_shift[in_base] == shift)
        n_out = base.active.size - int(kept.sum())
        n_in = active.size - int(kept.sum())
        if n_out + 2 * n_in > MAX_CHANGE * active.size:
            return None
        return _Updated(self, active, shift, kept, in_base)


class _Updated:
    """``M_A`` solved from the base factor (see the module notes)."""

    updated = True
    jitter = 0.0

    def __init__(self, systems, active, shift, kept, in_base):
        self.systems = systems
        self.active = active
        self.shift = shift
        base, _ = systems.base
        self.L = base.cho[0]
        m = base.active.size
        self.kept = np.flatnonzero(kept)            # positions in A of C
        self.added = np.flatnonzero(~kept)          # positions in A of I
        self.c_base = in_base[kept]                 # positions in B of C
        out = np.ones(m, dtype=bool)
        out[self.c_base] = False
        self.out = np.flatnonzero(out)              # positions in B of O
        self._fallback = None
        self.W = None
        if self.out.size:
            E = np.zeros((m, self.out.size))
            E[self.out, np.arange(self.out.size)] = 1.0
            self.W = self._tri(E, trans=0)
            self.G_oo = self._chol(self.W.T @ self.W)
        self.Y = None
        if self.added.size:
            K = systems.K
            c_rows, i_rows = active[self.kept], active[self.added]
            self.B = K[c_rows[:, None], i_rows]
            Q = K[i_rows[:, None], i_rows]
            Q.flat[::i_rows.size + 1] += shift[self.added]
            self.Y = self._p_solve(self.B)
            self.S = self._chol(Q - self.B.T @ self.Y)

    @property
    def cho(self):
        """The Cholesky pair of ``M_A`` itself (factored on first use, e.g. by the
        rounding check's condition estimate)."""
        return self._direct().cho

    def _direct(self):
        if self._fallback is None:
            self._fallback = self.systems.fresh(self.active, self.shift)
        return self._fallback

    def _tri(self, rhs, trans):
        x, info = dtrtrs(self.L, rhs, lower=1, trans=trans)
        if info != 0:
            raise np.linalg.LinAlgError("singular base factor")
        return x

    @staticmethod
    def _chol(M):
        c, info = dpotrf(M, lower=1, clean=0)
        return None if info != 0 else c

    def _p_solve(self, V):
        """``P^-1 V`` for V with rows on C (``P = M_CC``), via the base factor."""
        u = np.zeros((self.L.shape[0], V.shape[1]))
        u[self.c_base] = V
        u = self._tri(u, trans=0)
        if self.W is not None:
            u += self.W @ dpotrs(self.G_oo, -(self.W.T @ u), lower=1)[0]
        return self._tri(u, trans=1)[self.c_base]

    def solve(self, rhs):
        """``M_A^-1 rhs``, from the base factor when its residual passes, else from a new
        factor of ``M_A``."""
        if self._fallback is not None or (self.W is not None and self.G_oo is None) or (
                self.Y is not None and self.S is None):
            return self._direct().solve(rhs)
        R = rhs.reshape(rhs.shape[0], -1)
        y = self._p_solve(R[self.kept])
        x = np.empty_like(R)
        if self.Y is not None:
            x_i = dpotrs(self.S, R[self.added] - self.B.T @ y, lower=1)[0]
            x[self.added] = x_i
            x[self.kept] = y - self.Y @ x_i
        else:
            x[self.kept] = y
        if not self._accurate(x, R):
            return self._direct().solve(rhs)
        return x.reshape(rhs.shape)

    def _accurate(self, x, R):
        """Whether ``||M_A x - R|| <= RESIDUAL_TOL (||M_A|| ||x|| + ||R||)``."""
        z = np.zeros((self.L.shape[0], x.shape[1]))
        z[self.c_base] = x[self.kept]
        # M_B z = L (L' z): two triangular products
        z = dtrmm(1.0, self.L, dtrmm(1.0, self.L, z, lower=1, trans_a=1), lower=1)
        product = np.empty_like(x)
        product[self.kept] = z[self.c_base]
        if self.Y is not None:
            x_i = x[self.added]
            product[self.kept] += self.B @ x_i
            i_rows = self.active[self.added]
            Q = self.systems.K[i_rows[:, None], i_rows]
            Q.flat[::i_rows.size + 1] += self.shift[self.added]
            product[self.added] = self.B.T @ x[self.kept] + Q @ x_i
        diagonal = np.diag(self.systems.K)[self.active] + self.shift
        norm = float(np.max(diagonal)) * self.active.size
        bound = RESIDUAL_TOL * (norm * float(np.max(np.abs(x))) + float(np.max(np.abs(R))))
        return bool(np.all(np.isfinite(x))) and float(np.max(np.abs(product - R))) <= bound
