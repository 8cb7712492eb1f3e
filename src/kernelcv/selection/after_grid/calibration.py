"""Class probabilities for the chosen candidate of a search, from its out-of-fold values.

The scale of :mod:`kernelcv.machines.calibration` is fitted to the decision values that
exact refit CV of the chosen candidate gave every training row (a confirmation's, when
the search made one; else one exact refit CV, t fits). ``KernelSearchCV.predict_proba``
and the models ``kernelcv select --save-model`` writes (``kernelcv predict --proba``)
use it.
"""

from __future__ import annotations

import numpy as np

from ...machines.calibration import PairScale, ScoreScale, fit_scheme_scale
from ...validation import check_data

__all__ = ["calibrate_choice", "class_codes"]


def class_codes(y) -> np.ndarray:
    """Each label's position in the sorted classes (``classes_``' order)."""
    return np.unique(np.asarray(y), return_inverse=True)[1].astype(np.intp)


def calibrate_choice(result, index, best, X_checked, y) -> ScoreScale | PairScale:
    """The probability scale from the out-of-fold decision values of the chosen
    candidate ``best`` (the search's candidate ``index``, or None if it evaluated none):
    its confirmation's, or one exact refit CV of it when the search made none (t fits)."""
    values = None if index is None else result.exact_values.get(index)
    machine = result.machine_spec
    if values is None:
        _, y_encoded, _ = check_data(X_checked, y, True, multiclass=True)
        setting = {key: best[key] for key in ("kernel", "gamma", "degree", "coef0")
                   if key in best}
        found = result.criterion.exact_candidate(
            X_checked, y_encoded, result.fold_ids, setting, float(best["lam"]),
            int(best["n_folds"]), machine=machine)
        values = np.asarray(found["heldout_values"], dtype=np.float64)
    return fit_scheme_scale(values, class_codes(y), machine.n_classes, machine.multiclass,
                            machine.row_weights)
