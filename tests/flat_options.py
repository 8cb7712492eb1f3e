"""Test plumbing: search options that parametrised tests keep in one flat dict, turned into
the machine, method and option-group objects the front doors take (kernelcv 0.2).

``as_objects("svm", {"method": "bif", "order": 5, "confirm": 0, "checkpoint": p})`` gives
``(make_machine("svm"), {"method": BIF(order=5), "safeguards": Safeguards(confirm=0),
"execution": Execution(checkpoint=p)})``; other keys pass through unchanged.
"""

from __future__ import annotations

from kernelcv import Execution, Safeguards, make_machine
from kernelcv.machines import Machine
from kernelcv.selection.method_choice import make_method
from kernelcv.selection.moved_options import (
    EXECUTION_OPTIONS,
    MACHINE_OPTIONS,
    METHOD_OPTIONS,
    SAFEGUARD_OPTIONS,
)


def _take(options: dict, names) -> dict:
    return {name: options.pop(name) for name in list(options) if name in names}


def as_objects(machine, flat: dict, machine_epsilon=False) -> tuple[Machine, dict]:
    """``(machine object, keyword arguments with objects)`` of a flat option dict;
    ``machine_epsilon``: the options are ``cross_validate``'s, where ``epsilon`` is the
    SVR's (not BIF's) and ``memory_budget`` stays a parameter of its own."""
    options = dict(flat)
    machine_options = {MACHINE_OPTIONS[name]: value
                       for name, value in _take(options, MACHINE_OPTIONS).items()}
    if machine_epsilon and "epsilon" in options:
        machine_options["epsilon"] = options.pop("epsilon")
    spec = machine if isinstance(machine, Machine) else make_machine(machine, **machine_options)
    method_options = _take(options, METHOD_OPTIONS)
    if method_options or isinstance(options.get("method"), str):
        options["method"] = make_method(options.get("method"), spec.name,
                                        folds=options.get("folds", 10), **method_options)
    safeguards = _take(options, SAFEGUARD_OPTIONS)
    if safeguards:
        options["safeguards"] = Safeguards(**safeguards)
    execution = _take(options, () if machine_epsilon else EXECUTION_OPTIONS)
    if execution:
        given = options.pop("execution", None)
        base = {} if given is None else vars(given)
        options["execution"] = Execution(**{**base, **execution})
    return spec, options
