"""``kernelcv select --stream``: the training (and test) file read in row chunks.

With ``--method rff`` the search needs the training rows only through sums over chunks
(:mod:`kernelcv.random_features.sums`), so the file is never loaded whole: it is opened
as a row source (:mod:`kernelcv.reading.rowchunks`), scanned once (row count, targets, every
line checked), then read again for each pass. The final model is then the linear model
in feature space (the exact kernel machine needs the rows in memory), and the test error
is counted a chunk of test rows at a time.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import KernelCVError
from ..random_features.method import FeatureSpace
from ..reading.files import file_format
from ..reading.rowchunks import chunk_rows_for, open_rows
from ..reading.textchunks import open_svmlight_files


def check_stream(method, scale, final, plot):
    """Refuse, before any work, what a streamed search cannot do (``method``: the search's
    method object)."""
    if not isinstance(method, FeatureSpace):
        raise KernelCVError("--stream reads the training rows in chunks; only --method rff "
                            "needs them as sums over chunks")
    if scale != "none":
        raise KernelCVError("--scale is fitted on the training data in memory; scale the "
                            "file beforehand, or drop --stream")
    if final == "kernel":
        raise KernelCVError("--final kernel fits the exact kernel machine on the rows in "
                            "memory; with --stream the final model is fitted in feature "
                            "space (--final auto or linear)")
    if plot:
        raise KernelCVError("--plot draws exact refit CV curves on the rows in memory; drop "
                            "it with --stream")


def open_streamed(data, test=None, header="auto"):
    """The row sources of the training and (optional) test file; two svmlight files are
    scanned together (one index base and width, as when they are loaded)."""
    if test is not None and file_format(data) == file_format(test) == "svmlight":
        return tuple(open_svmlight_files(data, test))
    train = open_rows(data, header)
    return train, None if test is None else open_rows(test, header)


def streamed_test_error(model, source, n_dims, metric, known=None, predictions=None):
    """The 0-1 error or MSE of ``model`` on a test source, a chunk of rows at a time.

    ``known``: the training labels (a test label outside them is an error).
    ``predictions``: a list that receives the test labels and the predicted labels (two
    arrays of the test set's length: a multiclass report's confusion matrix).
    """
    if source.n_dims != n_dims:
        raise KernelCVError(f"{source.path}: test data has {source.n_dims} features but the "
                            f"training data has {n_dims}")
    labels = source.labels()
    if known is not None:
        unknown = sorted(set(np.unique(labels).tolist()) - set(known))
        if unknown:
            raise KernelCVError(f"{source.path}: test labels {unknown[:3]} do not occur in "
                                "the training data")
    total = 0.0
    predicted_parts, label_parts = [], []
    for _, X, y in source.chunks(chunk_rows_for(model.n_features, source.row_bytes)):
        predicted = model.predict(X)
        if predictions is not None:
            predicted_parts.append(predicted)
            label_parts.append(y)
        if metric == "0-1":
            total += float(np.sum(predicted != y))
        else:
            total += float(np.sum((predicted - y.astype(np.float64)) ** 2))
    if predictions is not None and label_parts:
        predictions.extend([np.concatenate(label_parts), np.concatenate(predicted_parts)])
    return total / labels.size
