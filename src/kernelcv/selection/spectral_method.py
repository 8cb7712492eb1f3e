"""The ``spectral`` CV method: exact t-fold CV of every lam of a kernel setting from one
eigendecomposition of its Gram matrix (:mod:`kernelcv.criteria.spectral`).

Every machine is accepted: the L2-SVM by batched majorize-minimize steps in K's
eigenbasis, krr and lssvm by the closed form of the same eigendecomposition, the Huber
machines (svm, svr) by exact Newton refits unless ``huber="mm"``. The scores are exact CV errors
(to the engine's stated tolerance), so no confirmation by refits follows the grid.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import ClassVar

from .._threads import blas_threads_for
from ..criteria.result import Criterion, weigh_errors
from ..criteria.ridge_factors import check_factorization
from ..criteria.spectral import (
    EIGH_ROWS,
    FLOAT32_NOTE,
    KAPPA_SINGLE,
    TOLERANCE,
    spectral_evaluations,
)
from ..devices import check_device, check_precision, resolve_device
from ..exceptions import KernelCVError, MemoryBudgetError
from ..machines.losses import SquareLoss
from ..memory import check_dense_budget, format_bytes
from .methods import CVMethod
from .records import cv_record, gram_for_setting
from .warm_starts import WarmStarts

__all__ = ["Spectral"]


@dataclass(frozen=True)
class Spectral(CVMethod):
    """Exact CV of every lam and every fold from one ``eigh(K)`` per kernel setting.

    ``tol``: the MM steps stop once a step moves no value by more than
    ``tol * max(1, max |f|)``; a fold-out problem still moving after ``max_steps`` is
    finished by the Newton solver (named in the record's notes). ``huber``: ``"newton"``
    refits the Huber machines (svm, svr) exactly by Newton instead of the MM steps,
    faster on a CPU; ``"mm"`` runs the MM engine for them as well; ``"auto"`` (default):
    Newton on numpy, MM on a torch device. ``device``: where the Gram matrices, the
    factorizations, the MM steps and the fold-out products run (:mod:`kernelcv.devices`;
    a search takes it from its ``Execution``). ``factorization``: ``"eigh"`` (one
    eigendecomposition per kernel serves every lam), ``"cholesky"`` (one Cholesky
    factorization of ``K + rho I`` per lam: no eigendecomposition, half its memory) or
    ``"auto"`` (default): eigh up to :data:`~kernelcv.criteria.spectral.EIGH_ROWS` rows
    where its memory fits, Cholesky above (:meth:`for_rows`; the report's notes say so).
    ``precision``: ``"float64"`` (default) or ``"mixed"``: the MM steps of each lam in
    float32 where its ridge systems are well conditioned
    (:func:`~kernelcv.criteria.spectral.single_precision_safe`; ``"auto"`` then takes
    Cholesky, whose factor per lam takes its own precision); a search takes it from its
    ``Execution``.

    Cost per setting: one Gram matrix, one ``eigh`` (O(n^3); one per pair's rows for
    one-vs-one) or one Cholesky per lam (``n^3 / 3``), and the MM steps, ``4 n^2`` flops
    per step and (lam, fold), all lam and folds in one batch of matrix products.
    """

    name: ClassVar[str] = "spectral"
    criterion: ClassVar[Criterion] = Criterion.SPECTRAL

    tol: float = TOLERANCE
    max_steps: int = 3000
    huber: str = "auto"
    device: str = "numpy"
    factorization: str = "auto"
    precision: str = "float64"
    # Set by :meth:`bind`: whether the bound machine takes the closed form of one eigh
    # (krr and lssvm without weights); None while unbound (memory counted as eigh's).
    closed_form: bool | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.huber not in ("newton", "mm", "auto"):
            raise KernelCVError(f"huber must be 'newton', 'mm' or 'auto', got "
                                f"{self.huber!r}")
        check_device(self.device)
        check_factorization(self.factorization)
        check_precision(self.precision)

    @property
    def dense_matrices(self) -> float:
        """Dense n x n float64 matrices in host memory at the peak: the distances and K,
        plus Q and the divide-and-conquer ``eigh``'s workspace (~2 n^2) or one Cholesky
        factor (also the bound of the Newton refits' fold blocks and active factors); on a
        torch device only the distances (K and its factors live there)."""
        if self.device != "numpy":
            return 1.5
        return 4.5 if self._takes_eigh_on_host() else 3.0

    def _takes_eigh_on_host(self) -> bool:
        """Whether this method (on numpy) factors K by ``eigh``: asked for, or ``"auto"``
        for the closed form of krr / lssvm (or an unbound method: the larger count)."""
        if self.factorization != "auto":
            return self.factorization == "eigh"
        return self.closed_form is not False and self.precision == "float64"

    def bind(self, machine, kernel, random_state=None):
        """A copy that knows whether ``machine`` takes the closed form (its memory)."""
        closed = isinstance(machine.loss, SquareLoss) and not machine.weighted
        return replace(self, closed_form=closed)

    def device_matrices(self) -> float:
        """Dense n x n matrices on a torch device: K and its eigenvectors with ``eigh``'s
        workspace, or K and one Cholesky factor."""
        return 2.5 if self.factorization == "cholesky" else 4.5

    def for_rows(self, n_samples: int, memory_budget=None):
        """``factorization="auto"`` resolved for ``n_samples`` rows: itself where one
        eigendecomposition serves (up to ``EIGH_ROWS`` rows, its memory fits the host
        budget and the GPU's free memory: "auto" then takes eigh), else one Cholesky
        factorization per lam, with a note saying why; a one-line
        :class:`~kernelcv.exceptions.MemoryBudgetError` where neither fits."""
        if self.factorization != "auto":
            return self, []
        cholesky = replace(self, factorization="cholesky")
        if self.device == "numpy" and not self._takes_eigh_on_host():
            # "auto" factors by Cholesky here whatever n: only that needs to fit
            problem = cholesky._memory_shortfall(n_samples, memory_budget)
            if problem is not None:
                raise MemoryBudgetError(f"method 'spectral' on {n_samples} samples: "
                                        f"{problem}; use a random subsample, or "
                                        "method='rff'")
            return self, []
        eigh = replace(self, factorization="eigh")
        if n_samples > EIGH_ROWS:
            why = f"n = {n_samples} is past one eigendecomposition ({EIGH_ROWS} rows)"
        else:
            shortfall = eigh._memory_shortfall(n_samples, memory_budget)
            if shortfall is None:
                return self, []  # "auto" takes eigh at this size
            why = shortfall
        problem = cholesky._memory_shortfall(n_samples, memory_budget)
        if problem is not None:
            raise MemoryBudgetError(f"method 'spectral' on {n_samples} samples: {problem} "
                                    "even with one Cholesky factor per lam; use a random "
                                    "subsample, or method='rff'")
        return cholesky, [f"spectral: one Cholesky factorization of K + rho I per (kernel, "
                          f"lam) instead of one eigendecomposition per kernel: {why}"]

    def _memory_shortfall(self, n_samples: int, memory_budget) -> str | None:
        """Why this factorization does not fit (host budget or GPU memory), or None."""
        try:
            check_dense_budget(n_samples, n_samples, self.dense_matrices, "it",
                               memory_budget)
        except MemoryBudgetError:
            need = n_samples * n_samples * 8 * self.dense_matrices
            return f"{self.factorization} needs about {format_bytes(need)} of host memory"
        free = resolve_device(self.device).free_bytes()
        need = n_samples * n_samples * 8 * self.device_matrices()
        if free is not None and need > free:
            return (f"{self.factorization} needs about {format_bytes(need)} on the GPU, "
                    f"{format_bytes(free)} free")
        return None

    def on_device(self, device: str, precision: str = "float64"):
        return replace(self, device=device, precision=precision)

    def notes(self, candidates, best_index: int, n_samples: int) -> list[str]:
        """How many candidates ran their MM steps in float32 (``precision="mixed"``)."""
        if self.precision != "mixed":
            return []
        single = sum(any(note.startswith(FLOAT32_NOTE) for note in c.get("notes", []))
                     for c in candidates)
        return [f"precision mixed: {single} of {len(candidates)} candidates ran their MM "
                f"steps in float32 (kappa <= {KAPPA_SINGLE:g}, named in their notes), the "
                "rest in float64"]

    def config_entries(self, machine):
        entries = {**super().config_entries(machine), "tol": self.tol}
        if self.device != "numpy" or self.precision != "float64":
            # only then: earlier checkpoints keep their keys
            entries["device"] = resolve_device(self.device).with_precision(
                self.precision).describe()
        if self.factorization == "cholesky":
            entries["factorization"] = "cholesky"
        return entries

    def evaluate_lams(self, K, y, fold_ids, lams, machine):
        """Every lam at once, from one eigendecomposition of K."""
        device = resolve_device(self.device)
        huber = self.huber if self.huber != "auto" else (
            "mm" if device.is_torch else "newton")
        return spectral_evaluations(K, y, fold_ids, lams, machine, tol=self.tol,
                                    max_steps=self.max_steps, huber=huber, device=device,
                                    factorization=self.factorization,
                                    precision=self.precision)

    def evaluate_setting(self, data, y, fold_ids, setting: dict, lams, *, machine,
                         random_state=None, memory_budget=None,
                         warm_starts: WarmStarts | None = None) -> list[dict]:
        """Every lam of one kernel setting at once (see the class notes for the cost)."""
        with blas_threads_for(y.shape[0]):
            tic = time.perf_counter()
            K = gram_for_setting(data, setting, memory_budget,
                                 device=resolve_device(self.device))
            setup = (time.perf_counter() - tic) / len(lams)
            evaluations = self.evaluate_lams(K, y, fold_ids, lams, machine)
        records = []
        for lam, ev in zip(lams, evaluations, strict=True):
            ev = weigh_errors(ev, y, fold_ids, machine)
            record = cv_record(ev, float(lam), fold_ids, y, self.scoring, machine)
            record["seconds"] += setup
            records.append(record)
        return records
