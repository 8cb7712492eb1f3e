"""Input validation at the public boundary: data, labels, folds and positive settings.

Inner code trusts what passes through here. Every failure raises
:class:`~kernelcv.exceptions.KernelCVError` with a message that names the problem and the
remedy.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp

from .exceptions import KernelCVError


def check_data(X, y, classifier: bool, multiclass: bool = False):
    """Validate ``X`` (dense or sparse, finite) and ``y`` (finite, same length).

    ``X`` may be a row source (:mod:`kernelcv.reading.rowchunks`: its values are checked as its
    chunks are read; ``y`` None takes its targets); it is returned unchanged.

    For a classifier, two classes are mapped to -1/+1 (the smaller label to -1); with
    ``multiclass`` true, k > 2 classes are mapped to codes ``0..k-1`` in sorted order
    (without it, more than two classes are refused).

    Returns
    -------
    X : float64 ndarray or CSR matrix
    y : float64 ndarray (+-1 for two classes, codes 0..k-1 for more)
    label_mapping : dict or None
        ``{-1: original, +1: original}`` for two classes, ``{code: original}`` for more.
    """
    streamed = bool(getattr(X, "is_row_source", False))
    if streamed and y is None:  # a row source (kernelcv.reading.rowchunks) holds its targets
        y = X.labels()
    if X is None or y is None:
        raise KernelCVError("both X and y are required")
    if streamed:  # its values are checked chunk by chunk as they are read
        values = np.zeros(1)
    elif sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        values = X.data
    else:
        X = as_2d_float(X)
        values = X
    n = X.shape[0]
    if n == 0 or X.shape[1] == 0:
        raise KernelCVError(f"the data are empty ({X.shape[0]} samples, {X.shape[1]} features)")
    if not np.all(np.isfinite(values)):
        bad = int(np.size(values) - np.count_nonzero(np.isfinite(values)))
        raise KernelCVError(
            f"X contains {bad} NaN or infinite value(s); remove or impute them first")
    y = np.asarray(y)
    if y.ndim != 1:
        y = np.squeeze(y)
        if y.ndim != 1:
            raise KernelCVError(f"y must be 1-D, got shape {np.shape(y)}")
    if y.shape[0] != n:
        raise KernelCVError(f"X has {n} samples but y has {y.shape[0]}; they must match")
    if not classifier:
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise KernelCVError("y must be numeric for a regression machine") from None
        if not np.all(np.isfinite(y)):
            raise KernelCVError("y contains NaN or infinite values; remove those samples")
        return X, y, None
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise KernelCVError("y contains NaN or infinite values; remove those samples")
    classes = np.unique(y)
    if classes.size < 2:
        raise KernelCVError(
            f"a classifier needs two classes, but y has only one ({classes[0]!r})")
    if classes.size > 2:
        if not multiclass:
            raise KernelCVError(f"y has {classes.size} classes; this entry point is binary "
                                "(merge classes, or use a multiclass-aware one)")
        codes = np.searchsorted(classes, y).astype(np.float64)
        return X, codes, {code: _plain(label) for code, label in enumerate(classes)}
    y_pm = np.where(y == classes[1], 1.0, -1.0)
    mapping = {-1: _plain(classes[0]), 1: _plain(classes[1])}
    return X, y_pm, mapping


#: Largest |x| a kernel computation accepts: squares and products of values beyond about
#: 1.3e154 overflow float64, and sums over many features sooner.
SCALE_LIMIT = 1e150


def check_scale(X, name: str = "X") -> None:
    """Refuse (one line) data too large to square in float64, before any warning.

    Kernels square differences or multiply values: at ``|x| > SCALE_LIMIT`` numpy would
    print overflow warnings and the result would be inf or NaN. Cost: O(nnz).
    """
    values = X.data if sp.issparse(X) else np.asarray(X)
    largest = float(np.max(np.abs(values))) if values.size else 0.0
    if largest > SCALE_LIMIT:
        which = "each feature's mean, divide by its" if name == "X" else "its mean, divide by its"
        raise KernelCVError(
            f"{name}'s values reach {largest:.3g}: squares and products of values this "
            f"large overflow float64; standardize it (subtract {which} standard deviation)")


def as_2d_float(X, source: str = ""):
    """``X`` as a 2-D float64 array, or a :class:`KernelCVError` naming ``source``."""
    prefix = f"{source}: " if source else ""
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise KernelCVError(
            f"{prefix}X is not numeric (dtype {np.asarray(X).dtype})") from None
    if X.ndim == 1:
        raise KernelCVError(
            f"{prefix}X must be 2-D (n_samples, n_features), got a 1-D array of length "
            f"{X.size}; use X.reshape(-1, 1) for a single feature")
    if X.ndim != 2:
        raise KernelCVError(f"{prefix}X must be 2-D (n_samples, n_features), got {X.ndim}-D")
    return X


def _plain(value):
    """A JSON-friendly Python scalar."""
    return value.item() if hasattr(value, "item") else value


def check_positive(name: str, value) -> float:
    """``value`` as a float, or an error if it is not a positive finite number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise KernelCVError(f"{name} must be a positive number, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise KernelCVError(f"{name} must be a positive finite number, got {value!r}")
    return number


def make_folds(y, folds, classifier: bool, random_state=None) -> np.ndarray:
    """Fold ids ``0..t-1`` for each sample.

    Parameters
    ----------
    y : (n,) labels (+-1 for classifiers) or targets.
    folds : int or array of n fold ids
        An integer t gives shuffled folds seeded by ``random_state``, stratified by class
        for a classifier whose two classes both have at least t members, and always for
        more than two classes (a class smaller than t then misses some folds); an array is
        taken as given (any integer ids, relabelled to ``0..t-1``).
    classifier : whether every training part must contain every class.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the shuffle: an integer in ``[0, 2**32)`` (the same integer gives the same
        folds), a RandomState or Generator (drawn from), or None (numpy's global
        RandomState, as :func:`numpy.random.shuffle` uses).

    Notes
    -----
    The assignment is scikit-learn's (so folds, and the results and checkpoints that
    depend on them, are the same as with ``StratifiedKFold(t, shuffle=True,
    random_state=random_state)``, or ``KFold`` when not stratified), computed here
    without importing scikit-learn. Stratified: the classes are numbered in order of
    first appearance and dealt round-robin, class 0 first, to folds ``0, 1, ..., t-1,
    0, ...``; that fixes how many of each class every fold gets (fold sizes, and each
    class's counts per fold, differ by at most one), and one shuffle per class decides
    which of its samples go where. Not stratified: one shuffle of ``0..n-1``, cut into
    ``t`` consecutive folds, the first ``n mod t`` of them one larger. Cost: O(n) time
    and memory.
    """
    n = y.shape[0]
    if isinstance(folds, int | np.integer) and not isinstance(folds, bool):
        t = int(folds)
        if t < 2:
            raise KernelCVError(f"need at least 2 folds, got {t}")
        if t > n:
            raise KernelCVError(f"cannot make {t} folds from {n} samples (at most n = {n})")
        shuffle = _shuffler(random_state)
        ids = np.empty(n, dtype=np.int64)
        if classifier:
            # classes numbered in order of first appearance (scikit-learn's encoding)
            _, first, inverse = np.unique(y, return_index=True, return_inverse=True)
            encoded = np.argsort(np.argsort(first))[inverse]
            counts = np.bincount(encoded)
        # Two classes are stratified when both have t members; more classes always are
        # (as StratifiedKFold: a class smaller than t then misses some folds).
        if classifier and (counts.size > 2 or counts.min() >= t):
            dealt = np.arange(n) % t  # the fold of each position of the sorted classes
            ends = np.cumsum(counts)
            for k in range(counts.size):
                positions = dealt[ends[k] - counts[k]:ends[k]]
                folds_of_class = np.repeat(np.arange(t), np.bincount(positions, minlength=t))
                shuffle(folds_of_class)
                ids[encoded == k] = folds_of_class
        else:
            order = np.arange(n)
            shuffle(order)
            sizes = np.full(t, n // t)
            sizes[:n % t] += 1
            ids[order] = np.repeat(np.arange(t), sizes)
    else:
        raw = np.asarray(folds)
        if raw.ndim != 1 or raw.shape[0] != n:
            raise KernelCVError(
                f"fold ids must be one integer per sample ({n}), got shape {raw.shape}")
        if raw.dtype.kind == "f":
            if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
                raise KernelCVError("fold ids must be integers")
        elif raw.dtype.kind not in "iu":
            raise KernelCVError("fold ids must be integers")
        _, ids = np.unique(raw, return_inverse=True)
        if ids.max() < 1:
            raise KernelCVError("fold ids name only one fold; need at least 2")
    if classifier:
        classes, counts = np.unique(y, return_counts=True)
        n_classes = classes.size
        for i in range(int(ids.max()) + 1):
            kept = np.unique(y[ids != i])
            if kept.size == n_classes and kept.size > 1:
                continue
            lost = counts[np.isin(classes, kept, invert=True)]
            lone = lost.size > 0 and bool(np.all(lost == 1))
            # a class with one sample is lost by the fold that holds it, whatever t is
            single = ("the lost class has a single sample, so no number of folds helps: "
                      "remove that sample or merge its class into another")
            if kept.size == 1:
                raise KernelCVError(
                    f"fold {i}: its training part has only one class; "
                    + (single if lone else "use fewer folds or stratified fold ids"))
            raise KernelCVError(
                f"fold {i}: its training part lacks {n_classes - kept.size} of the "
                f"{n_classes} classes (" + (single if lone else
                                            "fold ids that put a whole class in one fold")
                + "); every class needs members outside each fold")
    return ids


def _shuffler(random_state):
    """The in-place ``shuffle`` that ``random_state`` stands for (scikit-learn's
    ``check_random_state`` conventions, plus numpy Generators)."""
    if random_state is None:
        return np.random.shuffle  # numpy's global RandomState
    if isinstance(random_state, np.random.RandomState | np.random.Generator):
        return random_state.shuffle
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) \
            and 0 <= random_state < 2**32:
        return np.random.RandomState(int(random_state)).shuffle
    raise KernelCVError(
        "random_state must be None, an integer in [0, 2**32), a numpy.random.RandomState "
        f"or a numpy.random.Generator, got {random_state!r}")


def splitter_fold_ids(folds, X, y, groups=None):
    """Fold ids from a scikit-learn splitter or an iterable of (train, test) index pairs.

    ``folds`` that is an int, a string (``"auto"``) or an array of fold ids is returned
    unchanged (with ``groups`` refused: only a splitter uses them). A splitter
    (``KFold(5)``, ``StratifiedKFold``, ``GroupKFold`` with ``groups``, ``LeaveOneOut``,
    ``PredefinedSplit``, ...: any object with a ``split(X, y, groups)`` method) or a list
    of (train, test) pairs gives fold id k to the test indices of split k. The test sets
    must partition the samples and each training set must be the rest (the fast criteria
    hold out every sample exactly once); ``ShuffleSplit``-like splitters are refused.
    Cost: O(n t) for t splits.
    """
    splits = _splitter_pairs(folds, X, y, groups)
    if splits is None and not isinstance(folds, numbers.Integral | str | np.ndarray) \
            and folds is not None:
        items = list(folds) if hasattr(folds, "__iter__") else folds
        if _is_pair_list(items):
            splits = items
        else:
            folds = items
    if splits is None:
        if groups is not None:
            raise KernelCVError("groups are used only by a splitter such as GroupKFold; "
                                "pass cv=GroupKFold(5) with them")
        return folds
    n = y.shape[0] if hasattr(y, "shape") else len(y)
    ids = np.full(n, -1, dtype=np.int64)
    for k, (train, test) in enumerate(splits):
        test = _split_indices(test, n, k, "test")
        if np.any(ids[test] >= 0) or np.unique(test).size != test.size:
            raise KernelCVError("the splits' test sets overlap; kernelcv needs splits whose "
                                "test sets partition the samples (KFold, StratifiedKFold, "
                                "GroupKFold, LeaveOneOut, PredefinedSplit)")
        ids[test] = k
        train = _split_indices(train, n, k, "training")
        in_train = np.zeros(n, dtype=bool)
        in_train[train] = True
        held_out = np.zeros(n, dtype=bool)
        held_out[test] = True
        if (np.unique(train).size != train.size or np.any(in_train & held_out)
                or not np.all(in_train | held_out)):
            raise KernelCVError(f"split {k}: the training set is not the complement of the "
                                "test set (a test row in it, a row twice, or a row left "
                                "out); kernelcv trains each fold-out model on all other "
                                "samples")
    if np.any(ids < 0):
        raise KernelCVError(f"{int(np.sum(ids < 0))} samples are in no test set; kernelcv "
                            "needs splits whose test sets partition the samples (not "
                            "ShuffleSplit-like splitters)")
    if len(splits) < 2:
        raise KernelCVError("the splitter gave fewer than 2 splits; need at least 2")
    return ids


def explicit_splits(folds, X, y, groups=None):
    """The (train, test) pairs of a splitter (its ``split(X, y, groups)``) or of a list of
    pairs, as integer arrays; None for an int, a string or fold ids. For the fold-by-fold
    search, which takes any splits (``ShuffleSplit``, ``RepeatedKFold``), as GridSearchCV.
    """
    pairs = _splitter_pairs(folds, X, y, groups)
    if pairs is None and isinstance(folds, list | tuple) and _is_pair_list(list(folds)):
        pairs = list(folds)
    if pairs is None:
        return None
    n = y.shape[0] if hasattr(y, "shape") else len(y)
    if len(pairs) < 1:
        raise KernelCVError("the splitter gave no split")
    return [(_split_indices(train, n, k, "training"), _split_indices(test, n, k, "test"))
            for k, (train, test) in enumerate(pairs)]


def _splitter_pairs(folds, X, y, groups):
    """The (train, test) pairs of an object with a ``split(X, y, groups)`` method (a
    scikit-learn splitter), or None for anything else (a string has a ``split`` method
    too, and is not a splitter)."""
    if isinstance(folds, str) or not (hasattr(folds, "split") and callable(folds.split)):
        return None
    try:
        return list(folds.split(X, y, groups))
    except ValueError as error:
        raise KernelCVError(f"the splitter {type(folds).__name__} failed: {error}") from None


def partitions(splits, n: int) -> bool:
    """Whether the splits' test sets partition ``0..n-1`` with each training set the rest
    (what :func:`splitter_fold_ids` accepts)."""
    seen = np.zeros(n, dtype=np.int64)
    for train, test in splits:
        seen[test] += 1
        if train.size + test.size != n or np.intersect1d(train, test).size:
            return False
    return bool(np.all(seen == 1)) and len(splits) >= 2


def _split_indices(indices, n, k, which) -> np.ndarray:
    """The rows of one side of split k as integer positions in ``0..n-1`` (a boolean mask
    of length n is accepted); anything else is a one-line error, not numpy's."""
    array = np.asarray(indices).reshape(-1)
    if array.dtype == bool:
        if array.size != n:
            raise KernelCVError(f"split {k}: the {which} mask has {array.size} entries for "
                                f"{n} samples")
        return np.flatnonzero(array)
    if array.size == 0:
        return array.astype(np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise KernelCVError(f"split {k}: the {which} indices must be integers, got "
                            f"{array.dtype}")
    if array.min() < 0 or array.max() >= n:
        raise KernelCVError(f"split {k}: a {which} index is outside 0..{n - 1}")
    return array.astype(np.int64)


def _is_pair_list(items) -> bool:
    """Whether ``items`` is a list of (train, test) index pairs."""
    return isinstance(items, list) and bool(items) and all(
        isinstance(item, tuple | list) and len(item) == 2 and np.ndim(item[0]) == 1
        for item in items)


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    """``sample_weight`` as (n,) float64: finite, >= 0, not all 0; a one-line
    :class:`KernelCVError` otherwise."""
    try:
        values = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise KernelCVError("sample_weight must be an array of numbers") from None
    if values.ndim != 1 or values.shape[0] != n_samples:
        raise KernelCVError(f"sample_weight must have one weight per sample ({n_samples}), "
                            f"got shape {values.shape}")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise KernelCVError("sample_weight must be finite and >= 0")
    if not np.any(values > 0):
        raise KernelCVError("sample_weight: every weight is zero; give some rows a positive weight")
    return values
