"""Widening the default lam grid toward large C where the data need it.

The default lam grid is ``2^i / n``, i = -3..11, which is SVC's C = 1 / (2 n lam) from
2^-12 to 4 (:func:`~kernelcv.selection.space.grids.default_lams`). Many data sets choose
C on that grid's large-C edge, so the default search holds a *reserve* below it,
``2^i / n`` for i = -12..-4 (C = 8 .. 2^11, LIBSVM's grid.py reaches 2^15), and
evaluates it only where the data lead there: while the best candidate so far lies on
its kernel setting's smallest lam evaluated, is strictly better than that setting's
other lam values, and reserve values remain below it, the :data:`KEEP` best such settings
get the next :data:`STEP` reserve values (C times 2 each). Evaluating the whole reserve
would cost 60 % more candidates, the most expensive ones (large C: more support vectors,
slower Newton and BIF convergence); this costs nothing where the choice is inside the
grid and at most ``KEEP * 9`` candidates where it is not.

The scores compared are the search's own (approximate for BIF, confirmed afterwards as
every candidate's); the edge note (:mod:`.edges`) judges the choice against the grid
with its whole reserve, so it speaks only of a choice at C = 2^11.
"""

from __future__ import annotations

import math

#: How many reserve lam values a widened kernel setting gets per round.
STEP = 3
#: How many kernel settings are widened per round (the best ones on the edge).
KEEP = 3


def extend_at_edge(per_setting: dict, setting_lams, reserve, evaluate) -> tuple[dict, list]:
    """Evaluate reserve lam values below the grid while the best candidate is on its edge.

    Parameters
    ----------
    per_setting : ``{setting index: [record, ...]}`` of the grid's evaluation (each record
        has ``lam`` and ``score``, smaller is better); extended in place.
    setting_lams : each setting's lam values of the grid (without the reserve).
    reserve : lam values below every setting's grid, any order.
    evaluate : ``evaluate({setting index: [lam, ...]})`` -> ``{setting index: [record, ...]}``.

    Returns
    -------
    (per_setting, notes) : the records (each setting's sorted by lam) and one note saying
    what was widened, or none. Cost: at most ``len(reserve) / STEP`` rounds of ``KEEP``
    tasks of ``STEP`` lam values.
    """
    reserve = sorted((float(v) for v in reserve), reverse=True)
    widened: dict[int, int] = {}
    rounds = 0
    while True:
        request = {}
        for index in _on_edge(per_setting, setting_lams)[:KEEP]:
            smallest = min(r["lam"] for r in per_setting[index])
            below = [lam for lam in reserve if lam < smallest * (1 - 1e-9)][:STEP]
            if below:
                request[index] = below
        if not request:
            break
        rounds += 1
        for index, records in evaluate(request).items():
            per_setting[index] = sorted([*per_setting[index], *records],
                                        key=lambda r: r["lam"])
            widened[index] = widened.get(index, 0) + len(records)
    if not widened:
        return per_setting, []
    added = sum(widened.values())
    return per_setting, [f"grid widened toward large C: the best candidate lay on the "
                         f"default grid's large-C edge, so {added} reserve candidates "
                         f"(C up to 2^11) of {len(widened)} kernel settings were evaluated "
                         f"in {rounds} rounds"]


def _on_edge(per_setting, setting_lams) -> list[int]:
    """The settings whose smallest evaluated lam (at or below their grid's smallest) has
    the search's best score and beats their other lam values, best first."""
    scores = [r["score"] for records in per_setting.values() for r in records
              if r["score"] is not None and math.isfinite(r["score"])]
    if not scores:
        return []
    best = min(scores)
    found = []
    for index, records in per_setting.items():
        if not records or index >= len(setting_lams):
            continue
        edge = min(records, key=lambda r: r["lam"])
        if edge["lam"] > min(setting_lams[index]) * (1 + 1e-9):
            continue  # a walk did not reach this setting's edge
        others = [r["score"] for r in records if r is not edge and r["score"] is not None]
        score = edge["score"]
        if score is None or not math.isfinite(score) or score > best:
            continue
        if others and not score < min(others):
            continue
        found.append((score, index))
    return [index for _, index in sorted(found)]
