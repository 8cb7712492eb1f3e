"""Figures for the selection report: content of the figures and atomic PNG output."""

import math
import os
import random
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

from kernelcv.exceptions import KernelCVError  # noqa: E402
from kernelcv.plotting import cv_curve_figure, heatmap_figure, save_figure  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GAMMAS = [2.0**k for k in (-4, -2, 0, 2, 4)]
LAMS = [2.0**k for k in (-10, -7, -4, -1)]


def grid_records(params=GAMMAS, lams=LAMS, param="gamma", value="cv_error"):
    """One record per (param, lam) with a smooth error surface, shuffled."""
    records = [
        {param: p, "lam": lam, value: 0.1 + 0.01 * i + 0.002 * j}
        for i, p in enumerate(params)
        for j, lam in enumerate(lams)
    ]
    random.Random(0).shuffle(records)
    return records


def image_of(fig):
    (image,) = fig.axes[0].get_images()
    return image.get_array()


def assert_png(path):
    assert path.is_file()
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert 2_000 < len(data) < 5_000_000


def leftovers(directory, keep):
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


def test_heatmap_figure_full_grid(tmp_path):
    best = {"gamma": GAMMAS[1], "lam": LAMS[2]}
    fig = heatmap_figure(grid_records(), best=best, title="heart_scale",
                         metric_label="10-fold CV error (0-1)")
    assert isinstance(fig, Figure)
    ax, colorbar_ax = fig.axes
    assert "gamma" in ax.get_xlabel()
    assert "lam" in ax.get_ylabel()
    assert ax.get_title() == "heart_scale"
    assert colorbar_ax.get_ylabel() == "10-fold CV error (0-1)"
    assert ax.get_images()[0].colorbar is not None

    cells = image_of(fig)
    assert cells.shape == (len(LAMS), len(GAMMAS))
    assert not np.ma.is_masked(cells)
    # rows follow lam upwards, columns follow gamma, whatever the record order
    assert cells[0, 0] == pytest.approx(0.1)
    assert cells[3, 4] == pytest.approx(0.1 + 0.04 + 0.006)

    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["$2^{-4}$", "$2^{-2}$", "$2^{0}$", "$2^{2}$", "$2^{4}$"]
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "$2^{-10}$"

    (marker,) = ax.get_lines()
    assert marker.get_xdata()[0] == 1 and marker.get_ydata()[0] == 2

    path = tmp_path / "heatmap.png"
    save_figure(fig, path)
    assert_png(path)
    assert leftovers(tmp_path, {"heatmap.png"}) == []


def test_heatmap_leaves_failed_candidates_blank():
    records = grid_records()
    failed = [r for r in records if r["gamma"] == GAMMAS[4] and r["lam"] == LAMS[0]][0]
    failed["cv_error"] = None
    nan = [r for r in records if r["gamma"] == GAMMAS[0] and r["lam"] == LAMS[3]][0]
    nan["cv_error"] = float("nan")
    cells = image_of(heatmap_figure(records))
    assert cells.mask[0, 4] and cells.mask[3, 0]
    assert cells.mask.sum() == 2
    assert np.all(np.isfinite(cells.compressed()))


def test_heatmap_with_every_candidate_failed(tmp_path):
    records = [dict(r, cv_error=math.nan) for r in grid_records()]
    fig = heatmap_figure(records)
    assert image_of(fig).mask.all()
    save_figure(fig, tmp_path / "empty.png")
    assert_png(tmp_path / "empty.png")


def test_heatmap_incomplete_grid(tmp_path):
    records = [r for r in grid_records()
               if not (r["gamma"] == GAMMAS[2] and r["lam"] in LAMS[1:])]
    # one gamma exists only at one lam; an extra off-grid lam exists only at one gamma
    records.append({"gamma": GAMMAS[0], "lam": 2.0**-2.5, "cv_error": 0.3})
    fig = heatmap_figure(records, best={"gamma": GAMMAS[0], "lam": 2.0**-2.5})
    cells = image_of(fig)
    assert cells.shape == (len(LAMS) + 1, len(GAMMAS))
    assert cells.mask.sum() == 3 + (len(GAMMAS) - 1)
    ylabels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "0.177" in ylabels  # 2**-2.5 is no power of two: printed as a number
    save_figure(fig, tmp_path / "partial.png")
    assert_png(tmp_path / "partial.png")


def test_heatmap_with_degree_is_linear():
    degrees = [1, 2, 3, 4, 5]
    fig = heatmap_figure(grid_records(params=degrees, param="degree"), param="degree",
                         best={"degree": 3, "lam": LAMS[0]})
    ax = fig.axes[0]
    assert ax.get_xlabel() == "degree"
    assert "lam" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4", "5"]
    assert ax.get_lines()[0].get_xdata()[0] == 2


def test_heatmap_best_between_grid_points_is_interpolated():
    fig = heatmap_figure(grid_records(), best={"gamma": 2.0**-3, "lam": LAMS[0]})
    (marker,) = fig.axes[0].get_lines()
    assert marker.get_xdata()[0] == pytest.approx(0.5)


def test_heatmap_other_metric_key_and_default_labels():
    records = grid_records(value="bif_error")
    fig = heatmap_figure(records, value="bif_error")
    assert fig.axes[1].get_ylabel() == "bif_error"
    assert "bif_error" in fig.axes[0].get_title()
    assert fig.axes[0].get_lines() == []


def test_heatmap_thins_tick_labels_on_long_grids():
    gammas = [2.0**k for k in range(-15, 16)]
    fig = heatmap_figure(grid_records(params=gammas))
    assert image_of(fig).shape == (len(LAMS), 31)
    assert len(fig.axes[0].get_xticks()) <= 12


@pytest.mark.parametrize("records, kwargs, message", [
    ([], {}, "no candidates"),
    ([{"gamma": 1.0, "cv_error": 0.1}], {}, "lacks 'lam'"),
    ([{"gamma": 1.0, "lam": 1.0}], {}, "lacks 'cv_error'"),
    ([{"gamma": 0.0, "lam": 1.0, "cv_error": 0.1}], {}, "must be positive"),
    ([{"gamma": 1.0, "lam": -1.0, "cv_error": 0.1}], {}, "lam is drawn on a log2"),
    ([{"gamma": 1.0, "lam": math.inf, "cv_error": 0.1}], {}, "must be finite"),
    ([{"gamma": "big", "lam": 1.0, "cv_error": 0.1}], {}, "must be a number"),
    ([{"gamma": 1.0, "lam": 1.0, "cv_error": 0.1}] * 2, {}, "two records"),
    (grid_records(), {"best": {"gamma": 64.0, "lam": LAMS[0]}}, "outside the grid"),
    (grid_records(), {"best": {"lam": LAMS[0]}}, "lacks 'gamma'"),
    (grid_records(), {"cmap": "no-such-map"}, "unknown colour map"),
])
def test_heatmap_rejects_bad_input(records, kwargs, message):
    with pytest.raises(KernelCVError, match=message):
        heatmap_figure(records, **kwargs)


def curves():
    gammas = np.array(GAMMAS)
    exact = 0.2 + 0.05 * np.log2(gammas) ** 2 / 16
    return {
        "exact": (gammas, exact),
        "bif r=1": (gammas[::-1], (exact + 0.02)[::-1]),  # any order
        "bif r=5": (list(gammas), [*exact[:-1], None]),  # a failed point
    }


def test_cv_curve_figure(tmp_path):
    fig = cv_curve_figure(curves(), best_lam=2.0**-7, metric_label="10-fold CV error")
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 3
    assert ax.get_xscale() == "log"
    assert "gamma" in ax.get_xlabel()
    assert ax.get_ylabel() == "10-fold CV error"
    assert "lam = 0.0078125" in ax.get_title()
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["exact", "bif r=1", "bif r=5"]
    reordered = ax.get_lines()[1]
    assert list(reordered.get_xdata()) == sorted(GAMMAS)
    assert np.isnan(ax.get_lines()[2].get_ydata()[-1])

    path = tmp_path / "curve.png"
    save_figure(fig, path)
    assert_png(path)
    assert leftovers(tmp_path, {"curve.png"}) == []


def test_cv_curve_figure_with_degree_and_title():
    data = {"exact": ([1, 2, 3, 4], [0.3, 0.2, 0.25, 0.4])}
    fig = cv_curve_figure(data, param="degree", title="Fig. 1")
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear"
    assert ax.get_xlabel() == "degree"
    assert ax.get_title() == "Fig. 1"
    assert len(ax.get_lines()) == 1


@pytest.mark.parametrize("data, message", [
    ({}, "no curves"),
    ({"exact": ([1.0, 2.0], [0.1])}, "2 gamma values and 1 errors"),
    ({"exact": ([], [])}, "at least one"),
    ({"exact": ([0.0, 1.0], [0.1, 0.2])}, "must be positive"),
    ({"exact": [1.0, 2.0, 3.0]}, "must be a pair"),
])
def test_cv_curve_rejects_bad_input(data, message):
    with pytest.raises(KernelCVError, match=message):
        cv_curve_figure(data)


def test_missing_matplotlib_gives_install_hint(monkeypatch):
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(KernelCVError, match=r"pip install 'kernelcv\[plot\]'"):
        heatmap_figure(grid_records())
    with pytest.raises(KernelCVError, match="plots need matplotlib"):
        cv_curve_figure(curves())


def test_save_figure_replaces_existing_file_and_keeps_its_mode(tmp_path):
    path = tmp_path / "report.png"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    save_figure(cv_curve_figure(curves()), str(path))
    assert_png(path)
    assert path.stat().st_mode & 0o777 == 0o640
    assert leftovers(tmp_path, {"report.png"}) == []


def test_save_figure_new_file_is_not_private(tmp_path):
    path = tmp_path / "new.png"
    save_figure(cv_curve_figure(curves()), path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_figure_cleans_up_when_savefig_fails(tmp_path, monkeypatch):
    path = tmp_path / "report.png"
    path.write_bytes(b"old")
    fig = heatmap_figure(grid_records())

    def broken_savefig(*args, **kwargs):
        args[0].write(b"partial")
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(fig, "savefig", broken_savefig)
    with pytest.raises(RuntimeError, match="renderer failed"):
        save_figure(fig, path)
    assert path.read_bytes() == b"old"
    assert leftovers(tmp_path, {"report.png"}) == []


def test_save_figure_cleans_up_when_rename_fails(tmp_path, monkeypatch):
    fig = cv_curve_figure(curves())

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        save_figure(fig, tmp_path / "report.png")
    assert leftovers(tmp_path, set()) == []


def test_figures_from_several_threads(tmp_path):
    errors = []

    def work(i):
        try:
            fig = heatmap_figure(grid_records(), best={"gamma": 1.0, "lam": LAMS[1]})
            save_figure(fig, tmp_path / f"map{i}.png")
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for i in range(4):
        assert_png(tmp_path / f"map{i}.png")
    assert leftovers(tmp_path, {f"map{i}.png" for i in range(4)}) == []
