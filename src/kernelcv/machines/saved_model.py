"""Saving a fitted :class:`~kernelcv.machines.model.KernelModel` or a linear model in
random-feature space (:class:`~kernelcv.features.LinearFeatureModel`, the final model of
``--method rff`` for large n) in a file that loads without executing code, and
:func:`load_model`.

The file is a NumPy ``.npz`` archive of plain numeric arrays plus one string array,
``header``, holding JSON: the format name and version, the kernelcv version, the machine
(name, loss parameters, intercept setting, multiclass scheme), the kernel and its
parameters, ``lam``, the feature scaling fitted on the training data, and which arrays
are present. It is read with ``numpy.load(..., allow_pickle=False)``, so a file from
elsewhere cannot run code on loading (unlike pickle); a file that is not such an archive,
or whose arrays do not fit the header, is refused with a one-line
:class:`~kernelcv.exceptions.KernelCVError`.

Arrays: ``X_fit`` (dense training rows) or ``X_data``/``X_indices``/``X_indptr`` (CSR),
``dual_coef`` ((n,) or (n, m) for m binary machines), ``intercept``, ``classes`` (for a
classifier) and ``scale_shift``/``scale_scale`` (the ``--scale`` of ``kernelcv select``,
applied to new data before the kernel). The model predicts raw (unscaled) data.

A feature-space model (format version 2, header ``"model": "feature_space"``) stores
instead its map -- ``W0`` and ``b`` (RFF) or the landmark rows ``landmarks`` (or
``L_data``/``L_indices``/``L_indptr``, CSR) -- the linear coefficients ``coef``, their
image ``coef_on_columns`` on the map's kernel columns (what prediction multiplies),
``intercept`` and ``classes``; the header has the map (kind, D, gamma, seed). A multiclass
feature-space model has one column of ``coef``/``coef_on_columns`` and one ``intercept``
per binary machine of its scheme (the header's ``machine.multiclass``) and all its
``classes``. Version 1 files (kernel models) still load.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np
import scipy.sparse as sp

from .._version import __version__
from ..exceptions import KernelCVError
from ..features import RFF, FeatureMap, LinearFeatureModel
from ..kernels import Kernel
from ..memory import format_bytes, memory_budget
from . import MACHINES, make_machine
from .calibration import calibration_from_dict, machine_probabilities
from .model import KernelModel
from .multiclass import MulticlassFeatureModel

FORMAT = "kernelcv-model"
FORMAT_VERSION = 2
_READS = (1, 2)

__all__ = ["FORMAT", "FORMAT_VERSION", "SavedModel", "check_model_path", "load_model",
           "save_model"]


class SavedModel:
    """A loaded kernelcv model: ``predict``, ``decision_function`` and ``score`` on raw
    data.

    Attributes
    ----------
    header : dict
        The file's JSON header (machine, kernel, lam, scaling, versions).
    model : :class:`~kernelcv.machines.model.KernelModel`
        The fitted machine (on scaled data when the header names a scaling).
    classes_ : the labels of a classifier (None for a regressor).
    calibration : the probability scale of ``predict_proba``
        (:mod:`kernelcv.machines.calibration`), or None when the file has none.
    """

    def __init__(self, model, header: dict, shift=None, scale=None):
        self.model = model
        self.header = header
        self.shift = shift
        self.scale = scale
        self.classes_ = getattr(model, "classes_", None)
        if isinstance(model, LinearFeatureModel) and model.classes is not None:
            self.classes_ = np.asarray(model.classes)
        entry = header.get("calibration")
        self.calibration = None if entry is None else calibration_from_dict(entry)
        if entry is not None and (self.classes_ is None or getattr(
                self.calibration, "n_classes", self.classes_.size) != self.classes_.size):
            raise ValueError("the calibration does not fit the classes")

    def _prepare(self, X):
        if not sp.issparse(X):
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 2:
                raise KernelCVError(f"X must be a 2-D array, got shape {X.shape}")
        else:
            X = sp.csr_matrix(X, dtype=np.float64)
        d = int(self.header["n_features"])
        if sp.issparse(X) and X.shape[1] < d:  # svmlight files omit trailing zero columns
            X.resize((X.shape[0], d))
        if X.shape[1] != d:
            raise KernelCVError(f"X has {X.shape[1]} features but the model has {d}")
        if self.scale is None:
            return X
        if sp.issparse(X):
            return sp.csr_matrix(X.multiply(1.0 / self.scale))
        return (X if self.shift is None else X - self.shift) / self.scale

    def decision_function(self, X):
        """The machine's decision values on raw ``X`` (one column per binary machine
        with more than two classes)."""
        return self.model.decision_function(self._prepare(X))

    def predict(self, X):
        """Labels of a classifier, predicted values of a regressor, on raw ``X``."""
        return self.model.predict(self._prepare(X))

    def predict_proba(self, X):
        """(n, k) class probabilities on raw ``X``, columns in ``classes_`` order: the
        decision values scaled by the calibration fitted when the model was saved (on
        the chosen candidate's out-of-fold values); the most probable class is always
        the predicted one."""
        if self.calibration is None:
            raise KernelCVError(
                "this model has no probability calibration: it is a regressor, a "
                "random-feature (--method rff) model, or was saved before kernelcv kept "
                "probabilities with its models; save it again with kernelcv select "
                "--save-model")
        machine = self.model.machine
        return machine_probabilities(self.calibration, self.decision_function(X),
                                     int(self.classes_.size), machine.multiclass)

    def score(self, X, y) -> float:
        """scikit-learn's default score: accuracy for a classifier, R^2 for a regressor
        (1 - residual sum of squares / total sum of squares about y's mean)."""
        predicted = self.predict(X)
        y = np.asarray(y)
        if predicted.shape[0] != y.shape[0]:
            raise KernelCVError(f"X has {predicted.shape[0]} rows but y has {y.shape[0]}")
        if self.classes_ is not None:
            return float(np.mean(predicted == y))
        y = y.astype(np.float64)
        total = float(np.sum((y - y.mean()) ** 2))
        residual = float(np.sum((y - predicted) ** 2))
        return 1.0 - residual / total if total > 0 else (1.0 if residual == 0 else 0.0)


def check_model_path(path) -> None:
    """Refuse, before any work, a model path whose folder is missing or not writable or
    that names a folder."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise KernelCVError(f"--save-model {path}: is a folder; give a file name")
    if not os.path.isdir(folder):
        raise KernelCVError(f"--save-model {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise KernelCVError(f"--save-model {path}: the folder {folder} is not writable")


def save_model(path, model, scaling: dict | None = None, machine=None, lam=None,
               calibration=None) -> str:
    """Write the fitted ``model`` (and the ``scaling`` fitted on its training data, a dict
    with ``kind``, ``shift`` and ``scale`` as :mod:`kernelcv.reports.scaling` makes) to
    ``path`` atomically; returns the path as a string.

    ``model``: a :class:`KernelModel`, or a :class:`~kernelcv.features.LinearFeatureModel`
    with the ``machine`` it stands for and its ``lam``. ``calibration``: a classifier's
    probability scale (:mod:`kernelcv.machines.calibration`), kept in the header for
    ``predict_proba``."""
    if isinstance(model, LinearFeatureModel):
        arrays, header = _feature_model(model, machine, lam)
        return _write(path, arrays, header, scaling)
    machine, kernel = model.machine, model.kernel
    arrays = {"dual_coef": np.asarray(model.dual_coef_, dtype=np.float64),
              "intercept": np.atleast_1d(np.asarray(model.intercept_, dtype=np.float64))}
    X_fit = model.X_fit_
    if sp.issparse(X_fit):
        X_fit = sp.csr_matrix(X_fit)
        arrays.update(X_data=X_fit.data, X_indices=X_fit.indices, X_indptr=X_fit.indptr)
    else:
        arrays["X_fit"] = np.asarray(X_fit, dtype=np.float64)
    if machine.is_classifier:
        arrays["classes"] = _classes(model.classes_)
    header = {
        "model": "kernel", "machine": _machine_entry(machine),
        "kernel": {"name": kernel.name, "gamma": float(kernel.gamma),
                   "degree": int(kernel.degree), "coef0": float(kernel.coef0)},
        "lam": float(model.lam), "n_features": int(X_fit.shape[1]),
        "n_samples": int(X_fit.shape[0]), "sparse": sp.issparse(X_fit),
    }
    if calibration is not None and machine.is_classifier:
        header["calibration"] = calibration.to_dict()
    return _write(path, arrays, header, scaling)


def _classes(classes):
    classes = np.asarray(classes)
    if classes.dtype.kind not in "biufU":
        raise KernelCVError("--save-model: labels must be numbers or strings")
    return classes


def _machine_entry(machine) -> dict:
    return {"name": machine.name, "fit_intercept": bool(machine.fit_intercept),
            "huber_width": float(getattr(machine.loss, "width", 0.01)),
            "svr_epsilon": float(getattr(machine.loss, "epsilon", 0.1)),
            "multiclass": machine.multiclass}


def _feature_model(model: LinearFeatureModel, machine, lam):
    """The arrays and header of a feature-space model."""
    fmap = model.feature_map
    arrays = {"coef": model.w, "coef_on_columns": model.coef_on_columns,
              "intercept": np.atleast_1d(np.asarray(model.c, dtype=np.float64))}
    if fmap.kind == RFF:
        arrays.update(W0=np.asarray(fmap.W0_), b=np.asarray(fmap.b_))
    elif sp.issparse(fmap.landmarks_):
        L = sp.csr_matrix(fmap.landmarks_)
        arrays.update(L_data=L.data, L_indices=L.indices, L_indptr=L.indptr)
    else:
        arrays["landmarks"] = np.asarray(fmap.landmarks_, dtype=np.float64)
    if model.classes is not None:
        arrays["classes"] = _classes(list(model.classes))
    entry = _machine_entry(machine)
    if model.strategy is not None:  # the model's own scheme, whatever the machine says
        entry["multiclass"] = model.strategy
    header = {"model": "feature_space", "machine": entry,
              "feature_map": {"kind": fmap.kind, "n_features": int(fmap.n_features),
                              "gamma": model.gamma, "seed": fmap.random_state,
                              "sparse": bool(sp.issparse(getattr(fmap, "landmarks_",
                                                                 None)))},
              "lam": float(lam), "n_features": int(fmap.n_dims_)}
    return arrays, header


def _write(path, arrays, header, scaling) -> str:
    """Add the scaling and the common header entries; write the archive atomically."""
    if scaling is not None:
        arrays["scale_scale"] = np.asarray(scaling["scale"], dtype=np.float64)
        if scaling.get("shift") is not None:
            arrays["scale_shift"] = np.asarray(scaling["shift"], dtype=np.float64)
    header = {"format": FORMAT, "format_version": FORMAT_VERSION,
              "kernelcv_version": _version(), **header,
              "scaling": None if scaling is None else scaling["kind"],
              "arrays": sorted(arrays)}
    arrays["header"] = np.array(json.dumps(header))
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".kernelcv-model-", suffix=".npz")
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez_compressed(stream, **arrays)
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as an ordinary new file, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_model(path, memory_budget_bytes=None) -> SavedModel:
    """Load a model written by ``kernelcv select --save-model`` (or :func:`save_model`).

    No code is executed: the file is read as plain arrays (``allow_pickle=False``) and a
    JSON header. Before any array is read, each member's ``.npy`` header (shape, dtype)
    is checked against the size the archive records for it, and their total against
    ``memory_budget_bytes`` (default: :func:`kernelcv.memory.memory_budget`), so a small
    damaged or forged file cannot make the loader allocate gigabytes. Raises
    :class:`~kernelcv.exceptions.KernelCVError` (one line) for a file that is not a
    kernelcv model or is damaged.

    Returns
    -------
    SavedModel
        With ``predict(X)``, ``decision_function(X)`` and ``classes_``.
    """
    path = os.fspath(path)
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise KernelCVError(f"{path}: not a kernelcv model file (not an .npz archive)")
    if os.path.isfile(path):
        _check_members(path, memory_budget(memory_budget_bytes))
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except OSError as exc:
        if not os.path.exists(path):
            raise KernelCVError(f"{path}: no such file") from None
        raise KernelCVError(f"{path}: not a kernelcv model file ({exc})") from None
    except (ValueError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        raise KernelCVError(f"{path}: not a kernelcv model file "
                            f"({' '.join(str(exc).split()) or type(exc).__name__})") from None
    try:
        return _build(arrays)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise KernelCVError(f"{path}: not a valid kernelcv model file ({detail})") from None


def _check_members(path, budget: int) -> None:
    """Refuse an archive whose arrays' headers disagree with their stored sizes, hold
    objects, or add up to more than ``budget`` bytes. Reads only the headers: O(members).
    """
    total = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _fortran, dtype = read_header(member, max_header_size=10_000)
                    header_bytes = member.tell()
                if dtype.hasobject:
                    raise KernelCVError(f"{path}: not a kernelcv model file (array "
                                        f"{info.filename} holds Python objects)")
                size = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if size + header_bytes != info.file_size:
                    raise KernelCVError(
                        f"{path}: damaged kernelcv model file (array {info.filename}: its "
                        f"header says {format_bytes(size)}, the archive holds "
                        f"{format_bytes(max(info.file_size - header_bytes, 0))})")
                total += size
    except (ValueError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise KernelCVError(f"{path}: not a kernelcv model file "
                            f"({' '.join(str(exc).split()) or type(exc).__name__})") from None
    if total > budget:
        raise KernelCVError(f"{path}: its arrays need {format_bytes(total)}, above the memory "
                            f"budget {format_bytes(budget)} (set KERNELCV_MEMORY_BUDGET to "
                            "load it anyway)")


def _build(arrays) -> SavedModel:
    if "header" not in arrays:
        raise ValueError("no header")
    header = json.loads(str(arrays.pop("header")[()]))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("no kernelcv-model header")
    if header.get("format_version") not in _READS:
        raise ValueError(f"format version {header.get('format_version')!r}, this kernelcv "
                         f"reads {', '.join(map(str, _READS))}")
    if sorted(arrays) != sorted(header["arrays"]):
        raise ValueError("its arrays do not match the header")
    spec = header["machine"]
    if spec["name"] not in MACHINES:
        raise ValueError(f"unknown machine {spec['name']!r}")
    # every file written so far names its scheme; one without it dates from the
    # one-vs-rest default, so it loads as that (never as the current default)
    machine = make_machine(spec["name"], huber_width=spec["huber_width"],
                           epsilon=spec["svr_epsilon"], fit_intercept=spec["fit_intercept"],
                           multiclass=spec.get("multiclass", "ovr"))
    if header.get("model", "kernel") == "feature_space":
        return SavedModel(_feature_model_of(arrays, header), header,
                          *_scaling_of(arrays, int(header["n_features"])))
    k = header["kernel"]
    kernel = Kernel(name=k["name"], gamma=float(k["gamma"]), degree=int(k["degree"]),
                    coef0=float(k["coef0"]))
    n, d = int(header["n_samples"]), int(header["n_features"])
    if header["sparse"]:
        X_fit = sp.csr_matrix((arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]),
                              shape=(n, d))
        X_fit.check_format(full_check=True)
    else:
        X_fit = arrays["X_fit"]
    coef, intercept = arrays["dual_coef"], arrays["intercept"]
    columns = 1 if coef.ndim == 1 else coef.shape[1]
    if X_fit.shape != (n, d) or coef.shape[0] != n or intercept.shape != (columns,):
        raise ValueError("array shapes do not fit together")
    model = KernelModel(machine, kernel, float(header["lam"]))
    model.X_fit_ = X_fit
    model.dual_coef_ = coef
    model.intercept_ = intercept if coef.ndim == 2 else float(intercept[0])
    if machine.is_classifier:
        model.classes_ = arrays["classes"]
        k = model.classes_.size
        machines = k if machine.multiclass == "ovr" else k * (k - 1) // 2
        if k < 2 or (k == 2 and coef.ndim != 1) or (k > 2 and columns != machines):
            raise ValueError("the classes do not fit the coefficients")
    return SavedModel(model, header, *_scaling_of(arrays, d))


def _scaling_of(arrays, d):
    shift = arrays.get("scale_shift")
    scale = arrays.get("scale_scale")
    for extra in (shift, scale):
        if extra is not None and extra.shape != (d,):
            raise ValueError("the scaling does not fit the features")
    return shift, scale


def _feature_model_of(arrays, header) -> LinearFeatureModel:
    """The :class:`LinearFeatureModel` of a version-2 feature-space file."""
    spec, d = header["feature_map"], int(header["n_features"])
    D = int(spec["n_features"])
    fmap = FeatureMap(spec["kind"], D, spec["seed"], nested=True)
    fmap.n_dims_ = d
    if fmap.kind == RFF:
        fmap.W0_, fmap.b_ = arrays["W0"], arrays["b"]
        if fmap.W0_.shape != (d, D) or fmap.b_.shape != (D,):
            raise ValueError("the feature map's arrays do not fit its size")
    else:
        if spec["sparse"]:
            L = sp.csr_matrix((arrays["L_data"], arrays["L_indices"], arrays["L_indptr"]),
                              shape=(D, d))
            L.check_format(full_check=True)
        else:
            L = arrays["landmarks"]
        if L.shape != (D, d):
            raise ValueError("the landmarks do not fit the feature map")
        fmap.set_landmarks(L)
    coef, columns, intercept = arrays["coef"], arrays["coef_on_columns"], arrays["intercept"]
    classes = arrays.get("classes")
    if classes is not None and classes.ndim == 1 and classes.size > 2:  # a scheme
        strategy = header["machine"]["multiclass"]
        k = classes.size
        m = k if strategy == "ovr" else k * (k - 1) // 2
        if coef.shape != (D, m) or columns.shape != (D, m) or intercept.shape != (m,):
            raise ValueError("the classes do not fit the coefficients")
        return MulticlassFeatureModel(fmap, float(spec["gamma"]), coef, intercept, classes,
                                      strategy, coef_on_columns=columns)
    if coef.shape != (D,) or columns.shape != (D,) or intercept.shape != (1,):
        raise ValueError("array shapes do not fit together")
    if classes is not None and classes.shape != (2,):
        raise ValueError("a feature-space classifier has two classes or more")
    return LinearFeatureModel(fmap, float(spec["gamma"]), coef, float(intercept[0]),
                              None if classes is None else tuple(classes),
                              coef_on_columns=columns)


def _version() -> str:
    return __version__
