"""The flat keyword options of kernelcv 0.1 that moved into option objects.

Up to 0.1 every front door (``grid_search``, ``cross_validate``, ``KernelSearchCV``,
``run_select``) took each method's, machine's and execution's options flat, beside each
other: 19 to 47 parameters. They now take the objects that already carried these options
inside the search:

=====================  ===================================================================
object                 the flat options it holds
=====================  ===================================================================
the machine            ``make_machine(name, huber_width=, epsilon=, fit_intercept=,
                       multiclass=)`` (``svr_epsilon`` of the searches is ``epsilon``)
the method             ``BIF(order=, tol=, granularity=GranularityRule(epsilon, rule))``,
                       ``FeatureSpace(features=, feature_map=, feature_loss=,
                       feature_seed=, refine=, refine_evals=, max_features=,
                       feature_time=, final=, final_features=, final_kernel_limit=)``
``Safeguards``         ``confirm``, ``recheck_degenerate``
``Execution``          ``n_jobs``, ``backend``, ``scheduler``, ``checkpoint``,
                       ``progress``, ``memory_budget``
``kernel_params``      a dict of the fixed kernel parameters ``gamma``, ``degree``,
                       ``coef0`` (poly's, and the degree of a single setting)
=====================  ===================================================================

A function front door still accepts the old names for one release: :func:`split_moved`
sorts them into these groups with one ``FutureWarning`` that shows the new spelling.
``KernelSearchCV`` cannot (scikit-learn reads its parameters from the signature): it
refuses them with :func:`moved_error`, which names the object to use.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..exceptions import KernelCVError
from ..machines import Machine, make_machine

#: where each old flat option lives now: (group, the name inside it)
MACHINE_OPTIONS = {"huber_width": "huber_width", "svr_epsilon": "epsilon",
                   "fit_intercept": "fit_intercept", "multiclass": "multiclass"}
METHOD_OPTIONS = ("order", "epsilon", "granularity", "tol", "features", "feature_map",
                  "feature_loss", "feature_seed", "refine", "refine_evals", "max_features",
                  "feature_time", "final", "final_features", "final_kernel_limit")
SAFEGUARD_OPTIONS = ("confirm", "recheck_degenerate")
EXECUTION_OPTIONS = ("n_jobs", "backend", "scheduler", "checkpoint", "progress",
                     "memory_budget")
KERNEL_OPTIONS = ("gamma", "degree", "coef0")

_SPELLING = {
    "machine": "machine=make_machine(name, {args})",
    "method": "method=<method object>({args}), e.g. BIF(order=5) or FeatureSpace(features=200)",
    "safeguards": "safeguards=Safeguards({args})",
    "execution": "execution=Execution({args})",
    "kernel_params": "kernel_params={{{args}}}",
}


@dataclass
class MovedOptions:
    """The old flat options of one call, sorted by the object that holds them now."""

    machine: dict = field(default_factory=dict)
    method: dict = field(default_factory=dict)
    safeguards: dict = field(default_factory=dict)
    execution: dict = field(default_factory=dict)
    kernel_params: dict = field(default_factory=dict)
    other: dict = field(default_factory=dict)


def _group_of(name: str, machine_epsilon: bool) -> tuple[str, str] | None:
    if name == "epsilon" and machine_epsilon:
        return "machine", "epsilon"
    if name in MACHINE_OPTIONS:
        return "machine", MACHINE_OPTIONS[name]
    if name in METHOD_OPTIONS:
        return "method", name
    if name in SAFEGUARD_OPTIONS:
        return "safeguards", name
    if name in EXECUTION_OPTIONS:
        return "execution", name
    if name in KERNEL_OPTIONS:
        return "kernel_params", name
    return None


def _spelling(groups: dict) -> str:
    parts = []
    for group, names in groups.items():
        if group == "kernel_params":
            args = ", ".join(f"{name!r}: ..." for name in names)
        else:
            args = ", ".join(f"{name}=..." for name in names)
        parts.append(_SPELLING[group].format(args=args))
    return "; ".join(parts)


def split_moved(owner: str, options: dict, *, machine_epsilon: bool = False,
                passthrough: tuple = (), stacklevel: int = 3) -> MovedOptions:
    """Sort a call's old flat options by the object that holds them now.

    ``owner`` names the front door in the messages; ``machine_epsilon``: ``epsilon`` is
    the SVR's tube (``cross_validate``), not the granularity tolerance (the searches);
    ``passthrough``: old names the caller still handles itself (returned in ``other``);
    ``stacklevel``: the warning's, as :func:`warnings.warn` takes it from here.
    One ``FutureWarning`` lists the new spelling; an unknown name is a ``TypeError``, as
    Python's own for a wrong keyword.
    """
    moved = MovedOptions()
    groups: dict[str, list[str]] = {}
    for name, value in options.items():
        if name in passthrough:
            moved.other[name] = value
            continue
        where = _group_of(name, machine_epsilon)
        if where is None:
            raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}")
        group, inner = where
        getattr(moved, group)[inner] = value
        groups.setdefault(group, []).append(inner)
    if groups:
        names = ", ".join(sorted(n for n in options if n not in passthrough))
        warnings.warn(
            f"{owner}({names}): these options moved into objects in kernelcv 0.2 and the "
            f"flat names go in 0.3; write {_spelling(groups)}", FutureWarning,
            stacklevel=stacklevel)
    return moved


def moved_error(owner: str, names) -> Exception:
    """The error of a front door that cannot take the old names (``KernelSearchCV``)."""
    groups: dict[str, list[str]] = {}
    unknown = []
    for name in names:
        where = _group_of(name, False)
        if where is None:
            unknown.append(name)
        else:
            groups.setdefault(where[0], []).append(where[1])
    if unknown:
        return TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    return KernelCVError(f"{owner}({', '.join(names)}): these options moved into objects in "
                         f"kernelcv 0.2; write {_spelling(groups)}")


def machine_of(machine, options: dict) -> Machine:
    """A machine object from a name and its 0.1 flat options, or the object given (then
    those options are refused: they belong to :func:`~kernelcv.machines.make_machine`)."""
    if isinstance(machine, Machine):
        if options:
            raise KernelCVError(f"machine is the object {machine.name!r}: give its options "
                                f"({', '.join(options)}) to make_machine")
        return machine
    return make_machine(machine, **options)
