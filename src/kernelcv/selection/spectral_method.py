"""The ``spectral`` CV method: exact t-fold CV of every lam of a kernel setting from one
eigendecomposition of its Gram matrix (:mod:`kernelcv.criteria.spectral`).

Every machine is accepted: the L2-SVM by batched majorize-minimize steps in K's
eigenbasis, krr and lssvm by the closed form of the same eigendecomposition, the Huber
machines (svm, svr) by exact Newton refits unless ``huber="mm"``. The scores are exact CV errors
(to the engine's stated tolerance), so no confirmation by refits follows the grid.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import ClassVar

from .._threads import blas_threads_for
from ..criteria.result import Criterion, weigh_errors
from ..criteria.spectral import TOLERANCE, spectral_evaluations
from ..devices import check_device, resolve_device
from ..exceptions import KernelCVError
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
    Newton on numpy, MM on a torch device. ``device``: where the eigendecompositions,
    the MM steps and the fold-out products run (:mod:`kernelcv.devices`; a search takes
    it from its ``Execution``).

    Cost per setting: one Gram matrix, one ``eigh`` (O(n^3); one per pair's rows for
    one-vs-one) and the MM steps, ``4 n^2`` flops per step and (lam, fold), all lam and
    folds in one batch of matrix products.
    """

    name: ClassVar[str] = "spectral"
    criterion: ClassVar[Criterion] = Criterion.SPECTRAL
    # K, Q (the eigenvectors) and the divide-and-conquer eigh's workspace (~2 n^2).
    dense_matrices: ClassVar[float] = 4.5

    tol: float = TOLERANCE
    max_steps: int = 3000
    huber: str = "auto"
    device: str = "numpy"

    def __post_init__(self):
        if self.huber not in ("newton", "mm", "auto"):
            raise KernelCVError(f"huber must be 'newton', 'mm' or 'auto', got "
                                f"{self.huber!r}")
        check_device(self.device)

    def on_device(self, device: str):
        return replace(self, device=device)

    def config_entries(self, machine):
        entries = {**super().config_entries(machine), "tol": self.tol}
        if self.device != "numpy":  # only then: earlier checkpoints keep their keys
            entries["device"] = resolve_device(self.device).describe()
        return entries

    def evaluate_lams(self, K, y, fold_ids, lams, machine):
        """Every lam at once, from one eigendecomposition of K."""
        device = resolve_device(self.device)
        huber = self.huber if self.huber != "auto" else (
            "mm" if device.is_torch else "newton")
        return spectral_evaluations(K, y, fold_ids, lams, machine, tol=self.tol,
                                    max_steps=self.max_steps, huber=huber, device=device)

    def evaluate_setting(self, data, y, fold_ids, setting: dict, lams, *, machine,
                         random_state=None, memory_budget=None,
                         warm_starts: WarmStarts | None = None) -> list[dict]:
        """Every lam of one kernel setting at once (see the class notes for the cost)."""
        with blas_threads_for(y.shape[0]):
            tic = time.perf_counter()
            K = gram_for_setting(data, setting, memory_budget)
            setup = (time.perf_counter() - tic) / len(lams)
            evaluations = self.evaluate_lams(K, y, fold_ids, lams, machine)
        records = []
        for lam, ev in zip(lams, evaluations, strict=True):
            ev = weigh_errors(ev, y, fold_ids, machine)
            record = cv_record(ev, float(lam), fold_ids, y, self.scoring, machine)
            record["seconds"] += setup
            records.append(record)
        return records
