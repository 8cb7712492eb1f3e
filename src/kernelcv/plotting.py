"""Figures for the model-selection report of ``kernelcv select``.

matplotlib is an optional dependency (``pip install 'kernelcv[plot]'``). It is imported
only when a figure is made, so the rest of kernelcv works without it.

The functions build :class:`matplotlib.figure.Figure` objects directly instead of going
through ``pyplot``: no global state is touched, no window is opened, no backend is
selected for the whole process, and figures can be made from several threads at once.
PNG output goes through the Agg renderer when the figure is saved. Use
:func:`save_figure` to write a figure so that a reader never sees half a file.
:func:`figure_class` gives the ``Figure`` class to other figure makers (the reports,
the bench), with the same advice when matplotlib is missing.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .exceptions import KernelCVError
from .reports.io import new_file_mode

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["cv_curve_figure", "figure_class", "heatmap_figure", "save_figure"]

_MISSING_MATPLOTLIB = "plots need matplotlib: pip install 'kernelcv[plot]'"

# Parameters whose grids are read on a linear axis; every other one is log2-scaled.
_LINEAR_PARAMS = frozenset({"degree"})

# At most this many labelled ticks per axis; longer grids label every k-th value.
_MAX_TICKS = 12


def figure_class() -> type[Figure]:
    """Import matplotlib on first use, or explain how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise KernelCVError(_MISSING_MATPLOTLIB) from error
    return Figure


def _colormap(cmap: Any) -> Any:
    """The named (or given) colour map, with failed cells drawn transparent."""
    from matplotlib import colormaps

    if isinstance(cmap, str):
        try:
            cmap = colormaps[cmap]
        except KeyError:
            raise KernelCVError(f"unknown colour map {cmap!r}") from None
    return cmap.with_extremes(bad=(0.0, 0.0, 0.0, 0.0))


def _is_log(param: str, log_param: bool | None) -> bool:
    return param not in _LINEAR_PARAMS if log_param is None else bool(log_param)


def _as_float(value: Any, what: str) -> float:
    """A finite-or-NaN float; ``None`` (a failed candidate) becomes NaN."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise KernelCVError(f"{what} must be a number, got {value!r}") from None


def _check_axis_values(values: np.ndarray, name: str, log: bool) -> None:
    if not np.all(np.isfinite(values)):
        raise KernelCVError(f"{name} values must be finite numbers; got {values.tolist()}")
    if log and np.any(values <= 0):
        raise KernelCVError(
            f"{name} is drawn on a log2 scale, so its values must be positive; "
            f"got {values.tolist()}"
        )


def _tick_label(value: float, log: bool) -> str:
    """``2^k`` (as mathtext) for powers of two on a log axis, else a short number."""
    if log:
        exponent = math.log2(value)
        if abs(exponent - round(exponent)) < 1e-9:
            return f"$2^{{{round(exponent)}}}$"
    if float(value).is_integer() and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.3g}"


def _tick_indices(n: int) -> np.ndarray:
    step = max(1, math.ceil(n / _MAX_TICKS))
    return np.arange(0, n, step)


def _axis_label(name: str, log: bool) -> str:
    return f"{name} (log2 scale)" if log else name


def _grid_position(target: float, values: np.ndarray, log: bool, name: str) -> float:
    """Position of ``target`` on an index axis whose cells hold the sorted ``values``.

    A grid value maps to its own cell; a value between grid points (e.g. from a refined
    search) is placed by interpolation in the axis' own scale.
    """
    if log and not target > 0:
        raise KernelCVError(f"best {name} must be positive on a log2 axis, got {target!r}")
    coords = np.log2(values) if log else values
    point = math.log2(target) if log else target
    close = np.isclose(values, target, rtol=1e-9, atol=0.0)
    if np.any(close):
        return float(np.flatnonzero(close)[0])
    if len(values) == 1 or not coords[0] <= point <= coords[-1]:
        raise KernelCVError(
            f"best {name}={target:g} lies outside the grid "
            f"[{values[0]:g}, {values[-1]:g}]; pass the best candidate of these records"
        )
    return float(np.interp(point, coords, np.arange(len(values), dtype=float)))


def heatmap_figure(
    records: Iterable[Mapping[str, Any]],
    *,
    param: str = "gamma",
    value: str = "cv_error",
    best: Mapping[str, Any] | None = None,
    title: str | None = None,
    metric_label: str | None = None,
    log_param: bool | None = None,
    cmap: Any = "viridis",
) -> Figure:
    """Draw a selection criterion over the grid of kernel parameter and ``lam``.

    Each grid cell is coloured by the criterion of one candidate. The cells are laid out
    by rank, so a log-spaced grid gets equal-sized cells; the tick labels give the
    actual values, as powers of two where the axis is log2-scaled.

    Parameters
    ----------
    records : iterable of mapping
        One mapping per candidate with at least the keys ``param``, ``"lam"`` and
        ``value``. The order does not matter and the grid need not be complete: a
        (parameter, lam) pair without a record is left blank, and so is a record whose
        ``value`` is ``None`` or NaN (a candidate that failed).
    param : str, default "gamma"
        Key of the kernel parameter, e.g. ``"gamma"`` or ``"degree"``. It goes on the
        horizontal axis.
    value : str, default "cv_error"
        Key of the criterion to colour the cells by.
    best : mapping, optional
        The chosen candidate, with keys ``param`` and ``"lam"``; marked with a star. A
        value between grid points is placed where it falls between them.
    title : str, optional
        Figure title; by default it names the metric.
    metric_label : str, optional
        Label of the colour bar, e.g. ``"10-fold CV error (0-1)"``. Defaults to
        ``value``.
    log_param : bool, optional
        Whether the kernel parameter axis is log2-scaled. By default it is, except for
        ``"degree"``. The ``lam`` axis is always log2-scaled.
    cmap : str or matplotlib.colors.Colormap, default "viridis"
        Colour map, by name or as an object.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure with one image axes and a colour bar; it is not shown or saved.

    Raises
    ------
    KernelCVError
        If matplotlib is not installed, there are no records, a record lacks a key or
        holds a value that is not a number, two records share a grid cell, a value on a
        log2 axis is not positive, ``best`` lies outside the grid, or ``cmap`` names
        no known colour map.
    """
    Figure = figure_class()
    records = list(records)
    if not records:
        raise KernelCVError("no candidates to plot: the selection produced no records")
    log_x = _is_log(param, log_param)
    metric_label = value if metric_label is None else metric_label

    points: list[tuple[float, float, float]] = []
    for i, record in enumerate(records):
        missing = [key for key in (param, "lam", value) if key not in record]
        if missing:
            raise KernelCVError(
                f"record {i} lacks {', '.join(map(repr, missing))}; "
                f"it has {sorted(map(str, record))}"
            )
        x = _as_float(record[param], f"record {i}: {param}")
        lam = _as_float(record["lam"], f"record {i}: lam")
        z = _as_float(record[value], f"record {i}: {value}")
        points.append((x, lam, z))

    table = np.array(points, dtype=float).reshape(-1, 3)
    xs, lams, zs = table[:, 0], table[:, 1], table[:, 2]
    _check_axis_values(xs, param, log_x)
    _check_axis_values(lams, "lam", log=True)
    x_values = np.unique(xs)
    lam_values = np.unique(lams)

    grid = np.full((len(lam_values), len(x_values)), np.nan)
    seen = np.zeros(grid.shape, dtype=bool)
    cols = np.searchsorted(x_values, xs)
    rows = np.searchsorted(lam_values, lams)
    for row, col, z in zip(rows, cols, zs, strict=True):
        if seen[row, col]:
            raise KernelCVError(
                f"two records for {param}={x_values[col]:g}, lam={lam_values[row]:g}; "
                "give one record per candidate"
            )
        seen[row, col] = True
        grid[row, col] = z
    grid[~np.isfinite(grid)] = np.nan
    cells = np.ma.masked_invalid(grid)

    if cells.count():
        vmin, vmax = float(cells.min()), float(cells.max())
    else:  # every candidate failed: an empty map with a neutral scale
        vmin, vmax = 0.0, 1.0
    if vmin == vmax:
        vmin, vmax = vmin - 0.5, vmax + 0.5

    width = min(14.0, max(4.8, 2.8 + 0.5 * len(x_values)))
    height = min(12.0, max(3.6, 1.6 + 0.35 * len(lam_values)))
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_facecolor("white")
    image = ax.imshow(cells, origin="lower", aspect="auto", interpolation="nearest",
                      cmap=_colormap(cmap), vmin=vmin, vmax=vmax)
    colorbar = fig.colorbar(image, ax=ax)
    colorbar.set_label(metric_label)

    x_ticks = _tick_indices(len(x_values))
    ax.set_xticks(x_ticks, [_tick_label(v, log_x) for v in x_values[x_ticks]])
    y_ticks = _tick_indices(len(lam_values))
    ax.set_yticks(y_ticks, [_tick_label(v, True) for v in lam_values[y_ticks]])
    ax.set_xlabel(_axis_label(param, log_x))
    ax.set_ylabel(_axis_label("lam", True))

    if best is not None:
        for key in (param, "lam"):
            if key not in best:
                raise KernelCVError(f"best candidate lacks {key!r}; it has {sorted(best)}")
        bx = _grid_position(_as_float(best[param], f"best {param}"), x_values, log_x, param)
        by = _grid_position(_as_float(best["lam"], "best lam"), lam_values, True, "lam")
        ax.plot([bx], [by], linestyle="none", marker="*", markersize=16,
                markerfacecolor="white", markeredgecolor="black", label="selected")

    ax.set_title(title if title is not None else f"{metric_label} over {param} x lam")
    return fig


def cv_curve_figure(
    curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    param: str = "gamma",
    best_lam: float | None = None,
    metric_label: str | None = None,
    title: str | None = None,
    log_param: bool | None = None,
) -> Figure:
    """Plot the cross-validation error along the kernel parameter, one line per method.

    This compares how well approximate criteria (e.g. BIF at several orders) follow the
    exact leave-out error as the kernel parameter moves with ``lam`` held fixed.

    Parameters
    ----------
    curves : mapping of str to (sequence, sequence)
        Legend label -> ``(param_values, errors)``, e.g.
        ``{"exact": (gammas, e1), "bif r=5": (gammas, e2)}``. The points of a curve may
        come in any order; a ``None`` or NaN error leaves a gap in that line.
    param : str, default "gamma"
        Name of the kernel parameter, used for the horizontal axis.
    best_lam : float, optional
        The ``lam`` at which the curves were computed; shown in the title.
    metric_label : str, optional
        Label of the vertical axis. Defaults to ``"CV error"``.
    title : str, optional
        Figure title; ``lam = best_lam`` is appended when ``best_lam`` is given.
    log_param : bool, optional
        Whether the horizontal axis is log2-scaled. By default it is, except for
        ``"degree"``.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure with one axes holding one line per entry of ``curves``.

    Raises
    ------
    KernelCVError
        If matplotlib is not installed, ``curves`` is empty, a curve's two sequences
        differ in length or are empty, or a parameter value is not finite (or not
        positive on a log2 axis).
    """
    Figure = figure_class()
    if not curves:
        raise KernelCVError("no curves to plot: give at least one method")
    log_x = _is_log(param, log_param)
    metric_label = "CV error" if metric_label is None else metric_label

    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    ax = fig.add_subplot()
    if log_x:
        ax.set_xscale("log", base=2)
    for label, curve in curves.items():
        try:
            xs, ys = curve
        except (TypeError, ValueError):
            raise KernelCVError(
                f"curve {label!r} must be a pair (param_values, errors)"
            ) from None
        x = np.array([_as_float(v, f"curve {label!r}: {param}") for v in xs], dtype=float)
        y = np.array([_as_float(v, f"curve {label!r}: error") for v in ys], dtype=float)
        if len(x) != len(y) or len(x) == 0:
            raise KernelCVError(
                f"curve {label!r} has {len(x)} {param} values and {len(y)} errors; "
                "give one error per value, at least one"
            )
        _check_axis_values(x, f"{param} of curve {label!r}", log_x)
        order = np.argsort(x, kind="stable")
        ax.plot(x[order], y[order], marker="o", markersize=4, label=str(label))

    ax.set_xlabel(_axis_label(param, log_x))
    ax.set_ylabel(metric_label)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    heading = title if title is not None else f"{metric_label} along {param}"
    if best_lam is not None:
        heading = f"{heading} (lam = {_as_float(best_lam, 'best_lam'):g})"
    ax.set_title(heading)
    return fig


def confusion_figure(confusion: Sequence[Sequence[int]], classes: Sequence[Any], *,
                     title: str | None = None) -> Figure:
    """Draw a confusion matrix (rows: true class, columns: predicted class) with counts.

    Each row is shaded by its share of the true class, so small classes stay readable.

    Raises
    ------
    KernelCVError
        If matplotlib is not installed or the matrix is not square with one row per class.
    """
    Figure = figure_class()
    counts = np.asarray(confusion, dtype=float)
    k = len(classes)
    if counts.shape != (k, k) or k == 0:
        raise KernelCVError(f"a confusion matrix needs one row and column per class "
                            f"({k}), got shape {counts.shape}")
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    size = 2.0 + 0.5 * k
    fig = Figure(figsize=(size + 1.0, size), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(shares, cmap=_colormap("Blues"), vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, label="share of the true class")
    labels = [str(c) for c in classes]
    ax.set_xticks(np.arange(k), labels, rotation=45 if k > 6 else 0)
    ax.set_yticks(np.arange(k), labels)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    if k <= 20:
        for i in range(k):
            for j in range(k):
                ax.text(j, i, f"{int(counts[i, j])}", ha="center", va="center",
                        color="white" if shares[i, j] > 0.5 else "black", fontsize=8)
    ax.set_title("confusion matrix" if title is None else title)
    return fig


def save_figure(fig: Figure, path: str | os.PathLike[str], *, dpi: float = 150) -> None:
    """Write ``fig`` to ``path`` as PNG, atomically.

    The image is rendered into a temporary file next to ``path`` and then renamed onto
    it, so ``path`` holds either its old content or the complete new image, never a
    partial one. The temporary file is removed if anything goes wrong.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to write, e.g. from :func:`heatmap_figure`.
    path : str or os.PathLike
        Destination file. Its directory must exist. An existing file is replaced and
        keeps its permissions; a new one gets the usual permissions under the umask.
    dpi : float, default 150
        Resolution of the PNG in dots per inch.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = new_file_mode()
    tmp = tempfile.NamedTemporaryFile(
        dir=directory, delete=False, suffix=".png", prefix=f".{os.path.basename(path)}."
    )
    try:
        with tmp:
            fig.savefig(tmp, format="png", dpi=dpi)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp.name, mode)
        os.replace(tmp.name, path)
    except BaseException:
        try:
            os.unlink(tmp.name)
        except OSError:
            pass
        raise
