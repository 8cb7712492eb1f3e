"""``kernelcv bench`` in-process on a tiny synthetic data folder (the real bench is not run)."""

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import cli
from kernelcv.experiments import bench, suites


@pytest.fixture
def data_dir(tmp_path):
    folder = tmp_path / "data" / "libsvm"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] - X[:, 1] > 0, 1, -1)
    dump_svmlight_file(X, y, str(folder / "heart_scale.svm"))
    Xr = rng.uniform(-1, 1, size=(30, 2))
    dump_svmlight_file(Xr, np.sin(2 * Xr[:, 0]) + 0.1 * rng.normal(size=30),
                       str(folder / "pyrim_scale.svm"))
    return tmp_path / "data"


@pytest.fixture(autouse=True)
def tiny_quick_mode(monkeypatch):
    """A 3 x 2 grid and 2 splits, so the whole protocol runs in a few seconds."""
    tiny = suites.Mode("quick", 2, ("heart", "pyrim"), 200, (2, 1, 0), (-1, 3), (1, 2),
                       (1, 3))
    monkeypatch.setitem(suites.MODES, "quick", tiny)


def _bench(*extra):
    return cli.main(["bench", "--quick", "--quiet", *extra])


def test_bench_writes_tables_figures_and_checkpoint(data_dir, tmp_path, capsys,
                                                    monkeypatch):
    out = tmp_path / "out"
    code = _bench("--data-dir", str(data_dir), "--out", str(out), "--tables",
                  "l2svm,krr")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    for name in bench.OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    report = json.loads((out / "results.json").read_text())
    assert [t["table"] for t in report["tables"]] == ["l2svm", "krr"]
    l2 = report["tables"][0]["sets"][0]
    assert l2["set"] == "heart" and l2["n_train"] == 20
    assert l2["criteria"]["exact t=10"]["n_splits"] == 2
    assert "sklearn SVC" in l2["criteria"] and "BIF inf +3 exact" in l2["criteria"]
    krr = report["tables"][1]["sets"][0]["criteria"]
    # closed form is exact: same choices, hence the same test errors, on every split
    assert krr["closed-form t=10"]["test_error_mean"] == pytest.approx(
        krr["exact t=10"]["test_error_mean"])
    assert krr["closed-form t=10"]["t"] == 0.0
    assert {r["table"] for r in report["speed"]} == {"l2svm", "krr"}
    labels = [c["label"] for c in report["convergence"]]
    assert {label.split(",")[0] for label in labels} == {"l2svm", "krr"}
    assert "l2svm, exact-CV choice" in labels
    markdown = (out / "results.md").read_text()
    assert "## L2-SVM (squared hinge), Gaussian kernel — 0-1 test error" in markdown
    assert "| heart (20) |" in markdown
    assert "speed" in captured.out and "heart" in captured.out
    lines = (out / "checkpoint.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 2 * 2  # header + (heart, pyrim) x 2 splits

    # a rerun with the same options resumes from the checkpoint: nothing is recomputed
    def refuse(*args, **kwargs):
        raise AssertionError("criterion re-run despite the checkpoint")

    monkeypatch.setattr(bench, "run_criterion", refuse)
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--tables",
                  "l2svm,krr", "--no-figures") == 0
    again = json.loads((out / "results.json").read_text())
    assert again["tables"][0]["sets"][0]["criteria"] == l2["criteria"]
    # other options make the checkpoint foreign: refused, with the way out
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--splits", "3") == 2
    assert "--fresh" in capsys.readouterr().err


def test_missing_data_folder_is_a_one_line_error(tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench("--data-dir", str(tmp_path / "missing"), "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kernelcv: error: data folder not found")
    assert "--data-dir" in err and "KERNELCV_DATA" in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("option, value, message", [
    ("--sets", "heart,mnist", "unknown data set(s) 'mnist'; known: australian"),
    ("--tables", "svm,rf", "unknown table(s) 'rf'; known: lssvm-rbf"),
])
def test_unknown_names_are_refused_before_any_work(data_dir, tmp_path, capsys, option,
                                                   value, message):
    out = tmp_path / "out"
    assert _bench("--data-dir", str(data_dir), "--out", str(out), option, value) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_bad_numbers_are_usage_errors(data_dir, tmp_path, capsys):
    assert _bench("--data-dir", str(data_dir), "--splits", "1") == 2
    assert "at least 2" in capsys.readouterr().err


def test_missing_and_too_large_sets_are_skipped_with_a_note(data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code = _bench("--data-dir", str(data_dir), "--out", str(out), "--sets",
                  "heart,sonar", "--tables", "l2svm", "--max-train", "10", "--no-figures")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "sonar: skipped, file not found" in captured.err
    assert "heart: skipped, training half of 20 samples is above" in captured.err
    assert "--max-train" in captured.err
    report = json.loads((out / "results.json").read_text())
    assert [s["set"] for s in report["skipped"]] == ["heart", "sonar"] or \
        {s["set"] for s in report["skipped"]} == {"heart", "sonar"}
    assert not (out / "time_ratio.png").exists()


def test_missing_matplotlib_is_refused_up_front(data_dir, tmp_path, capsys, monkeypatch):
    import kernelcv.plotting
    from kernelcv.exceptions import KernelCVError

    def missing():
        raise KernelCVError("plots need matplotlib: pip install 'kernelcv[plot]'")

    monkeypatch.setattr(kernelcv.plotting, "_figure_class", missing)
    out = tmp_path / "out"
    assert _bench("--data-dir", str(data_dir), "--out", str(out)) == 2
    assert "--no-figures" in capsys.readouterr().err
    assert not out.exists()
