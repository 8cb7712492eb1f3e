"""What ``kernelcv bench`` runs: the data sets, the machines ("tables") and the grids of each mode.

Data sets are the LIBSVM benchmark sets of the BIF papers, read from a data folder laid
out like ``../shared/datasets`` (``libsvm/<name>.svm[.gz]``, ``uci_raw/<name>.data``).
The folder is, in this order: the ``data_dir`` argument (``--data-dir``), the environment
variable ``KERNELCV_DATA``, or ``shared/datasets`` next to the repository checkout.

Modes
-----
``quick``
    3 splits, a 7 x 7 grid (sigma = 2^-2..2^4, lam = 2^i / n for i = -3, -1, ..., 9;
    polynomial degree 1..4) on the small sets (training half of at most 200 samples).
``full``
    10 splits, the papers' default 21 x 15 grid (sigma = 2^-10..2^10, lam = 2^i / n for
    i = -3..11; degree 1..8, or the fast-CV paper's 1..10 with ``--protocol paper``) on
    every set whose training half has at most 600 samples
    (a2a needs ``--max-train 1200``; cpusmall and abalone are larger still).

Loading a set costs one pass over its file; everything else here is O(1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..exceptions import KernelCVError
from ..reading.files import load_data
from ..selection.space.grids import default_degrees, default_gammas, default_lams

ENV_DATA = "KERNELCV_DATA"


@dataclass(frozen=True)
class DataSpec:
    """One benchmark set: its task and the files that may hold it (first found wins).

    ``files`` entries are ``(relative path, already scaled)``; unscaled files are min-max
    scaled to [-1, 1] with the training half's statistics at each split.
    """

    name: str
    task: str  # "classification" or "regression"
    files: tuple[tuple[str, bool], ...]


def _libsvm(name, scaled=True):
    return tuple((f"libsvm/{name}{suffix}", scaled) for suffix in (".svm", ".svm.gz"))


DATASETS: dict[str, DataSpec] = {spec.name: spec for spec in (
    DataSpec("australian", "classification",
             _libsvm("australian_scale") + _libsvm("australian", False)),
    DataSpec("heart", "classification", _libsvm("heart_scale")),
    DataSpec("ionosphere", "classification",
             _libsvm("ionosphere_scale") + (("uci_raw/ionosphere.data", False),)),
    DataSpec("breast-cancer", "classification",
             _libsvm("breast-cancer_scale") + _libsvm("breast-cancer", False)),
    DataSpec("diabetes", "classification", _libsvm("diabetes_scale")),
    DataSpec("fourclass", "classification", _libsvm("fourclass_scale")),
    DataSpec("german.numer", "classification",
             _libsvm("german.numer_scale") + _libsvm("german.numer", False)),
    # The 345-row file (the scaled LIBSVM copy holds only the 145 training rows).
    DataSpec("liver-disorders", "classification", _libsvm("liver-disorders", False)),
    DataSpec("sonar", "classification",
             _libsvm("sonar_scale") + (("uci_raw/sonar.all-data", False),)),
    DataSpec("a2a", "classification", _libsvm("a2a")),
    DataSpec("bodyfat", "regression", _libsvm("bodyfat_scale")),
    DataSpec("housing", "regression", _libsvm("housing_scale")),
    DataSpec("pyrim", "regression", _libsvm("pyrim_scale")),
    DataSpec("triazines", "regression", _libsvm("triazines")),
    DataSpec("cpusmall", "regression",
             _libsvm("cpusmall_scale") + _libsvm("cpusmall", False)),
    DataSpec("abalone", "regression", _libsvm("abalone_scale")),
)}


@dataclass(frozen=True)
class TableSpec:
    """One results table: a machine with one kernel, run on the sets of its task."""

    name: str
    title: str
    machine: str
    kernel: str
    task: str


TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (
    TableSpec("lssvm-rbf", "LS-SVM (no bias, as KernelRidge), Gaussian kernel", "lssvm",
              "rbf", "classification"),
    TableSpec("lssvm-poly", "LS-SVM (no bias, as KernelRidge), polynomial kernel", "lssvm",
              "poly", "classification"),
    TableSpec("l2svm", "L2-SVM (squared hinge), Gaussian kernel", "l2svm", "rbf",
              "classification"),
    TableSpec("svm", "Huber-SVM (h = 0.01), Gaussian kernel", "svm", "rbf", "classification"),
    TableSpec("krr", "Kernel ridge regression, Gaussian kernel", "krr", "rbf", "regression"),
    TableSpec("svr", "Huber-SVR (h = 0.01, tube 0.1), Gaussian kernel", "svr", "rbf",
              "regression"),
)}


@dataclass(frozen=True)
class Mode:
    """Settings of one benchmark mode (see the module docstring)."""

    name: str
    splits: int
    sets: tuple[str, ...]
    max_train: int
    sigma_exponents: tuple[int, ...] | None  # None: the papers' default gamma grid
    lam_exponents: tuple[int, ...] | None  # None: the papers' default lam grid
    degrees: tuple[int, ...]
    orders: tuple[int, ...]  # BIF orders of the convergence figure

    def gammas(self, width: str = "sigma2") -> list[float]:
        """The gamma grid, ascending in gamma: ``1 / (2 sigma^2)`` (``width="sigma2"``,
        scikit-learn's and our convention) or ``1 / (2 sigma)`` (``"sigma"``, as printed
        in the granularity paper), for ``sigma = 2^k`` over the mode's exponents."""
        exponents = (range(10, -11, -1) if self.sigma_exponents is None
                     else self.sigma_exponents)
        if width == "sigma2":
            return (default_gammas() if self.sigma_exponents is None
                    else [1.0 / (2.0 * 4.0**k) for k in exponents])
        if width == "sigma":
            return [1.0 / (2.0 * 2.0**k) for k in exponents]
        raise KernelCVError(f"unknown kernel width convention {width!r}")

    def degree_grid(self, protocol=None) -> tuple[int, ...]:
        """The polynomial degrees: the protocol's printed grid in full mode (the papers'
        grid), else the mode's (quick mode keeps its 1..4 subgrid)."""
        papers = protocol is not None and protocol.degrees is not None
        return protocol.degrees if papers and self.sigma_exponents is None else self.degrees

    def lams(self, n_train: int) -> list[float]:
        if self.lam_exponents is None:
            return default_lams(n_train)
        return [2.0**i / n_train for i in self.lam_exponents]


@dataclass(frozen=True)
class Protocol:
    """How the bench turns the papers' printed set-up into runs (``--protocol``).

    ``ours`` (the default) uses scikit-learn's RBF ``gamma = 1 / (2 sigma^2)``,
    standardised regression targets and an SVR tube of 0.1 (Huber width 0.01); ``paper``
    follows the papers' printed protocol where it differs: the Gaussian kernel
    ``exp(-||x - x'||^2 / (2 sigma))`` (gamma = 1 / (2 sigma), the granularity paper's
    formula; the fast-CV paper's is unreadable), regression targets in their own units
    (centred by the training half's mean, not scaled: the bias-free KRR and SVR would
    otherwise have to fit the mean through the kernel), and the SVR tube equal to the
    training half's std(y) with Huber width 0.01 x tube, liver-disorders in its old
    coding (:func:`liver_selector_coding`), and a bias term in the LS-SVM and SVMs (the
    papers' CV references, LIBSVM among them, fit one); ``paper-bias-free`` is ``paper``
    with the bias-free machines of the BIF formulas (and of ``ours``). All keep
    lam = 2^i / n. ``paper`` also takes the fast-CV paper's polynomial degrees
    d = 1..10 (its Table 3's LS-SVM grid) in full mode, where ``ours`` has 1..8, and the
    granularity paper's own BIF order for ``eps-BIF`` on its Huber-SVM (eq. 6's r;
    ``ours`` stops the series by its observed tail, ``eps_rule="adaptive"``).
    """

    name: str
    width: str  # "sigma2" | "sigma", see Mode.gammas
    targets: str  # regression targets: "standardize" (centre, unit variance) | "center"
    svr_tube: float | None  # None: std(y) of the training half
    svr_huber_ratio: float | None  # Huber width = ratio x tube (None: a fixed 0.01)
    liver_coding: str = "current"  # liver-disorders labels: "current" | "selector"
    intercept: bool | None = None  # bias term of the LS-SVM and SVMs (None: bias-free)
    degrees: tuple[int, ...] | None = None  # full mode's poly degrees (None: the mode's)
    eps_rule: str = "adaptive"  # eps-BIF's order on the Huber-SVM: "adaptive" | "bound"

    def eps_rule_for(self, machine: str) -> str:
        """The eps-BIF order rule of ``machine``: the protocol's on the granularity paper's
        machine (the Huber-SVM, whose eq. 6 has the Huber width in it), ``"adaptive"``
        on the others (no paper cell; eq. 6's r grows with max k(x, x), about 10^6 terms
        for the polynomial kernel at the smallest lam)."""
        return self.eps_rule if machine == "svm" else "adaptive"


PAPER_DEGREES = tuple(range(1, 11))  # fast-CV paper, LS-SVM: d in {1, ..., 10}

PROTOCOLS = {
    "ours": Protocol("ours", "sigma2", "standardize", 0.1, None),
    # with a bias term: the papers' CV references ran LIBSVM (L1-SVM, SVR) and LS-SVM /
    # L2-SVM codes that fit one; measured closer to the papers (docs/results.md)
    "paper": Protocol("paper", "sigma", "center", None, 0.01, "selector", True,
                      PAPER_DEGREES, "bound"),
    # the BIF formulas' bias-free machines, otherwise as "paper"
    "paper-bias-free": Protocol("paper-bias-free", "sigma", "center", None, 0.01,
                                "selector", None, PAPER_DEGREES, "bound"),
}

LIVER_SELECTOR_ROWS = 145  # liver-disorders.svm: rows 1-145 have UCI selector = 1


def liver_selector_coding(X, y):
    """The old LIBSVM coding of liver-disorders, as far as the current file allows.

    The papers used the old version (label = the UCI ``selector`` field, the features
    the five blood tests and ``drinks``); the current file's label is ``drinks > 3`` and
    its rows 1-145 are the selector = 1 rows. This returns the selector as the label
    (+1 for rows 1-145) and the five tests plus the ``drinks > 3`` bit (as -1/+1) as
    features: the number of drinks itself is not in the file. O(n d).
    """
    if y.shape[0] != 345:
        raise KernelCVError(f"liver-disorders: expected the 345-row file, got {y.shape[0]}")
    label = np.where(np.arange(y.shape[0]) < LIVER_SELECTOR_ROWS, 1.0, -1.0)
    return np.column_stack([X, np.where(y > 0, 1.0, -1.0)]), label


MODES = {
    "quick": Mode("quick", 3,
                  ("heart", "sonar", "liver-disorders", "ionosphere",
                   "pyrim", "triazines", "bodyfat"),
                  200, tuple(range(4, -3, -1)), tuple(range(-3, 10, 2)), (1, 2, 3, 4),
                  (1, 2, 3, 5, 8, 12, 20)),
    "full": Mode("full", 10, tuple(DATASETS), 600, None, None, tuple(default_degrees()),
                 (1, 2, 3, 5, 8, 12, 20, 30, 50)),
}


def candidate_data_dirs() -> list[Path]:
    """Where the data folder is looked for when none is given (in order)."""
    if os.environ.get(ENV_DATA):  # an explicit choice: no silent fallback
        return [Path(os.environ[ENV_DATA])]
    here = Path(__file__).resolve()
    return [here.parents[4] / "shared" / "datasets",  # <repo>/../shared/datasets
            Path.cwd() / ".." / "shared" / "datasets"]


def resolve_data_dir(data_dir=None) -> Path:
    """The data folder: ``data_dir``, else ``$KERNELCV_DATA``, else next to the checkout.

    Raises
    ------
    KernelCVError
        When no candidate folder exists; the message lists where it looked and how to
        point elsewhere.
    """
    places = [Path(data_dir)] if data_dir is not None else candidate_data_dirs()
    for place in places:
        if place.is_dir():
            return place
    looked = ", ".join(str(p) for p in places)
    raise KernelCVError(
        f"data folder not found (looked in: {looked}); give it with --data-dir DIR or set "
        f"{ENV_DATA}=DIR (a folder with libsvm/*.svm files, e.g. the LIBSVM benchmark sets)")


def check_names(names, known, what: str) -> list[str]:
    """Validate a list of names against the known ones (order kept, duplicates dropped)."""
    names = list(dict.fromkeys(names))
    unknown = [name for name in names if name not in known]
    if unknown:
        raise KernelCVError(f"unknown {what} {', '.join(map(repr, unknown))}; "
                            f"known: {', '.join(known)}")
    if not names:
        raise KernelCVError(f"no {what} given; known: {', '.join(known)}")
    return names


def find_file(spec: DataSpec, data_dir: Path):
    """``(path, scaled)`` of the first existing file of ``spec``, or None."""
    for relative, scaled in spec.files:
        path = data_dir / relative
        if path.is_file():
            return path, scaled
    return None


def load_set(spec: DataSpec, path: Path):
    """Dense ``X`` and ``y`` (+-1 labels for classification; smaller label -> -1)."""
    if path.parent.name == "uci_raw":
        X, y = _load_uci(path)
    else:
        X, y = load_data(path)
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
        y = np.asarray(y)
    if spec.task == "classification":
        labels = np.unique(y)
        if labels.size != 2:
            raise KernelCVError(f"{path}: expected two classes, found {labels.size}")
        y = np.where(y == labels[1], 1.0, -1.0)
    return np.ascontiguousarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)


# UCI raw files: comma-separated features, the class letter last (positive class given).
_UCI_POSITIVE = {"ionosphere.data": "g", "sonar.all-data": "R"}


def _load_uci(path: Path):
    positive = _UCI_POSITIVE.get(path.name)
    rows, labels = [], []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise KernelCVError(f"{path}: cannot read ({exc.strerror or exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        *values, label = line.strip().split(",")
        try:
            rows.append([float(v) for v in values])
        except ValueError:
            raise KernelCVError(f"{path}, line {number}: non-numeric feature") from None
        labels.append(1.0 if label.strip() == positive else -1.0)
    if not rows or len({len(r) for r in rows}) != 1:
        raise KernelCVError(f"{path}: empty or ragged UCI file")
    return np.array(rows), np.array(labels)
