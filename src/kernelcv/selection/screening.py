"""Screening: spend CV work only where the optimum of the (kernel, lam) grid can be.

Strategy ``"coarse"`` (coarse to fine):

1. evaluate the coarse sub-grid: every other kernel setting and every other lam, with
   the last of each kept (11 x 8 of the default 21 x 15 grid, 28 % of it);
2. take the ``keep`` best evaluated points and evaluate every unevaluated grid point next
   to them (the 3 x 3 block around each);
3. repeat step 2 until the ``keep`` best points have no unevaluated neighbour, i.e. each
   is a local minimum of the evaluated surface on the full grid.

Each round's points are grouped by kernel setting, so a setting's Gram matrix is built
once per round and its lam values are still walked in descending order with warm starts.
The evaluated candidates are a subset of the full grid with the same records, so a point
evaluated by both the screen and the full grid has the same value. What the screen can
miss is an isolated minimum more than one grid step away from every good coarse point;
the benchmark (``make bench-select``) measures whether that costs test error.

Cost: about 30-45 % of the full grid's candidates on the default grid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..exceptions import KernelCVError

STRATEGIES = ("off", "coarse")


@dataclass(frozen=True)
class Screening:
    """Which candidates a search evaluates: all of them (``"off"``) or a coarse-to-fine walk.

    ``keep``: how many of the best points have their neighbourhoods evaluated in each
    round of the ``"coarse"`` strategy (>= 1).
    """

    strategy: str = "off"
    keep: int = 3

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise KernelCVError(f"screen must be one of {', '.join(STRATEGIES)}, got "
                                f"{self.strategy!r}")
        if isinstance(self.keep, bool) or not isinstance(self.keep, int) or self.keep < 1:
            raise KernelCVError(f"screen keep must be an integer >= 1, got {self.keep!r}")

    @property
    def enabled(self) -> bool:
        return self.strategy != "off"


def _coarse(count: int) -> list[int]:
    """Every other index of ``range(count)``, keeping the last one."""
    indices = list(range(0, count, 2))
    if count and indices[-1] != count - 1:
        indices.append(count - 1)
    return indices


def coarse_to_fine(setting_lams: list[list[float]], evaluate: Callable, keep: int = 3,
                   max_rounds: int = 50) -> tuple[dict[int, list[dict]], int]:
    """Run the coarse-to-fine walk over grid points ``(setting i, lam index j)``.

    Parameters
    ----------
    setting_lams : the lam values of each kernel setting (settings ordered along their
        parameter, lam values as the full grid has them).
    evaluate : ``evaluate({i: [lam, ...]}) -> {i: [record, ...]}``, one record (a dict
        with ``lam`` and ``score``) per requested lam.
    keep : best points whose neighbourhoods are evaluated each round.
    max_rounds : refinement rounds at most (the walk stops earlier on a grid of this size).

    Returns
    -------
    per_setting : ``{i: records}`` of every evaluated point, each setting's records in
        the order of its lam values.
    rounds : refinement rounds done after the coarse stage.
    """
    records: dict[tuple[int, int], dict] = {}
    n_settings = len(setting_lams)

    def run(points):
        request: dict[int, list[int]] = {}
        for i, j in sorted(points):
            request.setdefault(i, []).append(j)
        results = evaluate({i: [setting_lams[i][j] for j in js] for i, js in request.items()})
        for i, js in request.items():
            for j, record in zip(js, results[i], strict=True):
                records[(i, j)] = record

    run({(i, j) for i in _coarse(n_settings) for j in _coarse(len(setting_lams[i]))})
    rounds = 0
    while rounds < max_rounds:
        ranked = sorted(records, key=lambda p: (records[p]["score"], p))
        wanted = set()
        for i, j in ranked[:keep]:
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    a, b = i + di, j + dj
                    if 0 <= a < n_settings and 0 <= b < len(setting_lams[a]) \
                            and (a, b) not in records:
                        wanted.add((a, b))
        if not wanted:
            break
        run(wanted)
        rounds += 1
    per_setting: dict[int, list[dict]] = {}
    for i, j in sorted(records):
        per_setting.setdefault(i, []).append(records[(i, j)])
    return per_setting, rounds
