"""``run_hypothetical``: the library side of ``kernelcv hypothetical`` (load, run the
non-enumerative criterion of :mod:`kernelcv.hypothetical`, report, write).

``ridge``: criterion, closed-form LOO and GCV over a ``lam`` path for ridge with a free
intercept (``Z = [X, 1]``, ``B = lam diag(1, ..., 1, 0)``, as
:class:`kernelcv.estimators.HypotheticalRidgeCV`).
``svm``: the criterion (37) of the squared-hinge SVM for each ``C``.
``enet``: the criterion (43) and, unless switched off, the exact LOO error over a ``mu``
path, with the figure pair "LOO error vs mu" / "criterion vs mu".
``relevance``: the same on secondary features from kernels or precomputed ``.npy``
similarity matrices; the report adds the relevant training objects and kernels.
"""

from __future__ import annotations

import json
import os
import time
import zipfile

import numpy as np

from ..exceptions import KernelCVError
from ..hypothetical.elastic_net import enet_svm_path
from ..hypothetical.relevance import kernel_similarities, make_kernels, relevance_path
from ..hypothetical.ridge import DEFAULT_LAMS, DEFAULT_NOISE_VAR, intercept_design, ridge_path
from ..hypothetical.svm import svm_criterion
from ..memory import dense_array
from ..plotting import figure_class
from ..reading.files import load_data
from ..validation import check_scale
from .io import check_writable_folder, jsonable, png, write_all

__all__ = ["MODELS", "path_figure", "run_hypothetical"]

MODELS = ("ridge", "svm", "enet", "relevance")
PLOTTED = ("ridge", "enet", "relevance")
REPORT_NAME = "report.json"
FIGURE_NAME = "hypothetical.png"


def run_hypothetical(data, *, model="enet", mus=None, Cs=(1.0,), lams=None,
                     noise_var=None, loo=False, out=None, plot=False,
                     kernels=None, similarities=None, memory_budget=None, header="auto",
                     target=None):
    """Load ``data`` and run the hypothetical criterion of ``model``.

    Parameters
    ----------
    data : path of a data file (see :func:`kernelcv.reading.files.load_data`) or a tuple (X, y)
    model : {"ridge", "svm", "enet", "relevance"}
    mus : mu grid for ``enet`` / ``relevance`` (values >= 0; default: 12 values below
        ``mu_max``)
    Cs : C values (``svm``: one criterion each; ``enet``, ``relevance``: the first is used)
    lams : ridge grid (default 1e-3..1e3)
    noise_var : ``s2`` of the penalty ``2 s2 d``; None means the model's default:
        ``"auto"`` (Mallows' Cp, ``s2`` estimated from the least-squares residuals, so the
        choice does not depend on the units of ``y``) for ``ridge``, 0.5 (the paper's form)
        for the SVM criteria. ``"auto"`` is accepted for ``ridge`` only.
    loo : for ``enet`` and ``relevance``, also the exact LOO error (n refits per mu: the
        slow reference, off by default since 0.2; ``--loo`` on the command line)
    out, plot : directory for ``report.json`` and, with ``plot``, ``hypothetical.png``
        (checked before any work; both files are written together, atomically, at the end;
        non-finite numbers are written as null)
    kernels : ``relevance``: kernel specifications (see
        :func:`kernelcv.hypothetical.relevance.make_kernels`), default ``["rbf"]``
    similarities : ``relevance``: precomputed ``n x n`` matrices (arrays or ``.npy``
        paths) used instead of (or besides) ``kernels``
    memory_budget : the budget of the dense data (see :mod:`kernelcv.memory`)
    header : whether a CSV file's first row is a header (``"auto"``, ``"yes"``, ``"no"``)
    target : a CSV file's target column (a header name or a number, 1 = first, -1 = last)

    Returns
    -------
    dict: ``model``, ``data``, ``n_samples``, ``n_features``, the model's path values,
    ``seconds`` and ``files``.
    """
    if model not in MODELS:
        raise KernelCVError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    if plot and out is None:
        raise KernelCVError("plots are written to a directory: give --out DIR with --plot")
    if plot and model not in PLOTTED:
        raise KernelCVError(f"--plot: --model {model} has no figure (it shows a mu or lam "
                            f"path); use --model {', '.join(PLOTTED)} or drop --plot")
    if model != "relevance" and (kernels or similarities):
        raise KernelCVError("kernels and similarity matrices belong to --model relevance")
    noise_var = _noise_var(model, noise_var)
    if out is not None:
        check_writable_folder(out, (REPORT_NAME, FIGURE_NAME) if plot else (REPORT_NAME,))
    loaded = [_load_similarity(s) for s in similarities or []]
    if isinstance(data, tuple):
        X, y = data
        source = "<arrays>"
    else:
        X, y = load_data(data, header, target)
        source = os.fspath(data)
    X = np.asarray(dense_array(X, f"kernelcv hypothetical on {source}", memory_budget),
                   dtype=np.float64)
    check_scale(X)
    if model == "ridge":  # regression targets are squared too (the SVMs take labels)
        targets = np.asarray(y, dtype=np.float64)
        if targets.size and np.all(np.isfinite(targets)):
            check_scale(targets.reshape(-1, 1), "y")
    start = time.perf_counter()
    if model == "ridge":
        Z, B0 = intercept_design(X)
        path = ridge_path(Z, np.asarray(y, dtype=np.float64),
                          DEFAULT_LAMS if lams is None else lams, B0=np.diag(B0),
                          noise_var=noise_var)
        report = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                  for k, v in path.items()}
        report["intercept"] = True
    elif model == "svm":
        rows = [svm_criterion(X, y, C, noise_var=noise_var) for C in Cs]
        keys = ("C", "criterion", "empirical_risk", "effective_dimension", "n_support",
                "rank_limit", "train_error")
        report = {"candidates": [{k: r[k] for k in keys} for r in rows]}
        report["best_C"] = rows[int(np.argmin([r["criterion"] for r in rows]))]["C"]
    elif model == "enet":
        report = enet_svm_path(X, y, mus=mus, C=Cs[0], noise_var=noise_var, loo=loo)
    else:
        report = _relevance(X, y, kernels, loaded, mus, Cs[0], noise_var, loo,
                            memory_budget)
    report.update(model=model, data=source, n_samples=int(X.shape[0]),
                  n_features=int(X.shape[1]), seconds=time.perf_counter() - start,
                  files=[])
    if out is not None:
        outputs = {FIGURE_NAME: png(path_figure(report), dpi=150)} if plot else {}
        report["files"] = [os.path.join(os.fspath(out), name)
                           for name in (*outputs, REPORT_NAME)]
        outputs[REPORT_NAME] = (json.dumps(jsonable(report), indent=2, allow_nan=False)
                                + "\n").encode()
        write_all(out, outputs)
    return report


def _noise_var(model, noise_var):
    """The model's default ``s2`` ("auto" for ridge, 0.5 otherwise), validated."""
    if noise_var is None:
        return "auto" if model == "ridge" else DEFAULT_NOISE_VAR
    if isinstance(noise_var, str):
        if noise_var != "auto":
            raise KernelCVError(f"noise_var must be a positive number or 'auto', "
                                f"got {noise_var!r}")
        if model != "ridge":
            raise KernelCVError(f"noise_var 'auto' is for --model ridge; give a positive "
                                f"number for --model {model} (0.5 is the paper's form)")
        return noise_var
    value = float(noise_var)
    if not np.isfinite(value) or value <= 0:
        raise KernelCVError(f"noise_var must be a positive finite number, got {noise_var!r}")
    return value


def _load_similarity(source):
    """A precomputed similarity matrix from an array, a ``.npy`` file or an ``.npz``
    archive holding exactly one array (whatever the file's suffix)."""
    if not isinstance(source, (str, os.PathLike)):
        return np.asarray(source, dtype=np.float64)
    name = os.fspath(source)
    advice = "save it with numpy.save as a 2-D .npy file"
    try:
        matrix = np.load(source, allow_pickle=False)
        arrays = None
        if isinstance(matrix, np.lib.npyio.NpzFile):  # an archive, even if named .npy
            with matrix:
                arrays = list(matrix.files)
                matrix = matrix[arrays[0]] if len(arrays) == 1 else None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise KernelCVError(f"cannot read the similarity matrix {name!r} "
                            f"({' '.join(str(exc).split())}); {advice}") from None
    if matrix is None:
        raise KernelCVError(
            f"the similarity matrix file {name!r} is an .npz archive with {len(arrays)} "
            f"arrays ({', '.join(arrays[:5])}); give one array per file: {advice}")
    if matrix.dtype.kind not in "biuf":
        raise KernelCVError(f"the similarity matrix {name!r} must hold numbers")
    if matrix.ndim != 2:
        raise KernelCVError(f"the similarity matrix {name!r} has {matrix.ndim} dimensions; "
                            f"{advice}")
    return matrix.astype(np.float64)


def _relevance(X, y, kernels, similarities, mus, C, noise_var, loo, memory_budget=None):
    """The relevance-object path on the kernels' and the given similarity matrices."""
    specs = make_kernels(kernels or ["rbf"], X.shape[1]) if kernels or not similarities else []
    sims = kernel_similarities(X, specs) + list(similarities)
    names = ([k.params() for k in specs]
             + [{"kernel": "precomputed", "matrix": i} for i in range(len(similarities))])
    report = relevance_path(sims, y, mus=mus, C=C, noise_var=noise_var, loo=loo,
                            memory_budget=memory_budget)
    report["kernels"] = names
    report["best_kernel_names"] = [names[k] for k in report["best_kernels"]]
    return report


def path_figure(report):
    """The figure pair: exact LOO (or GCV) and the criterion against the path parameter."""
    if report["model"] == "svm":
        raise KernelCVError("the figure shows a mu or lam path; use --model enet or ridge")
    fig = figure_class()(figsize=(9, 3.5))
    left, right = fig.subplots(1, 2)
    if report["model"] in ("enet", "relevance"):
        grid, name = report["mus"], "mu"
        reference = report["loo_error"]
        label = "exact LOO 0-1 error"
    else:
        grid, name = report["lams"], "lam"
        reference, label = report["loo_mse"], "LOO MSE (closed form)"
    if reference is not None:
        left.plot(grid, reference, "o-")
    right.plot(grid, report["criterion"], "s-", color="C1")
    positive = [g for g in grid if g > 0]
    for axis in (left, right):  # mu = 0 is allowed: linear near zero, log beyond
        if len(positive) < len(grid):
            axis.set_xscale("symlog", linthresh=min(positive) if positive else 1.0)
        else:
            axis.set_xscale("log")
    left.set(xlabel=name, ylabel=label, title="leave-one-out")
    right.set(xlabel=name, ylabel="hypothetical criterion", title="non-enumerative CV")
    fig.tight_layout()
    return fig
