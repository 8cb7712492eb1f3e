"""GACV as a search method: Wahba's generalised approximate CV of the hinge SVM ranks the
candidates with one full fit each (:func:`kernelcv.criteria.gacv.gacv`); the safeguards
recheck degenerate candidates and confirm the best by exact refit CV. The method protocol
is :class:`kernelcv.selection.methods.CVMethod`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from ..criteria.gacv import gacv
from ..criteria.result import (
    DEGENERATE_SHARE,
    NEGLIGIBLE_RATIO,
    heldout_rounding,
    newton_curvature,
)
from ..exceptions import KernelCVError
from .methods import CVMethod, refuse_class_weight

__all__ = ["GACV"]


@dataclass(frozen=True)
class GACV(CVMethod):
    """Wahba's generalised approximate CV of the hinge SVM: one fit per candidate.

    Its value ranks candidates but is not a CV error; the safeguards recheck degenerate
    candidates and confirm the best by exact refit CV.
    """

    name: ClassVar[str] = "gacv"
    exact: ClassVar[bool] = False
    safeguarded: ClassVar[bool] = True
    score_is_error: ClassVar[bool] = False
    dense_matrices: ClassVar[float] = 2.0

    def score_label(self, folds, metric):
        return "GACV"

    def bind(self, machine, kernel, random_state=None):
        refuse_class_weight(machine, self.name)
        if self.scoring is not None:
            raise KernelCVError("method 'gacv' ranks by GACV, not by held-out values: it "
                                "cannot compute a scoring; use method 'bif' or 'exact'")
        if machine.name != "svm":
            raise KernelCVError(f"method 'gacv' is defined for the hinge SVM (machine "
                                f"'svm'), not {machine.name!r}")
        if machine.is_multiclass:
            raise KernelCVError("method 'gacv' is defined for binary SVMs (it scores one "
                                "machine, not held-out classes); use method 'bif' for "
                                "multiclass data")
        return self

    def _lam_record(self, K, y, fold_ids, lam, machine, state, previous, random_state):
        tic = time.perf_counter()
        start = {} if previous is None else {"alpha0": previous.alpha,
                                             "intercept0": previous.intercept}
        fit = machine.fit(K, y, lam, **start)
        fit_seconds = time.perf_counter() - tic
        value = float(gacv(K, y, fit, lam, machine=machine))
        curvature = newton_curvature(machine.loss.derivatives(y, fit.decision)[1], lam,
                                     fold_ids)
        ratio, noise_share = heldout_rounding(K, fit.alpha, fit.intercept, fold_ids,
                                              curvature)
        record = {
            "lam": lam, "score": value, "cv_error": None, "fold_errors": None,
            "fold_sizes": None, "n_folds": int(fold_ids.max()) + 1, "order_used": None,
            "degenerate": bool(noise_share > DEGENERATE_SHARE
                                or ratio < NEGLIGIBLE_RATIO), "heldout_ratio": float(ratio),
            "seconds": time.perf_counter() - tic, "fit_seconds": fit_seconds, "notes": [],
        }
        return record, fit
