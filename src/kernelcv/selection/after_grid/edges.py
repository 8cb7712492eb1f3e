"""Whether the chosen kernel parameter or lam lies on the edge of its grid.

A choice at the end of a grid may be better still beyond it: the search cannot tell. The
note names the parameter, the end (smallest or largest) and the direction to widen the
grid in. It looks at the whole grid that was asked for (``settings`` and their lam
lists), not only at the candidates evaluated, so a screened search is judged alike.
"""

from __future__ import annotations

# What widening a grid beyond its smallest / largest value means, per parameter.
_ADVICE = {
    "gamma": ("smaller gamma, i.e. wider kernels", "larger gamma, i.e. narrower kernels"),
    "degree": ("lower degrees", "higher degrees"),
    "lam": ("smaller lam, i.e. larger C", "larger lam, i.e. smaller C"),
}


def grid_edges(best: dict, settings, setting_lams, param_name) -> dict:
    """``{parameter: "low" | "high"}`` for each searched parameter whose chosen value is
    the smallest or largest of its grid (grids of one value have no edge).

    ``best`` is the chosen candidate; ``settings`` the kernel settings searched and
    ``setting_lams`` each setting's lam values.
    """
    edges = {}
    if param_name is not None:
        values = sorted({s[param_name] for s in settings if param_name in s})
        edge = _edge(best.get(param_name), values)
        if edge:
            edges[param_name] = edge
    index = best.get("setting")
    lams = sorted(set(setting_lams[index])) if index is not None else []
    edge = _edge(best["lam"], lams)
    if edge:
        edges["lam"] = edge
    return edges


def edge_distance(candidates, settings, setting_lams, param_name, index: int) -> int:
    """How many grid steps candidate ``index`` lies from the nearest edge of its grid: the
    smallest over the searched parameters (the kernel parameter among ``settings``, lam
    among its setting's ``setting_lams``) of its position from either end; parameters
    with one value do not count. O(grid size)."""
    best = candidates[index]
    distances = []
    if param_name is not None and param_name in best:
        values = sorted({s[param_name] for s in settings if param_name in s})
        distances.append(_steps_in(best[param_name], values))
    setting = best.get("setting")
    if setting is not None:
        distances.append(_steps_in(best["lam"], sorted(set(setting_lams[setting]))))
    distances = [d for d in distances if d is not None]
    return min(distances) if distances else 0


def _steps_in(value, values):
    if len(values) < 2:
        return None
    position = min(range(len(values)), key=lambda i: abs(values[i] - value))
    return min(position, len(values) - 1 - position)


def _edge(value, values):
    if value is None or len(values) < 2:
        return None
    if value <= values[0]:
        return "low"
    if value >= values[-1]:
        return "high"
    return None


def edge_note(edges: dict, best: dict, reasons: dict | None = None) -> list[str]:
    """The note for :func:`grid_edges`'s answer (empty when the choice is inside).

    ``reasons``: ``{parameter: {end: why}}`` for grid ends that are ends for a reason (a
    data-derived gamma grid, :meth:`GammaGrid.edge_reasons`); such an end gets the reason
    instead of the advice to widen the grid.
    """
    if not edges:
        return []
    parts, widen = [], False
    for name, end in edges.items():
        where = "smallest" if end == "low" else "largest"
        why = (reasons or {}).get(name, {}).get(end)
        if why:
            parts.append(f"{name} = {best[name]:g} is the {where} of its grid ({why})")
            continue
        widen = True
        toward = _ADVICE.get(name, ("smaller values", "larger values"))[end == "high"]
        parts.append(f"{name} = {best[name]:g} is the {where} of its grid (widen it toward "
                     f"{toward})")
    return ["grid edge: the chosen " + "; ".join(parts)
            + (": a better value may lie outside the grid" if widen else "")]
