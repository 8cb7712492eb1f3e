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

from ..machines import Machine, make_machine
from .methods import BIF, GACV, ClosedForm, CVMethod, ExactRefit, GranularityRule


def evaluate_task(method: CVMethod, machine: Machine, data, y, fold_ids, random_state,
                  memory_budget, setting: dict, lams) -> list[dict]:
    """Every lam of one kernel setting with ``method`` (one record per lam, in order)."""
    return method.evaluate_setting(data, y, fold_ids, setting, lams, machine=machine,
                                   random_state=random_state, memory_budget=memory_budget)


def exact_task(method: CVMethod, machine: Machine, data, y, fold_ids, random_state,
               memory_budget, setting: dict, lam: float, n_folds: int) -> dict:
    """Exact refit CV of one candidate on the folds its score was computed on."""
    return method.exact_candidate(data, y, fold_ids, setting, lam, n_folds, machine=machine,
                                  random_state=random_state, memory_budget=memory_budget)


def machine_from_config(config: dict) -> Machine:
    """The :class:`Machine` described by a search configuration (``SearchResult.config``)."""
    return make_machine(config["machine"], huber_width=config["huber_width"],
                        epsilon=config["svr_epsilon"], fit_intercept=config["fit_intercept"])


def method_from_config(config: dict) -> CVMethod:
    """The kernel CV method object described by a search configuration.

    For the report's curves (:mod:`kernelcv.reports.select`), which re-evaluate chosen
    candidates with another order or exactly.
    """
    if config["method"] == BIF.name and config["folds"] == "auto":
        return BIF(tol=config["tol"], granularity=GranularityRule(config["epsilon"],
                                                                    config["granularity"]))
    if config["method"] == BIF.name:
        return BIF(order=config["order"], tol=config["tol"])
    return {cls.name: cls for cls in (ExactRefit, ClosedForm, GACV)}.get(
        config["method"], ExactRefit)()


def evaluate_setting(data, y, fold_ids, setting: dict, lams, config: dict) -> list[dict]:
    """:func:`evaluate_task` with the method and machine of a search configuration."""
    return evaluate_task(method_from_config(config), machine_from_config(config), data, y,
                         fold_ids, config.get("random_state"), config.get("memory_budget"),
                         setting, lams)


def exact_candidate(data, y, fold_ids, setting: dict, lam: float, config: dict) -> dict:
    """:func:`exact_task` with the method and machine of a search configuration.

    ``config["n_folds"]``: the candidate's number of folds (granularity selection).
    """
    return exact_task(method_from_config(config), machine_from_config(config), data, y,
                      fold_ids, config.get("random_state"), config.get("memory_budget"),
                      setting, lam, config.get("n_folds", int(fold_ids.max()) + 1))
