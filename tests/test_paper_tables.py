"""The papers' result tables beside ``kernelcv bench`` (reading, verdicts, protocols)."""

import csv
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import cli
from kernelcv.exceptions import KernelCVError
from kernelcv.experiments import BenchFiles, BenchPlan, bench, paper_tables, runners, suites

SHARED_TABLES = Path(__file__).resolve().parents[2] / "shared" / "paper_tables"
HEADER_001 = ["paper", "table", "machine", "kernel", "measure", "dataset", "method", "t",
              "r", "mean", "std", "unit"]


def _write(folder, name, rows, header=HEADER_001):
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / name).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


@pytest.fixture
def data_dir(tmp_path):
    folder = tmp_path / "data" / "libsvm"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    dump_svmlight_file(X, np.where(X[:, 0] - X[:, 1] > 0, 1, -1),
                       str(folder / "heart_scale.svm"))
    Xr = rng.uniform(-1, 1, size=(30, 2))
    # a target far from unit scale, so that standardising it matters
    yr = 50.0 + 20.0 * np.sin(2 * Xr[:, 0]) + 2.0 * rng.normal(size=30)
    dump_svmlight_file(Xr, yr, str(folder / "pyrim_scale.svm"))
    return tmp_path / "data"


@pytest.fixture
def tables_dir(tmp_path):
    folder = tmp_path / "tables"
    _write(folder, "fastcv_l2.csv", [
        ["001", "5", "l2svm", "gaussian", "test_error", "heart", "CV", "10", "", "20.0",
         "5.0", "%"],
        ["001", "5", "l2svm", "gaussian", "test_error", "heart", "BIF", "10", "5", "0.5",
         "0.1", "%"],
        ["001", "5", "l2svm", "gaussian", "test_error", "heart", "BIF", "5", "5", "9.0",
         "1.0", "%"],
        ["001", "5", "l2svm", "gaussian", "test_error", "heart", "GACV", "", "", "9.0",
         "1.0", "%"],  # GACV: the bench runs it for the Huber-SVM only
        ["001", "6", "l2svm", "gaussian", "time", "heart", "CV", "10", "", "1.0", "0.1",
         "s"],  # a time: never compared
        ["001", "9", "krr", "gaussian", "test_mse", "pyrim", "CV", "10", "", "1e6", "1.0",
         "target units squared"],
    ])
    _write(folder, "granularity.csv", [
        ["000", "3", "svm_hinge_huber", "polynomial", "test_error", "heart", "CV", "10", "",
         "1.0", "1.0", "%"],  # polynomial Huber-SVM: no bench table
    ], header=HEADER_001[:8] + ["epsilon"] + HEADER_001[9:])
    _write(folder, "datasets.csv", [["heart", "270", "13"]], header=["name", "n", "d"])
    return folder


@pytest.fixture(autouse=True)
def tiny_quick_mode(monkeypatch, tmp_path):
    tiny = suites.Mode("quick", 2, ("heart", "pyrim"), 200, (2, 1, 0), (-1, 3), (1, 2),
                       (1, 3))
    monkeypatch.setitem(suites.MODES, "quick", tiny)
    monkeypatch.setenv(paper_tables.ENV_TABLES, str(tmp_path / "no-tables-here"))


def test_verdict_band_edges():
    assert paper_tables.verdict(10.0, 10.0, 0.0) == "within"
    assert paper_tables.verdict(11.0, 10.0, 1.0) == "within"
    assert paper_tables.verdict(9.0, 10.0, 1.0) == "within"
    assert paper_tables.verdict(11.01, 10.0, 1.0) == "worse"
    assert paper_tables.verdict(8.99, 10.0, 1.0) == "better"


def test_synthetic_tables_map_only_what_the_bench_reproduces(tables_dir):
    cells = paper_tables.read_cells(tables_dir)
    assert [(c["bench_table"], c["dataset"], c["criterion"], c["unit"]) for c in cells] == [
        ("l2svm", "heart", "exact t=10", "%"), ("l2svm", "heart", "BIF r=5", "%"),
        ("l2svm", "heart", "BIF r=5 t=5", "%"), ("l2svm", "heart", "GACV", "%"),
        ("krr", "pyrim", "exact t=10", "MSE")]
    assert [c["kind"] for c in cells] == ["exact", "approximate", "approximate",
                                          "approximate", "exact"]


def test_malformed_numbers_name_file_and_line(tmp_path):
    _write(tmp_path / "t", "bad.csv", [
        ["001", "5", "l2svm", "gaussian", "test_error", "heart", "CV", "10", "", "20.0",
         "5.0", "%"],
        ["001", "5", "l2svm", "gaussian", "test_error", "heart", "CV", "5", "", "2O.1",
         "5.0", "%"]])
    with pytest.raises(KernelCVError, match=r"bad.csv, line 3: mean/std not numbers"):
        paper_tables.read_cells(tmp_path / "t")


def test_compare_scales_to_percent_and_target_units():
    def split(error, variance):
        return {"criteria": {"exact t=10": {"test_error": error}, "BIF r=5": {"error": "x"}},
                "target_variance": variance}

    report_tables = [
        {"table": "l2svm", "sets": [{"set": "heart", "splits": [split(0.2, 1.0),
                                                                split(0.3, 1.0)]}]},
        {"table": "krr", "sets": [{"set": "pyrim", "splits": [split(0.5, 4.0),
                                                              split(0.25, 2.0)]}]}]
    cells = [{"bench_table": "l2svm", "dataset": "heart", "criterion": "exact t=10",
              "unit": "%", "kind": "exact", "paper_mean": 20.0, "paper_std": 4.0},
             {"bench_table": "l2svm", "dataset": "heart", "criterion": "BIF r=5",
              "unit": "%", "kind": "approximate", "paper_mean": 20.0, "paper_std": 4.0},
             {"bench_table": "krr", "dataset": "pyrim", "criterion": "exact t=10",
              "unit": "MSE", "kind": "exact", "paper_mean": 2.0, "paper_std": 0.1},
             {"bench_table": "svr", "dataset": "pyrim", "criterion": "exact t=10",
              "unit": "MSE", "kind": "exact", "paper_mean": 1.0, "paper_std": 0.1}]
    out = paper_tables.compare(report_tables, cells)
    heart, pyrim = out["cells"]
    assert heart["ours_mean"] == pytest.approx(25.0) and heart["verdict"] == "worse"
    assert heart["ours_std"] == pytest.approx(np.std([20.0, 30.0], ddof=1))
    assert pyrim["ours_mean"] == pytest.approx(1.25) and pyrim["verdict"] == "better"
    assert (out["within"], out["better"], out["worse"], out["not_run"]) == (0, 1, 1, 1)
    assert out["by_kind"]["approximate"] == {"within": 0, "better": 0, "worse": 0}
    assert paper_tables.share_within_or_better(out) == 0.5


@pytest.mark.skipif(not SHARED_TABLES.is_dir(), reason="shared/paper_tables not present")
def test_the_shared_tables_read_with_their_printed_values():
    cells = paper_tables.read_cells(SHARED_TABLES)
    by = {(c["paper"], c["bench_table"], c["dataset"], c["criterion"]): c for c in cells}
    # 10 sets x (3 CV + 3 BIF) per fast-CV table; 10 x (3 CV + 3 eps + GACV) Gaussian in 000
    for table in ("lssvm-rbf", "lssvm-poly", "l2svm", "krr", "svr"):
        assert sum(c["bench_table"] == table for c in cells) == 60, table
    assert sum(c["bench_table"] == "svm" and c["paper"] == "000" for c in cells) == 70
    cell = by[("000", "svm", "heart", "eps-BIF 0.1")]
    assert (cell["paper_mean"], cell["paper_std"], cell["kind"]) == (17.19, 2.31,
                                                                       "approximate")
    assert by[("001", "krr", "bodyfat", "exact t=5")]["unit"] == "MSE"


def _bench(*extra):
    return cli.main(["bench", "--quick", "--quiet", *extra])


def test_bench_puts_the_papers_beside_its_cells(data_dir, tables_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code = _bench("--data-dir", str(data_dir), "--out", str(out), "--tables", "l2svm,krr",
                  "--paper-tables", str(tables_dir))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads((out / "results.json").read_text())
    papers = report["papers"]
    assert papers["not_run"] == 1  # GACV on the L2-SVM
    # recompute every verdict from the per-split records, independently of compare()
    entries = {(t["table"], e["set"]): e for t in report["tables"] for e in t["sets"]}
    counts = {"within": 0, "better": 0, "worse": 0}
    for cell in papers["cells"]:
        entry = entries[(cell["bench_table"], cell["dataset"])]
        scale = [100.0 if cell["unit"] == "%" else s["target_variance"]
                 for s in entry["splits"]]
        ours = np.mean([k * s["criteria"][cell["criterion"]]["test_error"]
                        for k, s in zip(scale, entry["splits"], strict=True)])
        assert cell["ours_mean"] == pytest.approx(ours)
        low, high = cell["paper_mean"] - cell["paper_std"], cell["paper_mean"] + cell[
            "paper_std"]
        counts["worse" if ours > high else "better" if ours < low else "within"] += 1
    assert {k: papers[k] for k in counts} == counts and sum(counts.values()) == 4
    # the krr paper cell (1e6 +- 1 in target units) is far above any MSE of this target
    krr = next(c for c in papers["cells"] if c["bench_table"] == "krr")
    assert krr["verdict"] == "better" and krr["ours_mean"] > 1.0  # raw units, not 0.x
    assert (out / bench.PAPERS_FIGURE).stat().st_size > 0
    markdown = (out / "results.md").read_text()
    assert "## Beside the papers" in markdown and "| 001 T5 | l2svm | heart |" in markdown
    assert "papers: 4 cells beside the papers' tables" in captured.out


def test_without_tables_the_report_says_so(data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--tables", "l2svm",
                  "--no-figures") == 0
    assert "papers' result tables were not found" in capsys.readouterr().err
    assert json.loads((out / "results.json").read_text())["papers"] is None
    assert _bench("--data-dir", str(data_dir), "--out", str(out), "--tables", "l2svm",
                  "--paper-tables", str(tmp_path / "missing")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kernelcv: error: --paper-tables") and len(err.splitlines()) == 1


def test_standardised_targets_give_the_raw_mse_of_raw_targets(data_dir, tmp_path,
                                                              monkeypatch):
    """KRR's choice does not depend on the target's scale, so the bench's standardised
    MSE times the recorded target variance must equal the MSE of a run on centred targets
    in their own units."""
    raw = suites.Protocol("raw", "sigma2", "center", 0.1, None)
    monkeypatch.setitem(suites.PROTOCOLS, "raw", raw)
    runs = {}
    for name in ("ours", "raw"):
        report = bench.run_bench(
            BenchPlan(mode="quick", tables=["krr"], protocol=name),
            BenchFiles(data_dir=data_dir, out=tmp_path / name, figures=False))
        runs[name] = report["tables"][0]["sets"][0]["splits"]
    for ours, raw_split in zip(runs["ours"], runs["raw"], strict=True):
        assert raw_split["target_variance"] == 1.0 and ours["target_variance"] > 10.0
        for criterion in ("exact t=10", "closed-form t=10", "sklearn KernelRidge"):
            assert ours["criteria"][criterion]["test_error"] * ours["target_variance"] == \
                pytest.approx(raw_split["criteria"][criterion]["test_error"], rel=1e-6)


@pytest.mark.filterwarnings("ignore:lam = .*:RuntimeWarning")  # BIF on a 15-point SVR
def test_paper_protocol_uses_its_width_and_svr_tube(data_dir, tmp_path, monkeypatch):
    seen = []  # (machine, gammas, tube, huber, std(y)) of every criterion run
    real = runners.run_criterion

    def spy(criterion, machine, kernel, grid, X, y, *args, **kwargs):
        seen.append((machine, list(grid.get("gammas", [])), kwargs["svr_tube"],
                     kwargs["svr_huber"], float(np.std(y))))
        assert kwargs["intercept"] is True
        return real(criterion, machine, kernel, grid, X, y, *args, **kwargs)

    monkeypatch.setattr(bench, "run_criterion", spy)
    report = bench.run_bench(BenchPlan(mode="quick", tables=["svr"], protocol="paper"),
                             BenchFiles(data_dir=data_dir, out=tmp_path / "p", figures=False))
    assert report["protocol"] == "paper" and "gamma = 1/(2 sigma)" in report["grid"][
        "description"]
    markdown = (tmp_path / "p" / "results.md").read_text()
    assert "protocol paper: gamma = 1/(2 sigma)" in markdown and "bias term" in markdown
    for _machine, gammas, tube, huber, std in seen:
        assert gammas == [1 / 8, 1 / 4, 1 / 2]  # sigma = 4, 2, 1 with 1 / (2 sigma)
        assert tube == pytest.approx(std) and std > 5.0  # raw targets: std(y) ~ 14
        assert huber == pytest.approx(0.01 * tube)
    with pytest.raises(KernelCVError, match="unknown protocol 'mine'"):
        bench.run_bench(BenchPlan(mode="quick", tables=["svr"], protocol="mine"),
                        BenchFiles(data_dir=data_dir, out=tmp_path / "q"))


def test_liver_selector_coding_takes_the_row_order_as_label():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(345, 5))
    y = np.where(rng.random(345) < 0.4, 1.0, -1.0)  # the current label, drinks > 3
    X_old, y_old = suites.liver_selector_coding(X, y)
    assert np.array_equal(y_old[:145], np.ones(145)) and np.all(y_old[145:] == -1.0)
    assert np.array_equal(X_old[:, :5], X) and np.array_equal(X_old[:, 5], y)
    with pytest.raises(KernelCVError, match="345-row file"):
        suites.liver_selector_coding(X[:145], y[:145])


def test_intercept_setting_reaches_every_machine_but_krr():
    for machine in ("lssvm", "l2svm", "svm", "svr"):
        assert runners._machine_options(machine)["fit_intercept"] is False
        assert runners._machine_options(machine, intercept=True)["fit_intercept"] is True
    assert runners.machine_intercept("krr", True) is None
    assert suites.PROTOCOLS["paper"].intercept is True
    assert suites.PROTOCOLS["paper-bias-free"].intercept is None  # as "ours"
    assert suites.PROTOCOLS["ours"].intercept is None


def test_paper_protocol_takes_the_printed_degree_grid_in_full_mode(data_dir, tmp_path,
                                                                   monkeypatch):
    """Full mode is the papers' grid: with ``--protocol paper`` the polynomial LS-SVM
    searches the fast-CV paper's d = 1..10 (``ours``: 1..8); quick mode keeps its own."""
    seen = {}
    real = runners.run_criterion

    def spy(criterion, machine, kernel, grid, *args, **kwargs):
        seen.setdefault(kwargs["intercept"], set()).add(tuple(grid["degrees"]))
        return real(criterion, machine, kernel, grid, *args, **kwargs)

    monkeypatch.setattr(bench, "run_criterion", spy)
    full = suites.Mode("full", 2, ("heart",), 200, None, (-1, 3), (1, 2, 3, 4, 5, 6, 7, 8),
                       (1, 3))
    monkeypatch.setitem(suites.MODES, "full", full)
    for protocol in ("ours", "paper"):
        report = bench.run_bench(
            BenchPlan(mode="full", tables=["lssvm-poly"], protocol=protocol),
            BenchFiles(data_dir=data_dir, out=tmp_path / protocol, figures=False))
        expected = list(range(1, 11 if protocol == "paper" else 9))
        assert report["grid"]["degrees"] == expected
        assert f"poly degree 1..{expected[-1]} " in report["grid"]["description"]
    assert seen == {None: {tuple(range(1, 9))}, True: {tuple(range(1, 11))}}
    quick = suites.MODES["quick"]
    assert quick.degree_grid(suites.PROTOCOLS["paper"]) == quick.degrees == (1, 2)
    assert suites.PROTOCOLS["paper-bias-free"].degrees == tuple(range(1, 11))


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
def test_paper_protocol_runs_eps_bif_at_the_order_of_eq_6(data_dir, tmp_path, monkeypatch):
    """The granularity paper takes t and r from its eq. 6; ``ours`` keeps eq. 6's t but
    stops the series by its observed tail. The protocol's rule must reach every eps-BIF
    criterion of the paper's machine (the Huber-SVM; the other machines keep the
    adaptive order), and a checkpoint of the other rule must not be reused."""
    seen = {}
    real = runners.run_criterion

    def spy(criterion, machine, *args, **kwargs):
        if criterion.name.startswith("eps-BIF"):
            rule = criterion.method.granularity
            seen.setdefault((machine, kwargs["intercept"]), set()).add(
                (rule.epsilon, rule.rule))
        return real(criterion, machine, *args, **kwargs)

    monkeypatch.setattr(bench, "run_criterion", spy)
    paper = suites.PROTOCOLS["paper"]
    adaptive = dataclasses.replace(paper, intercept=False, eps_rule="adaptive")
    out = tmp_path / "run"
    plan = BenchPlan(mode="quick", tables=["svm", "l2svm"], protocol="paper")
    files = BenchFiles(data_dir=data_dir, out=out, figures=False)
    monkeypatch.setitem(suites.PROTOCOLS, "paper", adaptive)
    bench.run_bench(plan, files)
    monkeypatch.setitem(suites.PROTOCOLS, "paper", paper)
    with pytest.raises(KernelCVError, match="other options"):
        bench.run_bench(plan, files)
    bench.run_bench(plan, dataclasses.replace(files, fresh=True))
    adaptive_rules = {(e, "adaptive") for e in runners.EPSILONS}
    assert seen == {("svm", False): adaptive_rules, ("l2svm", False): adaptive_rules,
                    ("svm", True): {(e, "bound") for e in runners.EPSILONS},
                    ("l2svm", True): adaptive_rules}
    free = suites.PROTOCOLS["paper-bias-free"]
    assert free.eps_rule_for("svm") == "bound" and free.eps_rule_for("lssvm") == "adaptive"
    assert suites.PROTOCOLS["ours"].eps_rule_for("svm") == "adaptive"
    markdown = (out / "results.md").read_text()
    assert "Huber-SVM eps-BIF at eq. 6's order r" in markdown
