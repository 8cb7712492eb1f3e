"""Test plumbing shared by the class- and sample-weight tests: stratified fold ids and the
check that the fast criteria's held-out values equal the exact refits' on a weighted
machine (BIF order inf for the square loss, where it is exact; the spectral engine)."""

import numpy as np
from sklearn.model_selection import StratifiedKFold

from kernelcv.criteria.evaluate import evaluate_lam
from kernelcv.criteria.multiclass import MulticlassCV
from kernelcv.criteria.spectral import spectral_evaluations


def folds_of(y, t=4, seed=0):
    """Fold ids 0..t-1 of shuffled stratified folds."""
    fold_ids = np.empty(len(y), dtype=np.intp)
    for i, (_, test) in enumerate(StratifiedKFold(t, shuffle=True,
                                                  random_state=seed).split(y, y)):
        fold_ids[test] = i
    return fold_ids


def check_fast_criteria_against_refits(K, codes, fold_ids, lam, machine):
    """Held-out values of BIF order inf (lssvm) and of spectral equal the refits'."""
    exact = evaluate_lam(K, codes, fold_ids, lam, machine, "exact")
    scale = 1.0 + np.max(np.abs(exact.predictions))
    if machine.name == "lssvm":  # order inf is exact for the square loss
        bif = evaluate_lam(K, codes, fold_ids, lam, machine, "bif", order="inf")
        assert np.max(np.abs(bif.predictions - exact.predictions)) < 1e-7 * scale
    spectral = spectral_evaluations(K, codes, fold_ids, [lam], machine, tol=1e-12)[0]
    assert np.max(np.abs(spectral.predictions - exact.predictions)) < 1e-5 * scale
    assert spectral.cv_error == exact.cv_error or np.any(
        np.abs(exact.predictions) < 1e-5 * scale)


def exact_heldout_labels(K, codes, fold_ids, lam, machine, mapping):
    """The held-out labels of exact refit CV (binary: by sign; more classes: the scheme's
    class codes), in the data's labels."""
    if not machine.is_multiclass:
        ev = evaluate_lam(K, codes, fold_ids, lam, machine, "exact")
        return ev, np.where(ev.predictions > 0, mapping[1], mapping[-1])
    ev = MulticlassCV(K, codes, fold_ids, machine).evaluate(lam, machine, "exact")
    return ev, np.array([mapping[code] for code in sorted(mapping)])[ev.predictions]
