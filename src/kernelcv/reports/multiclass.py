"""What ``kernelcv select`` reports about a multiclass search: confusion matrices.

For more than two classes the report gets a ``multiclass`` entry: the scheme
(``"ovo"``/``"ovr"``), the classes, and the confusion matrix and per-class error of

* ``cv``: the chosen candidate's held-out predictions by exact refit CV on the search's
  folds (so its error is the exact CV error of the choice): those of its confirmation
  when the safeguards refit it (always, unless ``--no-safeguards``), else one exact CV
  here, and
* ``test``: the refit model's predictions on the test data, when there is a test file.

``cv`` is None (a note says why, :func:`exact_confusion_skipped`) when its exact refits
would need what the search avoided: rows read in chunks, or after a random-feature search
n above the refinement's automatic limit or dense refits beyond the memory budget.

With ``--plot`` each becomes a figure (``confusion_cv.png``, ``confusion_test.png``).
"""

from __future__ import annotations

from ..criteria.result import confusion_summary
from ..cv import cross_validate
from ..plotting import confusion_figure
from ..random_features.method import FeatureSpace
from ..random_features.refine import REFINE_AUTO_LIMIT, dense_refits_fit, refine_wanted, refit_name
from .io import png

CV_CONFUSION_NAME = "confusion_cv.png"
TEST_CONFUSION_NAME = "confusion_test.png"


def multiclass_entry(result, X, y, *, test_labels=None, test_predicted=None,
                     memory_budget=None, exact_cv=True) -> dict:
    """The report's ``multiclass`` entry for a finished multiclass search ``result``.

    ``exact_cv`` False (rows read in chunks): no ``cv`` confusion (None), since its exact
    refits need the rows in memory.
    """
    spec = result.machine_spec
    classes = [result.label_mapping[code] for code in sorted(result.label_mapping)]
    entry = {"strategy": spec.multiclass, "classes": classes, "cv": None, "test": None}
    if exact_cv:
        codes = result.exact_heldout.get(result.best_index)
        if codes is not None:
            labels = [classes[int(code)] for code in codes]
        else:
            labels = _exact_labels(result, X, y, memory_budget)
        entry["cv"] = confusion_summary(y, labels, classes)
    if test_labels is not None:
        entry["test"] = confusion_summary(test_labels, test_predicted, classes)
    return entry


def exact_confusion_skipped(result, stream, memory_budget):
    """Why a multiclass report has no exact CV confusion matrix, or None when it has one.

    Its exact refit CV needs the rows in memory and, after a random-feature search
    (whose point is to avoid kernel fits), the sizes its refinement would refit.
    """
    n = result.n_samples
    if stream:
        return "the rows were read in chunks (--stream)"
    feature_space = isinstance(result.criterion, FeatureSpace)
    if not feature_space or result.exact_heldout.get(result.best_index) is not None:
        return None
    refine = result.criterion.refine  # refine=True asked for the kernel fits: made here too
    if not refine_wanted(True if refine is True else "auto", n):
        return (f"n = {n} > {REFINE_AUTO_LIMIT}, where its t kernel fits are what method "
                "'rff' avoids")
    if not dense_refits_fit(refit_name(result.machine_spec), n, memory_budget):
        return f"its dense {n} x {n} refits exceed the memory budget"
    return None


def _exact_labels(result, X, y, memory_budget):
    """Held-out labels of the choice by one exact refit CV on the search's folds."""
    best = result.best_params
    held_out = cross_validate(
        X, y, result.machine_spec, kernel=best["kernel"], gamma=best.get("gamma"),
        lam=best["lam"], degree=int(best.get("degree", 3)),
        coef0=float(best.get("coef0", 1.0)), folds=result.fold_ids, method="exact",
        memory_budget=memory_budget)
    return held_out.labels


def confusion_figures(entry) -> dict[str, bytes]:
    """PNG bytes of the confusion matrices of a ``multiclass`` entry."""
    figures = {}
    if entry.get("cv") is not None:
        figures[CV_CONFUSION_NAME] = png(confusion_figure(
            entry["cv"]["confusion"], entry["classes"],
            title=f"held-out predictions (exact CV, {entry['strategy']})"))
    if entry.get("test") is not None:
        figures[TEST_CONFUSION_NAME] = png(confusion_figure(
            entry["test"]["confusion"], entry["classes"], title="test predictions"))
    return figures
