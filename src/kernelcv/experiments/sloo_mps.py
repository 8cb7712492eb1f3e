"""The ``sloo-mps`` table of ``kernelcv bench``: Table 1 of Bo, Wang & Jiao (SLOO-MPS).

The paper tunes the kernel weights of a bias-free LS-SVM (C = 1) by conjugate gradients on
the tanh-smoothed leave-one-out error (gamma_s = 10), for three mixtures of fixed-width
kernels -- ``gaussian`` exp(-||x - x'||^2 / beta), ``laplace`` exp(-||x - x'||_1 / beta),
beta in {0.01, 0.1, 1, 10, 100}, and ``mix`` (all ten) -- one-against-one for more than
two classes, and reports the 10-fold CV error (%) of each tuned model on ten UCI sets.

Protocol here, per data set and scheme (that of ``kernelcv tune``'s ``cv_error``):

1. tune the weights once on **all** the data (:class:`SmoothLOOLSSVMClassifier`, bias-free,
   C = 1, CG, the mode's restarts and iterations, seed ``--seed``);
2. 10-fold CV with those weights: only the machines (alpha) are refit on each training
   part (:func:`fixed_parameter_cv`). The held-out folds helped choose the weights, so
   the figure is optimistic -- as the paper's is.

Folds: ``StratifiedKFold(10, shuffle=True, random_state=seed)``, or ``KFold`` when the
smallest class has fewer than 10 samples (glass), exactly as ``kernelcv tune`` draws them,
so ``kernelcv tune FILE --no-intercept --kernels K --restarts R --max-iter M --seed S``
reports the same ``cv_error`` for a LIBSVM ``*.scale`` file.

scikit-learn reference: ``GridSearchCV(SVC(kernel="rbf"))`` over a small grid (5 x 5:
gamma = 2^-7, 2^-5, ..., 2^1; C = 2^-1, 2^1, ..., 2^7) on the same folds; its figure is
the CV error of the best grid point, chosen on the same folds (optimistic in the same way).

Cost per set: every optimiser evaluation of a binary machine on m samples is O(m^3);
the CV is 10 refits per machine. German (n = 1000) dominates the full mode (minutes).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.svm import SVC

from ..criteria.smooth_loo import DEFAULT_GAMMA_S, PAPER_BETAS
from ..estimators import SmoothLOOLSSVMClassifier, fixed_parameter_cv
from ..exceptions import KernelCVError
from ..reading.files import load_data
from ..reports.tune import tune_folds
from .paper_tables import default_folders

TABLE = "sloo-mps"
TITLE = "SLOO-MPS: LS-SVM kernel mixtures tuned by the smooth LOO error (paper 002, Table 1)"
FIGURE = "sloo_mps.png"
CSV_NAME = "sloo_mps.csv"
PAPER_CSV = "sloomps_table01_sloo_mps_10fold_cv_error.csv"
SCHEMES = {"gaussian": ("gaussian",), "laplace": ("laplace",), "mix": ("gaussian", "laplace")}
FOLDS = 10
C = 1.0
FIT_INTERCEPT = False  # the paper's bias-free LS-SVM


@dataclass(frozen=True)
class SlooSet:
    """One data set of the table: its name in the paper's CSV (None: not in the paper)
    and the files that may hold it, ``(relative path, reader, note)``, first found wins.

    Readers: ``scaled`` (a LIBSVM ``*.scale`` file, used as is), ``svmlight`` (unscaled,
    min-max scaled to [-1, 1] over the whole set), ``ratsch`` (a ``.mat`` with ``data`` and
    ``target``, min-max scaled), ``liver-selector`` (see :func:`load_sloo_set`).
    """

    name: str
    paper: str | None
    files: tuple[tuple[str, str, str], ...]


def _scaled(name, note=""):
    return (f"libsvm/{name}.svm", "scaled", note)


SETS: dict[str, SlooSet] = {s.name: s for s in (
    SlooSet("australian", "australian credit", (
        _scaled("australian_scale", "LIBSVM australian_scale: 14 features (the paper prints "
                "15)"),
        ("libsvm/australian.svm", "svmlight", "unscaled LIBSVM australian, min-max scaled"))),
    SlooSet("breast-cancer", "breast cancer", (
        ("ratsch/breast_cancer/breast_cancer_full.mat", "ratsch",
         "the 277-row UCI breast-cancer (Raetsch copy), min-max scaled; LIBSVM's "
         "breast-cancer is the 683-row Wisconsin set, another problem"),)),
    SlooSet("german", "german", (
        ("ratsch/german/german_full.mat", "ratsch",
         "UCI german, 20 features as the paper (Raetsch copy), min-max scaled"),
        _scaled("german.numer_scale", "LIBSVM german.numer_scale: 24 numeric features, "
                "not the paper's 20"))),
    SlooSet("glass", "glass", (_scaled("glass.scale"),)),
    SlooSet("heart", "heart", (_scaled("heart_scale"),)),
    SlooSet("ionosphere", "ionosphere", (_scaled("ionosphere_scale"),)),
    SlooSet("liver-disorders", "liver disorders", (
        ("libsvm/liver-disorders.svm", "liver-selector",
         "class = the UCI selector field, as the paper (rows 1-145 of the shared file are "
         "selector 1); the 5 blood tests, min-max scaled (the paper's 6th feature, drinks, "
         "is not in the file)"),)),
    SlooSet("vehicle", "vehicle", (_scaled("vehicle.scale"),)),
    SlooSet("vowel", "vowel", (_scaled("vowel.scale", "the 528-row LIBSVM training part"),)),
    SlooSet("wine", "wine", (_scaled("wine.scale"),)),
    SlooSet("iris", None, (
        ("other/iris_libsvm_spark.svm", "svmlight",
         "UCI iris (Spark copy), min-max scaled; not in the paper's table"),)),
)}


@dataclass(frozen=True)
class SlooMode:
    """The sets and optimiser budget of one bench mode (see :data:`SLOO_MODES`)."""

    name: str
    sets: tuple[str, ...]
    n_restarts: int
    max_iter: int
    svc_gammas: tuple[float, ...] = tuple(2.0**k for k in range(-7, 2, 2))
    svc_cs: tuple[float, ...] = tuple(2.0**k for k in range(-1, 8, 2))

    def settings(self) -> dict:
        """Everything a result depends on besides the data, the seed and the folds."""
        return {"n_restarts": self.n_restarts, "max_iter": self.max_iter,
                "svc_gammas": list(self.svc_gammas), "svc_cs": list(self.svc_cs),
                "betas": list(PAPER_BETAS), "C": C, "gamma_s": DEFAULT_GAMMA_S,
                "fit_intercept": FIT_INTERCEPT, "optimizer": "cg", "multiclass": "ovo",
                "folds": FOLDS, "version": 1}

    def key(self) -> str:
        text = json.dumps(self.settings(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:10]


# quick: the sets of at most 351 samples, one start, 30 iterations (~30 s in all);
# full: every set, kernelcv tune's defaults (3 starts, 100 iterations; ~10 min, german
# n = 1000 about half of it)
SLOO_MODES = {
    "quick": SlooMode("quick", ("heart", "wine", "iris", "glass", "ionosphere",
                                "liver-disorders", "breast-cancer"), 1, 30),
    "full": SlooMode("full", tuple(SETS), 3, 100),
}


def find_file(spec: SlooSet, data_dir: Path):
    """``(path, reader, note)`` of the first existing file of ``spec``, or None."""
    for relative, reader, note in spec.files:
        if (data_dir / relative).is_file():
            return data_dir / relative, reader, note
    return None


def _minmax(X):
    low, high = X.min(axis=0), X.max(axis=0)
    varies = high > low
    return np.where(varies, 2.0 * (X - low) / np.where(varies, high - low, 1.0) - 1.0, 0.0)


def load_sloo_set(path: Path, reader: str):
    """Dense ``X`` (float64) and the labels ``y`` as the file gives them.

    ``liver-selector``: the shared ``liver-disorders.svm`` holds the 345 UCI rows with the
    selector-1 rows first (rows 1-145, LIBSVM's training file) and the label drinks > 3;
    the paper's class is the selector field, so ``y`` = 1 for rows 1-145, 2 after.
    """
    if reader == "ratsch":
        try:
            mat = scipy.io.loadmat(path)
            X, y = np.asarray(mat["data"], dtype=np.float64), np.ravel(mat["target"])
        except (OSError, ValueError, KeyError) as exc:
            raise KernelCVError(f"{path}: not a .mat file with 'data' and 'target' "
                                f"({exc})") from None
    else:
        X, y = load_data(path)
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
        y = np.asarray(y)
    if reader == "liver-selector":
        if y.shape[0] != 345:
            raise KernelCVError(f"{path}: expected the 345 UCI liver-disorders rows, found "
                                f"{y.shape[0]}")
        y = np.where(np.arange(345) < 145, 1, 2)
    if reader != "scaled":
        X = _minmax(X)
    if y.dtype.kind == "f" and np.all(y == np.round(y)):
        y = y.astype(np.int64)  # plain integer labels in the report
    return np.ascontiguousarray(X, dtype=np.float64), y


def make_sloo_folds(y, seed: int, t: int = FOLDS):
    """Fold ids as ``kernelcv tune`` draws them (:func:`kernelcv.reports.tune.tune_folds`:
    stratified unless a class is smaller than t) and whether they are stratified."""
    return tune_folds(y, t, seed)


def run_scheme(X, y, scheme: str, fold_ids, mode: SlooMode, seed: int) -> dict:
    """Tune ``scheme``'s weights on all of ``(X, y)``, then 10-fold CV with them refit.

    Returns ``cv_error`` (fraction), ``fold_errors``, ``loo_error`` (exact LOO of the tuned
    classifier), ``tune_seconds``, ``cv_seconds``, ``iterations``, ``machines`` (classes,
    theta per kernel, smooth LOO, restart statuses) and ``failures`` (optimiser warnings).
    """
    model = SmoothLOOLSSVMClassifier(
        kernels=SCHEMES[scheme], betas=PAPER_BETAS, C=C, gamma_s=DEFAULT_GAMMA_S,
        fit_intercept=FIT_INTERCEPT, multiclass="ovo", optimizer="cg",
        n_restarts=mode.n_restarts, max_iter=mode.max_iter, random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tic = time.perf_counter()
        model.fit(X, y)
        tune_seconds = time.perf_counter() - tic
    tic = time.perf_counter()
    cv_error, fold_errors = fixed_parameter_cv(model, X, y, fold_ids)
    machines = [{"classes": m["classes"], "theta": m["theta"],
                 "smooth_loo_error": m["smooth_loo_error"],
                 "status": [r.get("status") for r in m.get("tuning", {}).get("restarts", [])]}
                for m in model.tuned_parameters()]
    return {"cv_error": cv_error, "fold_errors": fold_errors,
            "loo_error": float(model.loo_error_), "tune_seconds": tune_seconds,
            "cv_seconds": time.perf_counter() - tic,
            "iterations": int(np.sum(model.n_iter_)), "machines": machines,
            "failures": sorted({str(w.message).splitlines()[0] for w in caught})}


def run_svc(X, y, fold_ids, mode: SlooMode, n_jobs: int = 1) -> dict:
    """``GridSearchCV(SVC)`` on the mode's grid and the given folds; ``cv_error`` is the
    pooled 10-fold error (size-weighted, as ours) of the grid point it ranks first."""
    search = GridSearchCV(SVC(kernel="rbf"), {"gamma": list(mode.svc_gammas),
                                              "C": list(mode.svc_cs)},
                          cv=PredefinedSplit(fold_ids), refit=False, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tic = time.perf_counter()
        search.fit(X, y)
        seconds = time.perf_counter() - tic
    _, sizes = np.unique(fold_ids, return_counts=True)
    best = search.best_index_
    accuracy = np.array([search.cv_results_[f"split{i}_test_score"][best]
                         for i in range(sizes.size)])
    return {"cv_error": float(np.dot(1.0 - accuracy, sizes) / sizes.sum()),
            "best_params": {k: float(v) for k, v in search.best_params_.items()},
            "seconds": seconds, "grid_size": len(mode.svc_gammas) * len(mode.svc_cs)}


def run_sloo_set(X, y, mode: SlooMode, seed: int, n_jobs: int = 1) -> dict:
    """One row of the table: every scheme and the SVC reference on the same folds."""
    fold_ids, stratified = make_sloo_folds(y, seed)
    schemes = {s: run_scheme(X, y, s, fold_ids, mode, seed) for s in SCHEMES}
    return {"n": int(X.shape[0]), "d": int(X.shape[1]), "classes": int(np.unique(y).size),
            "stratified": stratified, "schemes": schemes,
            "svc": run_svc(X, y, fold_ids, mode, n_jobs)}


def run_sloo_table(set_names, data_dir: Path, mode_name: str, seed: int, n_jobs: int,
                   store, stamp, say) -> dict:
    """Every set of ``set_names`` (default: the mode's), checkpointed in ``store`` (an
    object with ``get(key)`` / ``add(key, record)``) under ``stamp(path)`` of the file.

    Returns the report section: settings, the paper CSV used, ``rows`` and ``skipped``.
    """
    mode = SLOO_MODES[mode_name]
    names = list(mode.sets if set_names is None else set_names)
    paper, paper_file = paper_numbers(data_dir)
    rows, skipped = [], []
    for name in names:
        spec = SETS[name]
        found = find_file(spec, data_dir)
        if found is None:
            looked = ", ".join(f for f, _, _ in spec.files)
            skipped.append({"set": name, "reason": f"{TABLE}: file not found under "
                            f"{data_dir} (looked for {looked})"})
            say(f"{TABLE} {name}: skipped (file not found)")
            continue
        path, reader, note = found
        key = f"{TABLE}|{name}|{stamp(path)}|{mode.key()}"
        record = store.get(key)
        if record is None:
            say(f"{TABLE} {name}: tuning gaussian, laplace and mix")
            try:
                X, y = load_sloo_set(path, reader)
                record = run_sloo_set(X, y, mode, seed, n_jobs)
            except (KernelCVError, ValueError, np.linalg.LinAlgError) as exc:
                skipped.append({"set": name, "reason": f"{TABLE}: {exc}"})
                say(f"{TABLE} {name}: skipped ({exc})")
                continue
            store.add(key, record)
        notes = [note] if note else []
        if not record["stratified"]:
            notes.append(f"a class has fewer than {FOLDS} samples: plain shuffled folds")
        rows.append({"set": name, "file": str(path), **record, "notes": notes,
                     "paper": {s: paper.get((spec.paper, s)) for s in SCHEMES}
                     if spec.paper else None})
    return {"table": TABLE, "title": TITLE, "mode": mode_name, "seed": seed,
            "settings": mode.settings(), "paper_file": paper_file, "rows": rows,
            "skipped": skipped}


def paper_csv_candidates(data_dir: Path) -> list[Path]:
    """Where the paper's CSV is looked for: ``paper_tables/`` beside the data folder,
    then ``shared/paper_tables`` beside the checkout."""
    return [folder / PAPER_CSV for folder in default_folders(data_dir)]


def paper_numbers(data_dir: Path):
    """``({(dataset, scheme): error %}, path)`` from the paper's CSV, or ``({}, None)``."""
    for path in paper_csv_candidates(data_dir):
        if path.is_file():
            try:
                with path.open(newline="") as handle:
                    table = {(r["dataset"], r["kernel_scheme"]): float(r["cv_error_10fold"])
                             for r in csv.DictReader(handle)}
            except (OSError, KeyError, ValueError):
                continue
            return table, str(path)
    return {}, None


def _pct(value, digits=2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(section) -> list[str]:
    """The section as Markdown lines: errors, means, seconds, caption and notes."""
    if not section or not section["rows"]:
        return []
    s = section["settings"]
    out = [f"## {section['title']} — 10-fold CV error (%)", ""]
    out.append(
        f"Bias-free LS-SVM, C = {s['C']:g}, kernel weights tuned by CG on the tanh-smoothed "
        f"LOO error (gamma_s = {s['gamma_s']:g}; beta = "
        f"{', '.join(f'{b:g}' for b in s['betas'])}; {s['n_restarts']} start(s), at most "
        f"{s['max_iter']} iterations each; one-against-one; seed {section['seed']}). "
        "**The weights were tuned once on all the data, then only the machine was refit on "
        "each of the 10 training parts** (the paper's Table 1 measure and `kernelcv "
        "tune`'s `cv_error`): the held-out folds helped choose the weights, so these errors "
        "are optimistic, more so for 5-10 free weights per machine than for two. "
        f"Reference: `GridSearchCV(SVC(kernel='rbf'))` on a {len(s['svc_gammas'])} x "
        f"{len(s['svc_cs'])} grid (gamma = 2^-7..2^1, C = 2^-1..2^7, step 4x), the CV error "
        "of its best grid point on the same folds (optimistic in the same way). Paper: "
        f"{section['paper_file'] or 'CSV not found, no numbers'}.")
    out.append("")
    header = ["data (n, d, classes)"]
    for scheme in SCHEMES:
        header += [f"{scheme} ours", f"{scheme} paper"]
    header.append("GridSearchCV(SVC)")
    lines = [header]
    for row in section["rows"]:
        cells = [f"{row['set']} ({row['n']}, {row['d']}, {row['classes']})"]
        for scheme in SCHEMES:
            cells += [_pct(100 * row["schemes"][scheme]["cv_error"]),
                      _pct((row["paper"] or {}).get(scheme))]
        cells.append(_pct(100 * row["svc"]["cv_error"]))
        lines.append(cells)
    lines += _mean_rows(section["rows"])
    out += _table(lines) + [""]
    out += [f"*{TABLE}: seconds (tuning on all the data + 10-fold refits; optimiser "
            "iterations over all machines and starts)*", ""]
    lines = [["data", *[f"{scheme} s (iterations)" for scheme in SCHEMES],
              "GridSearchCV(SVC) s"]]
    for row in section["rows"]:
        r = row["schemes"]
        lines.append([row["set"], *[f"{r[k]['tune_seconds'] + r[k]['cv_seconds']:.1f} "
                                    f"({r[k]['iterations']})" for k in SCHEMES],
                      f"{row['svc']['seconds']:.1f}"])
    out += _table(lines) + [""]
    for row in section["rows"]:
        failures = sum(len(row["schemes"][k]["failures"]) for k in SCHEMES)
        extra = ([f"{failures} optimiser warning(s), best point kept"] if failures else [])
        if row["notes"] or extra:
            out.append(f"* {row['set']}: {'; '.join(row['notes'] + extra)}")
    return out + [""]


def _mean_rows(rows) -> list[list[str]]:
    """Our mean over every row, and over the rows with a paper number beside the paper's
    mean over the same sets (the paper's printed mean is over its ten)."""
    paired = [r for r in rows if r["paper"] and all(v is not None
                                                    for v in r["paper"].values())]
    if not paired:
        return []
    cells = [f"mean of the {len(paired)} paper sets"]
    for scheme in SCHEMES:
        cells += [_pct(np.mean([100 * r["schemes"][scheme]["cv_error"] for r in paired])),
                  _pct(np.mean([r["paper"][scheme] for r in paired]))]
    cells.append(_pct(np.mean([100 * r["svc"]["cv_error"] for r in paired])))
    return [cells]


def _table(lines) -> list[str]:
    return (["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
            + ["| " + " | ".join(cells) + " |" for cells in lines[1:]])


def to_csv(section) -> str:
    """Long format, like the paper's CSV: one line per (set, method, scheme)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["dataset", "n", "d", "classes", "method", "kernel_scheme",
                     "cv_error_10fold", "paper_cv_error_10fold", "seconds", "unit"])
    for row in section["rows"]:
        base = [row["set"], row["n"], row["d"], row["classes"]]
        for scheme in SCHEMES:
            r = row["schemes"][scheme]
            paper = (row["paper"] or {}).get(scheme)
            writer.writerow(base + ["SLOO-MPS", scheme, f"{100 * r['cv_error']:.4f}",
                                    "" if paper is None else f"{paper:.2f}",
                                    f"{r['tune_seconds'] + r['cv_seconds']:.3f}", "%"])
        svc = row["svc"]
        writer.writerow(base + ["GridSearchCV(SVC)", "rbf", f"{100 * svc['cv_error']:.4f}",
                                "", f"{svc['seconds']:.3f}", "%"])
    return buffer.getvalue()
