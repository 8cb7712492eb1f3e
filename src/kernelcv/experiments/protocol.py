"""The evaluation protocol of the BIF papers: random halves, paired t-tests, summaries.

For each data set, R random 50/50 train/test splits (stratified by class for
classification, seeded); every criterion selects (kernel parameter, lam) on the training
half, the selected model is refit on the whole training half and its test error (0-1 or
MSE) measured on the other half. Criteria are compared with a reference criterion by the
paired t statistic over the R splits,

    t = mean(d) / (std(d, ddof=1) / sqrt(R)),   d_s = err_criterion,s - err_reference,s,

and a difference is called significant when |t| exceeds a threshold: by default the
one-sided 95% quantile of Student's t with R - 1 degrees of freedom
(``scipy.stats.t.ppf(0.95, R - 1)``; 1.833 at the papers' R = 10, 2.920 at R = 3).

Everything here is O(R) or O(n) per call.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

from ..exceptions import KernelCVError

T_THRESHOLD = 1.833  # the papers' threshold, t.ppf(0.95, 9) for R = 10 splits
ZERO_DIFFERENCE = 1e-12  # |mean difference| below this (relative) counts as no difference


def default_t_threshold(n_splits: int) -> float:
    """One-sided 95% point of Student's t with ``n_splits - 1`` degrees of freedom."""
    if n_splits < 2:
        raise KernelCVError(f"need at least 2 splits for a paired t-test, got {n_splits!r}")
    return float(scipy.stats.t.ppf(0.95, n_splits - 1))


def random_splits(y, n_splits: int, seed: int, classifier: bool) -> list[tuple]:
    """R reproducible 50/50 splits ``(train_indices, test_indices)``.

    Stratified by class for classifiers (as in the papers' random halves). The same
    ``seed`` gives the same splits; split s does not depend on R (it is drawn from its own
    seed ``seed + s``), so a run with more splits extends a shorter one (``kernelcv bench``
keys its checkpoint by split and resumes the first R splits of a longer or shorter run).
    """
    if isinstance(n_splits, bool) or not isinstance(n_splits, int | np.integer) \
            or n_splits < 2:
        raise KernelCVError(f"need at least 2 splits for a paired t-test, got {n_splits!r}")
    y = np.asarray(y)
    out = []
    for s in range(int(n_splits)):
        if classifier:
            splitter = StratifiedShuffleSplit(1, test_size=0.5, random_state=seed + s)
        else:
            splitter = ShuffleSplit(1, test_size=0.5, random_state=seed + s)
        train, test = next(splitter.split(np.zeros(y.shape[0]), y))
        out.append((np.sort(train), np.sort(test)))
    return out


def scale_features(X_train, X_test):
    """Min-max scale both halves to [-1, 1] with the training half's range (constant
    columns map to 0), as LIBSVM's ``svm-scale`` does for the ``*_scale`` files."""
    low, high = X_train.min(axis=0), X_train.max(axis=0)
    varies = high > low
    span = np.where(varies, high - low, 1.0)

    def scale(X):
        return np.where(varies, 2.0 * (X - low) / span - 1.0, 0.0)

    return scale(X_train), scale(X_test)


def standardize_target(y_train, y_test):
    """Centre and scale regression targets by the training half's mean and std, so that
    MSE is in units of the target variance and one SVR tube width fits every set."""
    mean, std = float(np.mean(y_train)), float(np.std(y_train))
    std = std if std > 0 else 1.0
    return (y_train - mean) / std, (y_test - mean) / std


def paired_t(errors, reference) -> float:
    """Paired t statistic of ``errors - reference`` over splits (scipy's ``ttest_rel``).

    Positive t means larger errors than the reference. Differences whose mean is within
    ``ZERO_DIFFERENCE`` (relative to the largest error, at least 1) of zero give 0 — they
    are rounding, and would print as equal means. A nonzero difference that is the same
    on every split (zero variance) gives +-inf, as scipy does; scipy returns nan for
    identical series.
    """
    a = np.asarray(errors, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise KernelCVError("paired t-test needs two equal-length series of >= 2 values")
    d = a - b
    mean = float(np.mean(d))
    scale = max(1.0, float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    if abs(mean) <= ZERO_DIFFERENCE * scale:
        return 0.0
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        return math.copysign(math.inf, mean)
    return mean / (sd / math.sqrt(d.size))


def significance(t: float, threshold: float = T_THRESHOLD) -> str:
    """``"worse"`` (t > threshold), ``"better"`` (t < -threshold) or ``""``."""
    if t > threshold:
        return "worse"
    if t < -threshold:
        return "better"
    return ""


def summarize(records: list[dict], reference: str, threshold: float | None = None) -> dict:
    """Mean ± std over splits per criterion, and the paired t statistic to the reference.

    Parameters
    ----------
    records : one dict per split, ``{criterion: {"test_error": e, "seconds": s, ...}}``;
        criteria that failed on a split hold ``{"error": message}``.
    reference : the criterion the others are tested against.
    threshold : |t| above which a difference is significant (default: per criterion,
        :func:`default_t_threshold` of the number of paired splits).

    Returns
    -------
    dict
        ``{criterion: {"test_error_mean", "test_error_std", "seconds_mean", "seconds_std",
        "t", "significant", "n_splits", "failures"}}``; t is computed over the splits
        where both the criterion and the reference succeeded (None with fewer than 2).
    """
    names = list(dict.fromkeys(name for record in records for name in record))
    out = {}
    for name in names:
        ok = [r for r in records if "test_error" in r.get(name, {})]
        errors = np.array([r[name]["test_error"] for r in ok])
        seconds = np.array([r[name]["seconds"] for r in ok])
        entry = {
            "n_splits": len(ok), "failures": len(records) - len(ok),
            "test_error_mean": _stat(errors, np.mean), "test_error_std": _stat(errors, _sd),
            "seconds_mean": _stat(seconds, np.mean), "seconds_std": _stat(seconds, _sd),
            "t": None, "significant": "",
        }
        paired = [r for r in ok if "test_error" in r.get(reference, {})]
        if name != reference and len(paired) >= 2:
            t = paired_t([r[name]["test_error"] for r in paired],
                         [r[reference]["test_error"] for r in paired])
            limit = default_t_threshold(len(paired)) if threshold is None else threshold
            entry["t"], entry["significant"] = t, significance(t, limit)
        out[name] = entry
    return out


def _sd(values):
    return np.std(values, ddof=1) if values.size > 1 else 0.0


def _stat(values, fn):
    return float(fn(values)) if values.size else None
