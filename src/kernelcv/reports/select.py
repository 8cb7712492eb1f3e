"""``run_select``: the library side of ``kernelcv select`` (load, search, test, report, write).

Everything that can be checked before the search is checked first (files, options, the
output folder, matplotlib for ``--plot``), so a bad invocation fails in a second and
writes nothing. Output files are rendered in memory and then written atomically by
:func:`kernelcv.reports.io.write_all`: a reader never sees half a file and a failed run
leaves no partial report.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..devices import NUMPY
from ..exceptions import GridEdgeWarning, KernelCVError
from ..kernels import GramFactory, Kernel
from ..machines import Machine, make_machine
from ..machines.model import KernelModel
from ..machines.saved_model import check_model_path
from ..machines.saved_model import save_model as save_model_file
from ..plotting import cv_curve_figure, figure_class, heatmap_figure
from ..random_features.final import ChunkedSVC, check_final_kernel, fit_final, svc_as_kernel_model
from ..random_features.method import FeatureSpace
from ..reading.files import load_data, load_train_test, read_fold_ids, read_sample_weights
from ..selection.after_grid.calibration import calibrate_choice
from ..selection.backends import run_tasks
from ..selection.method_choice import make_method, method_for_size
from ..selection.methods import BIF
from ..selection.options import Execution
from ..selection.screening import Screening
from ..selection.search import grid_search
from ..selection.spectral_method import Spectral
from ..selection.tasks import exact_task
from ..validation import check_data
from .command_files import DataFiles, Outputs
from .io import check_distinct_paths, check_writable_folder, jsonable, png, write_all
from .multiclass import confusion_figures, exact_confusion_skipped, multiclass_entry
from .scaling import apply_scaling, fit_scaling, scaling_entry
from .schema import annotate
from .streamed import check_stream, open_streamed, streamed_test_error

REPORT_NAME = "report.json"
HEATMAP_NAME = "cv_heatmap.png"
CURVE_NAME = "cv_curve.png"
CURVE_ORDERS = (1, 3)  # BIF orders drawn in the CV-curve figure
# Up to this many samples the CV-curve figure of an rff search adds exact refit CV.
RFF_EXACT_CURVE_LIMIT = 2000


# From this many training rows ``screen="auto"`` walks the grid on an n/4 subsample first
# ("halving"; n/3 below 400 and n/2 below 300 rows with 10 folds; it was n/3 when this
# was measured). Measured against "coarse" (docs/results.md): the same test error on
# australian, diabetes, fourclass, german.numer, a1a and the 2,000-row a9a, w8a and
# ijcnn1 subsamples (breast-cancer svm: one more test error, 0.038 = GridSearchCV's),
# 1.5-3.2x faster; vowel (264 rows, n/2) the same choice, 1.8x faster.
HALVING_AUTO_FROM = 200


def resolve_screen(screen, n_samples, method, checkpoint):
    """``screen="auto"``: "off" with rff, spectral (whose every lam of a kernel setting
    costs one eigendecomposition: the whole grid is evaluated) or a checkpoint, "halving"
    from :data:`HALVING_AUTO_FROM` rows, else "coarse"; other values are returned
    unchanged. ``method``: the search's method object."""
    if screen != "auto":
        return screen
    if isinstance(method, FeatureSpace | Spectral) or checkpoint is not None:
        return "off"
    return "halving" if n_samples >= HALVING_AUTO_FROM else "coarse"


def run_select(files, *, machine, kernel="rbf", gammas=None, degrees=None, lams=None,
               Cs=None, kernel_params=None, method=None, folds=10, seed=0, screen="off",
               safeguards=None, execution=None, outputs=None) -> dict:
    """Select the kernel parameter and lam of a machine on a data file; optionally test.

    Parameters
    ----------
    files : :class:`~kernelcv.reports.command_files.DataFiles` or a path
        The training data file (svmlight, CSV or npz; see :mod:`kernelcv.reading.files`) and
        how to read it. ``test``: an optional test file: the best candidate is refit on
        all training data and its test error (0-1 or MSE) reported. ``fold_ids``: a file
        with one fold id per training sample (instead of ``folds``; the fold ``seed`` is
        then reported as None, and with ``method="rff"`` ``seed`` seeds only the feature
        draw, reported as ``feature_space.feature_seed``). ``scale``: feature scaling
        fitted on the training data and applied to the test data
        (:mod:`kernelcv.reports.scaling`; reported as ``scaling``). ``header``,
        ``target``: a CSV file's layout (:func:`kernelcv.reading.files.load_data`), for the
        training and the test file. ``stream``: read the files in row chunks, never
        whole (:mod:`kernelcv.reports.streamed`; ``method="rff"`` only).
    machine, kernel, gammas, degrees, lams, Cs, kernel_params, folds, safeguards
        As :func:`kernelcv.selection.search.grid_search`; ``machine`` a name or a machine
        object. For more than two classes the report has a ``multiclass`` entry with the
        confusion matrices and per-class errors of the choice (exact refit CV, and the
        test data), and ``outputs.plot`` draws them (:mod:`kernelcv.reports.multiclass`).
    method : as :func:`~kernelcv.selection.search.grid_search`. The final model of
        ``rff`` with a test file or a saved model is its
        :class:`~kernelcv.selection.FeatureSpace`'s ``final``: ``"kernel"`` (one exact
        fit at the chosen gamma and ``C = 1/(2 n lam)``: SVC for svm, the kernelcv
        estimator otherwise; refused before the search when its dense n x n matrices
        exceed the memory budget), ``"linear"`` (the linear model in feature space, with
        ``final_features`` features, default twice the search's D) or ``"auto"`` (kernel
        up to ``final_kernel_limit`` samples, default 100,000, and within the memory
        budget; linear otherwise, with a note).
    seed : the fold seed (``random_state`` of ``grid_search``).
    screen : as in :func:`~kernelcv.selection.search.grid_search`, plus ``"auto"`` (see
        :func:`resolve_screen`); the report records the strategy used.
    execution : :class:`~kernelcv.selection.Execution` (its ``memory_budget`` also bounds
        the test refit and the figures, its ``progress`` the figures' exact curve).
    outputs : :class:`~kernelcv.reports.command_files.Outputs` or a folder path
        ``out``: the folder for ``report.json`` and, with ``plot``, ``cv_heatmap.png``
        (CV error over kernel parameter x lam) and ``cv_curve.png`` (CV error along the
        kernel parameter at the best lam, for the search's method and exact refit CV);
        ``save_model``: a file to write the refit choice to, as
        :func:`kernelcv.load_model` reads it (:mod:`kernelcv.machines.saved_model`; no
        pickle; with ``method="rff"`` the final model: SVC as its kernel expansion, or
        the feature-space model); ``argv``: the command line, recorded as the report's
        ``argv`` (None from Python). The report's layout is
        :mod:`kernelcv.reports.schema` (``docs/report.schema.json``).

    Returns
    -------
    dict
        JSON-able report: ``best_params``, ``best_cv_error`` (exact where confirmed or
        refined), ``fit_intercept`` (the machine's intercept setting; False for krr),
        ``class_weight`` (None, "balanced" or {label: weight}),
        ``test_error``, ``candidates`` (one row per candidate), ``confirmed``,
        ``rechecked``, ``refined``, ``timings``, ``files`` and the search settings.
    """
    tic = time.perf_counter()
    files = files if isinstance(files, DataFiles) else DataFiles(files)
    outputs = outputs if isinstance(outputs, Outputs) else Outputs(out=outputs)
    execution = Execution() if execution is None else execution
    spec = machine if isinstance(machine, Machine) else make_machine(machine)
    cv_method = make_method(method, spec.name, folds=folds)
    rff = isinstance(cv_method, FeatureSpace)
    final = getattr(cv_method, "final", "auto")
    data, test, stream = files.data, files.test, files.stream
    header, target = files.header, files.target
    out, plot, save_model = outputs.out, outputs.plot, outputs.save_model
    memory_budget, checkpoint = execution.memory_budget, execution.checkpoint
    if out is not None:
        check_writable_folder(out, (REPORT_NAME, HEATMAP_NAME, CURVE_NAME) if plot
                              else (REPORT_NAME,))
    written = {"--save-model": save_model, "--checkpoint": checkpoint}
    if out is not None:
        written.update({f"--out {name}": os.path.join(os.fspath(out), name)
                        for name in (REPORT_NAME, HEATMAP_NAME, CURVE_NAME)})
    check_distinct_paths(written, {"DATA": data, "--test": test,
                                   "--fold-ids": files.fold_ids,
                                   "--sample-weight": files.sample_weight})
    if save_model is not None:
        check_model_path(save_model)
    if plot:
        figure_class()  # fails now, with advice, if matplotlib is missing
    X_test = y_test = None
    if stream:
        if files.sample_weight is not None:
            raise KernelCVError("--sample-weight needs the rows in memory: drop --stream")
        check_stream(cv_method, files.scale, final, plot)
        X, X_test = open_streamed(data, test, header)
        y = X.labels()
    elif test is None:
        X, y = load_data(data, header, target)
    else:
        # Two svmlight files are read together and share the wider file's columns: columns
        # that are zero in the training data change no kernel kernelcv offers (rbf/laplace
        # distances and poly/linear inner products are sums over columns whose training
        # terms vanish), so the joint width is kept for every method.
        X, y, X_test, y_test = load_train_test(data, test, header, target)
        X_test = _match_features(X_test, X.shape[1], test)
        y_test = _check_test_data(X_test, y_test, X, y, spec, test)
    scaling = fit_scaling(X, files.scale)
    X, X_test = apply_scaling(X, scaling), apply_scaling(X_test, scaling)
    # the default method's n x n matrices may not fit: a low-rank feature space instead
    weights = (None if files.sample_weight is None
               else read_sample_weights(files.sample_weight, y.shape[0]))
    cv_method, size_note = method_for_size(cv_method, spec.name, [kernel], y.shape[0],
                                           execution.workers, memory_budget,
                                           class_weighted=spec.class_weight is not None
                                           or weights is not None)
    if size_note is not None:
        rff, final = True, cv_method.final
        named = screen.strategy if isinstance(screen, Screening) else screen
        if named not in ("auto", "off"):
            raise KernelCVError(f"{size_note}; that search walks the grid itself: drop "
                                "--screen, or name a method to screen")
    fold_path = None
    # The feature draw is seeded even when the folds come from a file (then the seed sets
    # only the features).
    if rff and cv_method.feature_seed is None:
        cv_method = replace(cv_method, feature_seed=0 if seed is None else int(seed))
    if files.fold_ids is not None:
        fold_path = str(files.fold_ids)
        folds = read_fold_ids(files.fold_ids, y.shape[0])
        seed = None
    if rff and final == "kernel" and test is not None:
        check_final_kernel(spec.name, y.shape[0], memory_budget)
    granularity = getattr(cv_method, "granularity", None)
    screen = resolve_screen(screen.strategy if isinstance(screen, Screening) else screen,
                            y.shape[0], cv_method, checkpoint)

    with warnings.catch_warnings():  # the report and the command line say it as a note
        warnings.simplefilter("ignore", GridEdgeWarning)
        result = grid_search(
            X, y, spec, kernel=kernel, gammas=gammas, degrees=degrees, lams=lams, Cs=Cs,
            kernel_params=kernel_params, method=cv_method, folds=folds, random_state=seed,
            screen=screen, safeguards=safeguards, execution=execution, sample_weight=weights)
    if size_note is not None:
        result.notes.insert(0, size_note)
    report = annotate(result.to_dict(), outputs.argv)
    report.update({"fit_intercept": result.machine_spec.fit_intercept,
                   "class_weight": result.machine_spec.params().get("class_weight"),
                   "sample_weight": (None if files.sample_weight is None
                                     else str(files.sample_weight)),
                   "screen": screen,
                   "scaling": scaling_entry(scaling),
                   "data": str(data),
                   "test": None if test is None else str(test),
                   "fold_ids": fold_path, "seed": seed,
                   "device": result.config.get("device", NUMPY.describe()),
                   "epsilon": None if granularity is None else granularity.epsilon,
                   "granularity": None if granularity is None else granularity.rule})

    report["test_error"] = None
    test_predicted = final_model = None
    if test is None and save_model is None and rff and final != "auto":
        report["notes"].append(f"--final {final} chooses the model that is tested; without "
                               "--test (or --save-model) no final model was fit")
    if rff and (test is not None or save_model is not None):
        final_tic = time.perf_counter()
        final_model, kind, notes = fit_final(X, y, result, final, memory_budget,
                                             kernel_limit=cv_method.final_kernel_limit,
                                             final_features=cv_method.final_features,
                                             execution=execution)
        report["timings"]["final_seconds"] = time.perf_counter() - final_tic
        report["final_model"] = kind
        if kind == "linear":
            report["final_features"] = final_model.n_features
        report["notes"].extend(notes)
    if test is not None and rff:
        test_tic = time.perf_counter()
        if stream:
            predictions = [] if result.machine_spec.is_multiclass else None
            report["test_error"] = streamed_test_error(
                final_model, X_test, X.n_dims, result.metric,
                list(result.label_mapping.values()) if result.label_mapping else None,
                predictions)
            if predictions:
                y_test, test_predicted = predictions
        else:
            test_predicted = final_model.predict(X_test)
            report["test_error"] = _prediction_error(test_predicted, y_test, result.metric)
        report["timings"]["test_seconds"] = time.perf_counter() - test_tic
    refit = None
    if test is not None and not rff:
        test_tic = time.perf_counter()
        refit = _refit_choice(result, X, y, memory_budget)
        test_predicted = refit.predict(X_test)
        report["test_error"] = _prediction_error(test_predicted, y_test, result.metric)
        report["timings"]["test_seconds"] = time.perf_counter() - test_tic
    report["multiclass"] = None
    if result.machine_spec.is_multiclass:
        multi_tic = time.perf_counter()
        skip = exact_confusion_skipped(result, stream, memory_budget)
        report["multiclass"] = multiclass_entry(
            result, X, y, test_labels=y_test, test_predicted=test_predicted,
            memory_budget=memory_budget, exact_cv=skip is None)
        if skip is not None:
            report["notes"].append(f"the held-out confusion matrix (multiclass.cv, an exact "
                                   f"refit CV of the choice) was not computed: {skip}")
        report["timings"]["multiclass_seconds"] = time.perf_counter() - multi_tic

    figures: dict[str, bytes] = {}
    if plot and report["none_finite"]:
        report["notes"].append("--plot: every CV error is infinite or NaN; no figures "
                               "drawn (they would be empty)")
    elif plot:
        plot_tic = time.perf_counter()
        figures.update(_figures(result, X, y, memory_budget, execution.progress,
                                outputs.plot_exact))
        if report["multiclass"] is not None:
            figures.update(confusion_figures(report["multiclass"]))
        report["timings"]["plot_seconds"] = time.perf_counter() - plot_tic
        if not figures:
            report["notes"].append(f"--plot: the {kernel} kernel has no parameter to plot "
                                   "against; no figures written")
    report["saved_model"] = None
    if save_model is not None and final_model is not None:
        report["saved_model"] = _save_final(save_model, final_model, result, scaling)
    elif save_model is not None:
        refit = refit or _refit_choice(result, X, y, memory_budget)
        calibration = None
        if result.machine_spec.is_classifier and not stream:
            calibration_tic = time.perf_counter()
            calibration = calibrate_choice(result, result.best_index, result.best, X, y)
            report["timings"]["calibration_seconds"] = time.perf_counter() - calibration_tic
        report["saved_model"] = save_model_file(save_model, refit, scaling,
                                                calibration=calibration)
    report["timings"]["total_seconds"] = time.perf_counter() - tic
    if out is not None:
        names = [*figures, REPORT_NAME]
        report["files"] = [os.path.join(os.fspath(out), name) for name in names]
        figures[REPORT_NAME] = (json.dumps(jsonable(report), indent=2, allow_nan=False)
                                + "\n").encode()
        write_all(out, figures)
    else:
        report["files"] = []
    return report


def _save_final(path, model, result, scaling):
    """Save the final model of an rff search: the SVC as its kernel expansion, a
    feature-space model with its map, a kernelcv machine as it is."""
    gamma, lam = float(result.best["gamma"]), float(result.best["lam"])
    if isinstance(model, ChunkedSVC):
        model = svc_as_kernel_model(model, result.machine_spec, gamma, lam)
    return save_model_file(path, model, scaling, machine=result.machine_spec, lam=lam)


def _match_features(X_test, n_features, path):
    """Test data must have the training features; svmlight files may omit trailing ones."""
    d = X_test.shape[1]
    if d == n_features:
        return X_test
    if sp.issparse(X_test) and d < n_features:
        X_test = sp.csr_matrix(X_test)
        X_test.resize((X_test.shape[0], n_features))
        return X_test
    raise KernelCVError(
        f"{path}: test data has {d} features but the training data has {n_features}")


def _check_test_data(X_test, y_test, X, y, spec, path):
    """Check the test data before the search: finite values and known labels.

    Returns the test targets as float64 for a regression machine, unchanged otherwise.
    """
    values = X_test.data if sp.issparse(X_test) else np.asarray(X_test)
    if not np.all(np.isfinite(values)):
        raise KernelCVError(f"{path}: the test data contain NaN or infinite values")
    y_test = np.asarray(y_test)
    if y_test.ndim != 1 or y_test.shape[0] != X_test.shape[0]:
        raise KernelCVError(f"{path}: the test data have {X_test.shape[0]} samples but "
                            f"{y_test.size} targets")
    if not spec.is_classifier:
        try:
            y_test = y_test.astype(np.float64)
        except (TypeError, ValueError):
            raise KernelCVError(f"{path}: test targets must be numeric for a regression "
                                "machine") from None
        if not np.all(np.isfinite(y_test)):
            raise KernelCVError(f"{path}: the test targets contain NaN or infinite values")
        return y_test
    _, _, mapping = check_data(X, y, True, multiclass=True)
    known = set(mapping.values())
    unknown = [v.item() if hasattr(v, "item") else v for v in np.unique(y_test)
               if v not in known]
    if unknown:
        raise KernelCVError(f"{path}: test labels {unknown[:3]} do not occur in the "
                            "training data")
    return y_test


def _refit_choice(result, X, y, memory_budget):
    """Refit the best candidate on all training data (for ``--test`` and ``--save-model``).

    The refit is a :class:`~kernelcv.machines.model.KernelModel` of the searched machine:
    the fit and prediction of the kernelcv estimator (e.g. ``L2SVMClassifier``) with the
    same settings, without importing scikit-learn.
    """
    best = result.best_params
    kernel = Kernel(name=best["kernel"], gamma=float(best.get("gamma", 1.0)),
                    degree=int(best.get("degree", 3)), coef0=float(best.get("coef0", 1.0)))
    return KernelModel(result.machine_spec, kernel, best["lam"],
                       memory_budget=memory_budget).fit(X, y)


def _prediction_error(predicted, y_test, metric):
    if metric == "0-1":
        return float(np.mean(predicted != np.asarray(y_test)))
    return float(np.mean((predicted - np.asarray(y_test, float)) ** 2))


def _figures(result, X, y, memory_budget, progress, exact=False) -> dict[str, bytes]:
    """The heatmap and the CV-curve figure as PNG bytes.

    Both are drawn from the values the search computed: the heatmap from the evaluated
    cells, the curve from the search's scores along the kernel parameter at the chosen
    lam and, as a second line, the exact errors the search already has there
    (confirmations, refinements, an exact method). ``exact`` (``--plot-exact``) computes
    the rest of that exact curve by refit CV and adds BIF orders 1 and 3 (t refits per
    point: on breast cancer the figures took 1.8x the search this way, against a few
    tenths of a second without)."""
    param = result.param_name
    metric = {"0-1": "0-1 error", "mse": "MSE"}[result.metric]
    method = result.criterion
    label = method.score_label(result.folds, metric)
    figures = {}
    best = result.best
    if param is not None:
        records = [{param: c[param], "lam": c["lam"], "score": c["score"]}
                   for c in result.candidates]
        fig = heatmap_figure(records, param=param, value="score",
                             best={param: best[param], "lam": best["lam"]},
                             metric_label=label,
                             title=f"{result.machine}, {result.kernel} kernel")
        figures[HEATMAP_NAME] = png(fig)
        at_best = [c for c in result.candidates if c["lam"] == best["lam"]]
        at_best.sort(key=lambda c: c[param])
        curves = {result.method: ([c[param] for c in at_best],
                                  [c["score"] for c in at_best])}
        name = "exact" if method.kernel_grid else f"exact refit ({result.machine})"
        if not method.exact and exact and (method.kernel_grid
                                           or y.shape[0] <= RFF_EXACT_CURVE_LIMIT):
            curves[name] = ([c[param] for c in at_best],
                            _exact_along(result, at_best, X, y, memory_budget, progress))
        elif not method.exact:
            known = [c for c in at_best if _reusable_exact(result, c)]
            if known:
                curves[f"{name}, where computed"] = ([c[param] for c in known],
                                                     [c["exact_error"] for c in known])
        if exact and method.kernel_grid and result.folds != "auto":
            # Like Fig. 1 of the BIF paper: low truncation orders against the exact curve.
            for order in CURVE_ORDERS:
                if result.order == order:  # the search's own BIF curve
                    continue
                curves[f"bif r={order}"] = ([c[param] for c in at_best], _bif_along(
                    result, at_best, order, X, y, memory_budget))
        fig = cv_curve_figure(curves, param=param, best_lam=best["lam"],
                              metric_label=f"CV {metric}",
                              title=f"{result.machine}: CV along {param}")
        figures[CURVE_NAME] = png(fig)
    return figures


def _bif_along(result, candidates, order, X, y, memory_budget):
    """BIF CV error of order ``order`` for each candidate (one fit + r terms each)."""
    machine = result.machine_spec
    _, y_pm, _ = check_data(X, y, machine.is_classifier, multiclass=True)
    factory = GramFactory(X, memory_budget=memory_budget)
    values = []
    for c in candidates:
        setting = {k: c[k] for k in ("kernel", "gamma", "degree", "coef0") if k in c}
        record = BIF(order=order).evaluate_setting(
            factory, y_pm, result.fold_ids, setting, [c["lam"]], machine=machine,
            memory_budget=memory_budget)[0]
        values.append(record["cv_error"])
    return values


def _reusable_exact(result, candidate) -> bool:
    """Whether a candidate's exact error belongs on the kernel machine's exact curve (an
    rff refinement of a binary svm refits scikit-learn's SVC: not the same machine)."""
    svc = result.machine == "svm" and not result.machine_spec.is_multiclass
    return candidate["exact_error"] is not None and not (
        candidate["status"] == "refined" and svc)


def _exact_along(result, candidates, X, y, memory_budget, progress):
    """Exact refit CV of the given candidates (reusing confirmations already made).

    The curve is of the kernelcv machine throughout: the exact errors of an rff
    refinement are those of scikit-learn's SVC for a binary svm, so they are not reused
    there (a multiclass refinement refits the kernelcv machines: reused).
    """
    values = [c["exact_error"] if _reusable_exact(result, c) else None for c in candidates]
    todo = [i for i, v in enumerate(values) if v is None]
    machine = result.machine_spec
    _, y_pm, _ = check_data(X, y, machine.is_classifier, multiclass=True)
    tasks = [{"setting": {k: candidates[i][k] for k in ("kernel", "gamma", "degree", "coef0")
                          if k in candidates[i]},
              "lam": candidates[i]["lam"], "n_folds": candidates[i]["n_folds"]}
             for i in todo]
    shared = {"method": result.criterion, "machine": machine,
              "data": GramFactory(X, memory_budget=memory_budget), "y": y_pm,
              "fold_ids": result.fold_ids, "random_state": result.config["random_state"],
              "memory_budget": memory_budget}
    for done, (position, out) in enumerate(run_tasks(exact_task, tasks, shared=shared),
                                           start=1):
        values[todo[position]] = out["cv_error"]
        if progress is not None:
            progress("plot", done, len(todo))
    return values
