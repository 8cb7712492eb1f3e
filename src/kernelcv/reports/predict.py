"""The library side of ``kernelcv predict``: a saved model's predictions on a data file.

LIBSVM's ``svm-predict`` for kernelcv: the model written by ``kernelcv select
--save-model`` (its scaling included) predicts every row of a file in any format
``kernelcv`` reads; when the file's targets are labels of the model's classes (or
numbers, for a regressor) the report gives the accuracy (the MSE). Predictions go, one
per line, to ``out`` (written atomically: the whole file or none) or into the report.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from ..exceptions import KernelCVError
from ..machines.saved_model import load_model
from ..reading.files import load_data
from .io import check_distinct_paths, new_file_mode

__all__ = ["run_predict"]


def run_predict(model_path, data, *, out=None, values=False, proba=False, header="auto",
                target=None) -> dict:
    """Predict ``data`` with the model at ``model_path``.

    Parameters
    ----------
    model_path : a file written by ``kernelcv select --save-model``.
    data : data file (svmlight, CSV or npz); its targets score the predictions.
    out : file for the predictions, one per line (None: returned in the report).
    values : write decision values (one column per binary machine, space-separated)
        instead of labels.
    proba : write each label followed by the class probabilities (a first line
        ``labels C1 C2 ...`` names the columns, as LIBSVM's ``svm-predict -b 1``); the
        report then has ``log_loss`` where the targets are the model's classes.
    header, target : CSV options, as ``kernelcv select`` takes them.

    Returns
    -------
    dict with ``model``, ``data``, ``n_samples``, ``task`` (classification or
    regression), ``accuracy`` (classifiers whose targets are among the model's classes,
    else None) or ``mse`` (regressors), ``log_loss`` (with ``proba``), ``out`` and
    ``predictions`` (None when written to ``out``).
    """
    if values and proba:
        raise KernelCVError("give values or proba, not both")
    check_distinct_paths({"--output": out}, {"MODEL": model_path, "DATA": data})
    model = load_model(model_path)
    if proba and model.classes_ is None:
        raise KernelCVError(f"{model_path}: a regression model has no class probabilities")
    if proba and model.calibration is None:
        model.predict_proba(np.zeros((0, 1)))  # its one-line reason
    X, y = load_data(data, header=header, target=target)
    predicted = model.predict(X)
    classifier = model.classes_ is not None
    report = {"model": os.fspath(model_path), "data": os.fspath(data),
              "n_samples": int(X.shape[0]),
              "task": "classification" if classifier else "regression",
              "accuracy": None, "mse": None, "log_loss": None,
              "out": None if out is None else os.fspath(out), "predictions": None}
    probabilities = model.predict_proba(X) if proba else None
    if classifier:
        known = np.isin(y, model.classes_)
        if known.all():
            report["accuracy"] = float(np.mean(predicted == y))
            if probabilities is not None:
                rows = np.searchsorted(np.asarray(model.classes_), y)
                chosen = probabilities[np.arange(y.shape[0]), rows]
                report["log_loss"] = float(-np.mean(np.log(np.maximum(chosen, 1e-300))))
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            report["mse"] = float(np.mean((np.asarray(y, dtype=np.float64) - predicted) ** 2))
    if values:
        lines = _value_lines(model.decision_function(X))
    elif proba:
        lines = ["labels " + " ".join(_label(c) for c in model.classes_)]
        lines += [f"{_label(label)} " + " ".join(f"{p:.6g}" for p in row)
                  for label, row in zip(predicted, probabilities, strict=True)]
    else:
        lines = [_label(v) for v in predicted]
    if out is None:
        report["predictions"] = lines
    else:
        _write_atomically(out, "".join(line + "\n" for line in lines))
    return report


def _label(value) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _value_lines(decision) -> list[str]:
    decision = np.atleast_2d(np.asarray(decision, dtype=np.float64).T).T
    return [" ".join(f"{v:.17g}" for v in row) for row in decision]


def _write_atomically(path, text: str) -> None:
    """The whole file or none: a temporary file beside it, synced, then renamed."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise KernelCVError(f"--output {path}: is a folder; give a file name")
    if not os.path.isdir(folder):
        raise KernelCVError(f"--output {path}: the folder {folder} does not exist")
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".kernelcv-predict-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, new_file_mode())
        os.replace(temporary, path)
    except OSError as exc:
        _remove(temporary)
        raise KernelCVError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        _remove(temporary)
        raise


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass
