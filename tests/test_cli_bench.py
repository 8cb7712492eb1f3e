"""``kernelcv bench`` in-process on a tiny synthetic data folder (the real bench is not run)."""

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import cli
from kernelcv.exceptions import KernelCVError
from kernelcv.experiments import BenchFiles, BenchPlan, bench, suites


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
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--seed", "3") == 2
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


@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="medium"), "unknown mode 'medium'; choose one of quick, full"),
    (dict(splits=1), "--splits must be an integer >= 2"),
    (dict(splits=3.0), "--splits must be an integer >= 2"),
    (dict(max_train=5), "--max-train must be an integer >= 10, got 5"),
    (dict(sets=["heart", "mnist"]), "unknown data set(s) 'mnist'"),
    (dict(tables=[]), "no table(s) given"),
    (dict(protocol="mine"), "unknown protocol 'mine'"),
    (dict(sets=["heart"], tables=["krr"]), "no selected table applies"),
    (dict(confirm=-1), "--confirm must be an integer >= 0, got -1"),
    (dict(seed=1.5), "--seed must be an integer, got 1.5"),
    (dict(t_threshold=0.0), "--t-threshold must be a number > 0"),
    (dict(t_threshold=float("nan")), "--t-threshold must be a number > 0"),
])
def test_bench_plan_refuses_bad_values(kwargs, message):
    with pytest.raises(KernelCVError) as caught:
        BenchPlan(**kwargs)
    assert message in str(caught.value)


def test_bench_objects_keep_checked_names_and_refuse_bad_files(tmp_path):
    plan = BenchPlan(sets=["heart", "heart", "pyrim"], tables=("krr",))
    assert plan.sets == ("heart", "pyrim") and plan.tables == ("krr",)
    assert (plan.n_splits, plan.train_limit) == (2, 200)  # the (tiny) quick mode's
    assert BenchPlan().set_names == ["heart", "pyrim"] and BenchPlan().tables is None
    for kwargs, message in ((dict(out=None), "out must be a folder path"),
                            (dict(data_dir=3), "data_dir must be a folder path, got 3"),
                            (dict(figures="no"), "figures must be True or False")):
        with pytest.raises(KernelCVError, match=message):
            BenchFiles(**kwargs)
    with pytest.raises(KernelCVError, match="run_bench takes a BenchPlan, got dict"):
        bench.run_bench({"mode": "quick"}, BenchFiles(out=tmp_path / "never"))
    assert not (tmp_path / "never").exists()


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

    monkeypatch.setattr(kernelcv.plotting, "figure_class", missing)
    out = tmp_path / "out"
    assert _bench("--data-dir", str(data_dir), "--out", str(out)) == 2
    assert "--no-figures" in capsys.readouterr().err
    assert not out.exists()


def test_outputs_get_the_umask_mode_and_the_threshold_is_reported(data_dir, tmp_path,
                                                                  capsys):
    import os

    out = tmp_path / "out"
    old = os.umask(0o022)
    try:
        assert _bench("--data-dir", str(data_dir), "--out", str(out), "--sets", "pyrim",
                      "--tables", "krr", "--no-figures") == 0
    finally:
        os.umask(old)
    for name in ("results.json", "results.md"):
        assert (out / name).stat().st_mode & 0o777 == 0o644, name
    report = json.loads((out / "results.json").read_text())
    # default: one-sided 95% point of t with R - 1 = 1 degree of freedom (tiny mode: R = 2)
    assert report["t_threshold"] == pytest.approx(6.3138, abs=1e-4)
    assert "above 6.314" in (out / "results.md").read_text()
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--sets", "pyrim",
                  "--tables", "krr", "--no-figures", "--t-threshold", "1.5") == 0
    assert json.loads((out / "results.json").read_text())["t_threshold"] == 1.5
    capsys.readouterr()


def test_sets_and_tables_without_a_common_task_are_refused(data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--sets", "heart",
                  "--tables", "krr,svr") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("kernelcv: error: no selected table")
    assert "heart (classification) need tables lssvm-rbf" in err and "krr (regression)" in err
    assert not out.exists()


@pytest.mark.parametrize("content", [
    '{"fingerprint": "ab',  # torn header
    "garbage\n",
    '"a string"\n',  # JSON, not an object
    '{"fingerprint": "x"}\n{"no": "key"}\n{"key": "k", "record": {}}\n',
])
def test_damaged_checkpoint_is_a_one_line_error(data_dir, tmp_path, capsys, content):
    out = tmp_path / "out"
    out.mkdir()
    (out / "checkpoint.jsonl").write_text(content)
    # the fingerprint of the last case is foreign anyway: give it the run's own
    if content.startswith('{"fingerprint": "x"}'):
        from kernelcv.experiments import bench as b

        key = _run_fingerprint(data_dir, b)
        (out / "checkpoint.jsonl").write_text(content.replace('"x"', f'"{key}"'))
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--sets", "pyrim",
                  "--tables", "krr", "--no-figures") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "damaged" in err and "--fresh" in err
    assert not (out / "results.json").exists()
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--sets", "pyrim",
                  "--tables", "krr", "--no-figures", "--fresh") == 0


def _run_fingerprint(data_dir, b):
    spec = suites.MODES["quick"]
    return b.fingerprint({"mode": "quick", "seed": 0, "confirm": 0, "protocol": "ours",
                          "gammas": spec.gammas(), "lam_exponents": spec.lam_exponents,
                          "degrees": list(spec.degrees),
                          "data_dir": str(data_dir.resolve()), "lssvm_intercept": False,
                          "version": 3})


def test_torn_last_checkpoint_line_is_dropped_and_the_run_resumes(data_dir, tmp_path):
    out = tmp_path / "out"
    args = ("--data-dir", str(data_dir), "--out", str(out), "--sets", "pyrim", "--tables",
            "krr", "--no-figures")
    assert _bench(*args) == 0
    path = out / "checkpoint.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30])  # cut the last record
    assert _bench(*args) == 0
    assert len(path.read_text().splitlines()) == len(lines)  # recomputed, appended cleanly


def test_longer_run_extends_a_shorter_one_and_data_changes_are_not_reused(
        data_dir, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    args = ("--data-dir", str(data_dir), "--out", str(out), "--sets", "pyrim", "--tables",
            "krr", "--no-figures")
    assert _bench(*args) == 0  # 2 splits
    calls = []
    original = bench.run_criterion

    def counting(criterion, *rest, **kwargs):
        calls.append(criterion.name)
        return original(criterion, *rest, **kwargs)

    monkeypatch.setattr(bench, "run_criterion", counting)
    assert _bench(*args, "--splits", "3") == 0  # only split 3 is computed
    n_criteria = len(calls)
    assert n_criteria == len(bench.criteria_for("krr"))
    report = json.loads((out / "results.json").read_text())
    assert report["tables"][0]["sets"][0]["criteria"]["exact t=10"]["n_splits"] == 3
    assert _bench(*args, "--splits", "2") == 0 and len(calls) == n_criteria  # a prefix
    # the same file name with other content: recomputed, not taken from the checkpoint
    import os

    data_file = data_dir / "libsvm" / "pyrim_scale.svm"
    data_file.write_text(data_file.read_text() + "0.5 1:0.1 2:0.2\n")
    os.utime(data_file, ns=(1, 1))
    assert _bench(*args, "--splits", "2") == 0 and len(calls) == 3 * n_criteria
    # another data folder is another run
    other = tmp_path / "other"
    (other / "libsvm").mkdir(parents=True)
    (other / "libsvm" / "pyrim_scale.svm").write_text(data_file.read_text())
    assert _bench("--data-dir", str(other), *args[2:]) == 2
    assert "--fresh" in capsys.readouterr().err


def test_the_side_by_side_verdict_table_is_printed_not_only_written():
    # issue 41 item 6: the verdicts were in the files only
    from kernelcv.cli.bench import render

    cells = [{"paper": "BIF", "table": "2", "dataset": "heart", "criterion": "bif-5",
              "paper_mean": 16.3, "paper_std": 2.1, "ours_mean": 17.0, "ours_std": 1.9,
              "n_splits": 3, "verdict": "within"},
             {"paper": "GS", "table": "1", "dataset": "sonar", "criterion": "eps-bif",
              "paper_mean": 12.0, "paper_std": 1.0, "ours_mean": 15.5, "ours_std": 2.0,
              "n_splits": 3, "verdict": "worse"}]
    report = {"mode": "quick", "tables": [], "timings": {"total_seconds": 1.0},
              "speed": [], "files": ["bench-results/bench.md"], "protocol": "paper",
              "papers": {"cells": cells, "within": 1, "better": 0, "worse": 1}}
    lines = render(report).splitlines()
    header = next(i for i, line in enumerate(lines) if "verdict" in line and "paper" in line)
    assert "BIF T2" in lines[header + 1] and lines[header + 1].rstrip().endswith("within")
    assert "sonar" in lines[header + 2] and lines[header + 2].rstrip().endswith("worse")
