"""``kernelcv select`` and ``kernelcv cv`` on multiclass files: reports against references."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file
from sklearn.multiclass import OneVsOneClassifier

from kernelcv import cross_validate, make_machine
from kernelcv.cli import main
from kernelcv.estimators import HuberSVMClassifier, L2SVMClassifier, LSSVMClassifier
from kernelcv.validation import make_folds


def _blobs(seed, n, k=3):
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % k
    rng.shuffle(codes)
    centres = rng.normal(scale=2.0, size=(k, 4))
    return centres[codes] + rng.normal(size=(n, 4)), np.array([3, 5, 9, 11])[codes]


@pytest.fixture(scope="module")
def multiclass_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("multiclass")
    X, y = _blobs(0, 90)
    X_test, y_test = _blobs(0, 120)  # same centres (same seed), new noise
    X_test, y_test = X_test[90:], y_test[90:]
    dump_svmlight_file(X, y, str(root / "train.svm"))
    dump_svmlight_file(X_test, y_test, str(root / "test.svm"))
    codes = np.unique(y, return_inverse=True)[1].astype(float)
    folds = make_folds(codes, 5, True, 0)
    np.savetxt(root / "folds.txt", folds, fmt="%d")
    return root, X, y, X_test, y_test, folds


def _run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_select_reports_confusion_matrices_that_match_a_refit(capsys, multiclass_files,
                                                              tmp_path):
    root, X, y, X_test, y_test, folds = multiclass_files
    out_dir = tmp_path / "out"
    code, out, err = _run(capsys, [
        "select", str(root / "train.svm"), "--machine", "svm", "--fold-ids",
        str(root / "folds.txt"), "--gamma-grid", "0.05,0.5", "--lam-grid", "0.001,0.01",
        "--test", str(root / "test.svm"), "--json", "--no-progress", "--out", str(out_dir),
        "--plot", "--multiclass", "ovo"])
    assert code == 0, err
    report = json.loads(out[out.index("{"):])
    entry = report["multiclass"]
    assert entry["strategy"] == "ovo" and entry["classes"] == [3.0, 5.0, 9.0]
    # held-out confusion: an independent refit per fold of OneVsOneClassifier
    gamma, lam = report["best_params"]["gamma"], report["best_params"]["lam"]
    held_out = np.empty_like(y)
    for i in np.unique(folds):
        test = folds == i
        model = OneVsOneClassifier(HuberSVMClassifier(gamma=gamma, lam=lam))
        held_out[test] = model.fit(X[~test], y[~test]).predict(X[test])
    expected = [[int(np.sum((y == a) & (held_out == b))) for b in (3, 5, 9)]
                for a in (3, 5, 9)]
    assert entry["cv"]["confusion"] == expected
    assert entry["cv"]["error"] == pytest.approx(np.mean(held_out != y))
    assert report["best_cv_error"] == pytest.approx(entry["cv"]["error"])
    final = OneVsOneClassifier(HuberSVMClassifier(gamma=gamma, lam=lam)).fit(X, y)
    assert report["test_error"] == pytest.approx(np.mean(final.predict(X_test) != y_test))
    assert sum(map(sum, entry["test"]["confusion"])) == y_test.size
    assert {p.name for p in out_dir.iterdir()} >= {"report.json", "confusion_cv.png",
                                                   "confusion_test.png"}


def test_cv_multiclass_summary_and_scheme_option(capsys, multiclass_files):
    root, X, y, *_ = multiclass_files
    for scheme in ("ovo", "ovr"):
        code, out, err = _run(capsys, [
            "cv", str(root / "train.svm"), "--machine", "lssvm", "--gamma", "0.2", "--lam",
            "0.01", "--method", "closed-form", "--multiclass", scheme, "--fold-ids",
            str(root / "folds.txt"), "--json"])
        assert code == 0, err
        summary = json.loads(out)
        assert summary["multiclass"]["strategy"] == scheme
        confusion = np.array(summary["multiclass"]["cv"]["confusion"])
        assert confusion.sum() == y.size
        assert 1 - np.trace(confusion) / y.size == pytest.approx(summary["cv_error"])
    code, out, err = _run(capsys, ["cv", str(root / "train.svm"), "--machine", "lssvm",
                                   "--gamma", "0.2", "--lam", "0.01", "--method", "exact",
                                   "--multiclass", "both"])
    assert code == 2 and "--multiclass" in err


def test_select_refuses_multiclass_for_binary_only_methods(capsys, multiclass_files):
    """gacv is defined for binary SVMs; rff on rows in chunks needs the square loss."""
    root, *_ = multiclass_files
    for extra, words in ((["--method", "gacv"], "gacv"),
                         (["--method", "rff", "--stream", "--feature-loss", "squared_hinge"],
                          "'square'")):
        code, out, err = _run(capsys, ["select", str(root / "train.svm"), "--machine", "svm",
                                       "--no-progress", *extra])
        assert code == 2, (extra, err)
        assert words in err and len(err.strip().splitlines()) == 1


def test_select_with_auto_folds_on_multiclass_data(capsys, multiclass_files):
    """--folds auto: t per lam from eq. 6 (granularity in every record), the choice
    confirmed by exact refit CV on its own folds."""
    root, *_ = multiclass_files
    code, out, err = _run(capsys, ["select", str(root / "train.svm"), "--machine", "svm",
                                   "--folds", "auto", "--epsilon", "0.3", "--gamma-grid",
                                   "0.1,1", "--lam-grid", "0.01,0.1", "--no-progress",
                                   "--json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["folds"] == "auto"
    assert all(c["granularity"]["n_folds"] == c["n_folds"] for c in report["candidates"])
    assert len({c["n_folds"] for c in report["candidates"]}) > 1
    best = report["candidates"][report["best_index"]]
    assert best["status"] == "confirmed" and best["exact_error"] is not None


def test_one_vs_one_is_the_default(capsys, multiclass_files):
    """Without ``--multiclass`` select reports ovo and the same choice, CV error and
    confusion as ``--multiclass ovo``; the estimators and cross_validate default to ovo,
    checked against OneVsOneClassifier refits (an independent reference)."""
    root, X, y, X_test, _, folds = multiclass_files
    reports = []
    for extra in ([], ["--multiclass", "ovo"]):
        code, out, err = _run(capsys, [
            "select", str(root / "train.svm"), "--machine", "lssvm", "--fold-ids",
            str(root / "folds.txt"), "--gamma-grid", "0.1,1", "--lam-grid", "0.01,0.1",
            "--json", "--no-progress", *extra])
        assert code == 0, err
        reports.append(json.loads(out[out.index("{"):]))
    default, explicit = reports
    assert default["multiclass"]["strategy"] == "ovo"
    assert default["multiclass"] == explicit["multiclass"]
    assert default["best_params"] == explicit["best_params"]
    assert default["best_cv_error"] == explicit["best_cv_error"]
    for cls in (LSSVMClassifier, L2SVMClassifier, HuberSVMClassifier):
        fitted = cls(gamma=0.3, lam=0.01).fit(X, y)
        assert fitted.multiclass == "ovo" and fitted.dual_coef_.shape == (3, y.size)
        reference = OneVsOneClassifier(cls(gamma=0.3, lam=0.01)).fit(X, y)
        np.testing.assert_allclose(fitted.decision_function(X_test),
                                   reference.decision_function(X_test), atol=1e-6)
        assert np.array_equal(fitted.predict(X_test), reference.predict(X_test))
    held_out = np.empty_like(y)
    for i in np.unique(folds):
        test = folds == i
        model = OneVsOneClassifier(LSSVMClassifier(gamma=3.0, lam=0.01))
        held_out[test] = model.fit(X[~test], y[~test]).predict(X[test])
    result = cross_validate(X, y, "lssvm", gamma=3.0, lam=0.01, folds=folds)
    assert result.cv_error == pytest.approx(np.mean(held_out != y))
    assert any("ovo" in note for note in result.notes)
    # at gamma = 3 one-vs-rest errs differently, so the check tells the schemes apart
    ovr = cross_validate(X, y, make_machine("lssvm", multiclass="ovr"), gamma=3.0, lam=0.01,
                         folds=folds)
    assert ovr.cv_error != pytest.approx(result.cv_error)


@pytest.mark.parametrize("safeguards", [True, False])
def test_select_confusion_reuses_the_confirmation(capsys, multiclass_files, monkeypatch,
                                                  safeguards):
    """With safeguards the chosen candidate was confirmed by exact CV, whose held-out
    labels the report reuses (no second exact CV); without, one exact CV is run. Both
    equal an independent refit per fold."""
    import kernelcv.reports.multiclass as report_module

    calls = []
    real = report_module.cross_validate
    monkeypatch.setattr(report_module, "cross_validate",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    root, X, y, _, _, folds = multiclass_files
    code, out, err = _run(capsys, [
        "select", str(root / "train.svm"), "--machine", "svm", "--fold-ids",
        str(root / "folds.txt"), "--gamma-grid", "0.05,0.5", "--lam-grid", "0.001,0.01",
        "--json", "--no-progress", "--multiclass", "ovr",
        *([] if safeguards else ["--no-safeguards"])])
    assert code == 0, err
    assert calls == ([] if safeguards else [1])
    report = json.loads(out[out.index("{"):])
    gamma, lam = report["best_params"]["gamma"], report["best_params"]["lam"]
    held_out = np.empty_like(y)
    for i in np.unique(folds):
        test = folds == i
        model = HuberSVMClassifier(gamma=gamma, lam=lam, multiclass="ovr")
        held_out[test] = model.fit(X[~test], y[~test]).predict(X[test])
    assert report["multiclass"]["cv"]["error"] == pytest.approx(np.mean(held_out != y))
