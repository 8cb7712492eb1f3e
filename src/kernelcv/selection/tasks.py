"""The units of work of a grid search, as plain functions that run on any worker.

A *kernel setting* (kernel name plus its parameters) is one task: the CV method object
evaluates every lam of it (:meth:`kernelcv.selection.methods.CVMethod.evaluate_setting`);
an exact refit of one candidate is the safeguards' task. Both are module-level functions of
picklable arguments (the method and the machine are frozen values), so they run unchanged
in this process, on joblib workers or on a Dask cluster, and return JSON-able records that
can be written to a checkpoint and read back unchanged.

Inputs are trusted: :func:`kernelcv.selection.search.run_search` validates them once.
"""

from __future__ import annotations

from ..machines import Machine


def evaluate_task(method, machine: Machine, data, y, fold_ids, random_state,
                  memory_budget, setting: dict, lams, warm_starts=None) -> list[dict]:
    """Every lam of one kernel setting with ``method`` (one record per lam, in order);
    ``method`` is a CV method object (:class:`~kernelcv.selection.methods.CVMethod`).

    ``warm_starts``: the search's :class:`~kernelcv.selection.warm_starts.WarmStarts`
    (the kernel methods start each fit from its nearest stored fit), or None.
    """
    return method.evaluate_setting(data, y, fold_ids, setting, lams, machine=machine,
                                   random_state=random_state, memory_budget=memory_budget,
                                   warm_starts=warm_starts)


def exact_task(method, machine: Machine, data, y, fold_ids, random_state,
               memory_budget, setting: dict, lam: float, n_folds: int,
               warm_starts=None) -> dict:
    """Exact refit CV of one candidate on the folds its score was computed on (its full
    fit, where one is made, starts from ``warm_starts``' nearest stored fit)."""
    return method.exact_candidate(data, y, fold_ids, setting, lam, n_folds, machine=machine,
                                  random_state=random_state, memory_budget=memory_budget,
                                  warm_starts=warm_starts)
