"""Out of core: the rff search on rows read in chunks (svmlight, gzip, CSV, npz files and
memory-mapped arrays) equals the in-memory search on the same folds and seed; its peak
memory is that of a chunk and the fold sums, not of X or the n x D features; malformed
rows name their file and line; ``kernelcv select --stream``."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import FeatureSpace, rowchunks
from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.random_features import final
from kernelcv.reading.files import load_data, make_synthetic
from kernelcv.reading.rowchunks import ArraySource, NpzSource, open_rows
from kernelcv.reading.textchunks import CsvSource, open_svmlight_files
from kernelcv.selection.search import grid_search

GRID = {"gammas": [0.05, 0.5], "Cs": [1.0, 16.0], "folds": 4}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("ooc")
    X, y = make_synthetic(600, 6, random_state=8)
    X[:, 2] = np.where(np.abs(X[:, 2]) < 0.5, 0.0, X[:, 2])  # some zeros for svmlight
    dump_svmlight_file(X, y, str(root / "train.svm"))
    with open(root / "train.svm", "rb") as raw, gzip.open(root / "train.svm.gz", "wb") as out:
        out.write(raw.read())
    np.savetxt(root / "train.csv", np.column_stack([X, y]), delimiter=",", header="a,b,c,d,"
               "e,f,label", comments="")
    np.savez(root / "train.npz", X=X, y=y)
    np.savez_compressed(root / "packed.npz", X=X, y=y)
    np.save(root / "X.npy", X)
    return root, X, y


def _sources(root, y):
    yield "svm", open_svmlight_files(root / "train.svm", block_bytes=4096)[0]
    yield "svm.gz", open_rows(root / "train.svm.gz")
    yield "csv", CsvSource(root / "train.csv", block_bytes=5000)
    yield "npz", open_rows(root / "train.npz")
    yield "npz compressed", NpzSource(root / "packed.npz")
    yield "memmap", ArraySource(np.load(root / "X.npy", mmap_mode="r"), y)


@pytest.mark.parametrize("options", [
    {}, {"features": 40}, {"features": 40, "feature_loss": "square"},
    {"features": 30, "feature_map": "nystroem", "feature_loss": "squared_hinge"},
], ids=["adaptive", "rff-squared-hinge", "rff-square", "nystroem-squared-hinge"])
def test_streamed_search_equals_the_in_memory_search(files, options):
    root, X, y = files
    reference = grid_search(X, y, "svm", method=FeatureSpace(refine=False, **options), **GRID)
    for name, source in _sources(root, y):
        result = grid_search(source, None, "svm",
                             method=FeatureSpace(refine=False, **options), **GRID)
        np.testing.assert_array_equal(result.fold_ids, reference.fold_ids)
        np.testing.assert_allclose([c["cv_error"] for c in result.candidates],
                                   [c["cv_error"] for c in reference.candidates],
                                   atol=1e-8, err_msg=name)
        assert result.best_params == reference.best_params, name


def test_streamed_final_model_equals_the_in_memory_one(files):
    root, X, y = files
    source = open_rows(root / "train.svm.gz")
    streamed = grid_search(source, None, "svm",
                           method=FeatureSpace(refine=False, max_features=128), **GRID)
    model, kind, notes = final.fit_final(source, source.labels(), streamed, "auto")
    assert kind == "linear" and "read in chunks" in notes[0]
    in_memory = grid_search(X, y, "svm",
                            method=FeatureSpace(refine=False, max_features=128), **GRID)
    reference, _, _ = final.fit_final(X, y, in_memory, "linear")
    # The streamed sums add chunk by chunk, the in-memory ones in one product: rounding
    # differs by the BLAS kernel and the solve amplifies it (an AMD EPYC: 2.6e-8 relative
    # on one weight), so the weights agree to 1e-7 of their scale, not bit for bit.
    scale = float(np.abs(reference.w).max())
    np.testing.assert_allclose(model.w, reference.w, rtol=1e-6, atol=1e-7 * scale)
    values = reference.decision_function(X)
    np.testing.assert_allclose(model.decision_function(X), values, rtol=1e-6,
                               atol=1e-7 * float(np.abs(values).max()))
    with pytest.raises(KernelCVError, match="in memory"):
        final.fit_final(source, source.labels(), streamed, "kernel")
    hinge = grid_search(source, None, "l2svm",
                        method=FeatureSpace(refine=False, features=20), **GRID)
    model, _, _ = final.fit_final(source, source.labels(), hinge, "auto", final_features=20)
    memory = grid_search(X, y, "l2svm", method=FeatureSpace(refine=False, features=20), **GRID)
    reference, _, _ = final.fit_final(X, y, memory, "linear", final_features=20)
    np.testing.assert_allclose(model.w, reference.w, rtol=1e-8, atol=1e-10)


def _peak(function):
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _search(source):
    return grid_search(source, None, "svm",
                       method=FeatureSpace(refine=False, features=128, feature_loss="square"),
                       gammas=[0.05, 0.2], Cs=[1.0, 10.0], folds=5)


def test_peak_memory_is_a_chunk_and_the_sums_not_x(tmp_path, monkeypatch):
    monkeypatch.setattr(rowchunks, "CHUNK_BYTES", 2**20)
    rng = np.random.default_rng(0)
    peaks, estimates = {}, {}
    for n in (40_000, 120_000):
        X = rng.normal(size=(n, 20))
        np.savez(tmp_path / f"big{n}.npz", X=X, y=np.where(X[:, 0] > 0, 1.0, -1.0))
        del X
        source = NpzSource(tmp_path / f"big{n}.npz")
        out = {}
        peaks[n] = _peak(lambda source=source, out=out: out.update(result=_search(source)))
        estimates[n] = out["result"].config["memory_estimate"]
    dense_x, features = 120_000 * 20 * 8, 120_000 * 128 * 8  # 19 MB and 123 MB
    assert peaks[120_000] < dense_x / 2 < features / 10
    # flat in n but for the targets and fold ids (the estimate's 56 bytes per row)
    assert peaks[120_000] - peaks[40_000] < 56 * 80_000
    for n in peaks:  # the stated estimate bounds the measurement
        assert peaks[n] <= estimates[n], (n, peaks[n], estimates[n])
    # svmlight text: the block being parsed is added (its Python tokens)
    X = rng.normal(size=(6000, 20)).round(3)
    dump_svmlight_file(X, np.where(X[:, 0] > 0, 1, -1), str(tmp_path / "small.svm"))
    source = open_svmlight_files(tmp_path / "small.svm", block_bytes=2**15)[0]
    out = {}
    peak = _peak(lambda: out.update(result=_search(source)))
    assert peak <= out["result"].config["memory_estimate"]


def test_malformed_rows_name_the_file_and_the_line(tmp_path):
    lines = [f"{(-1) ** i} 1:{i}.5 3:2" for i in range(3000)]
    lines[2345] = "+1 1:0.5 3:x"
    path = tmp_path / "bad.svm"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(KernelCVError, match=r"bad\.svm: .*line 2346: the value of '3:x'"):
        open_svmlight_files(path, block_bytes=2048)
    rows = ["1,2,0"] * 500 + ["1,2"] + ["1,2,1"] * 10
    (tmp_path / "ragged.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(KernelCVError, match=r"ragged\.csv, line 501: 2 columns, expected 3"):
        CsvSource(tmp_path / "ragged.csv", block_bytes=1000)
    rows[300] = "1,abc,1"
    (tmp_path / "word.csv").write_text("\n".join(rows[:400]) + "\n")
    with pytest.raises(KernelCVError, match=r"word\.csv, line 301, column 2: 'abc'"):
        CsvSource(tmp_path / "word.csv", block_bytes=1000)
    (tmp_path / "nan.csv").write_text("x,y,t\n1,2,0\n1,nan,1\n")
    with pytest.raises(KernelCVError, match=r"nan\.csv, line 3: NaN"):
        CsvSource(tmp_path / "nan.csv")
    (tmp_path / "mixed.csv").write_text("1,b,0\n1,2,1\n")
    with pytest.raises(KernelCVError, match="column 2 .* is not a number while others"):
        CsvSource(tmp_path / "mixed.csv")
    np.savez(tmp_path / "fortran.npz", X=np.asfortranarray(np.ones((4, 3))), y=np.ones(4))
    with pytest.raises(KernelCVError, match="C-ordered"):
        NpzSource(tmp_path / "fortran.npz")
    np.savez(tmp_path / "noy.npz", X=np.ones((4, 3)))
    with pytest.raises(KernelCVError, match="missing array"):
        NpzSource(tmp_path / "noy.npz")
    data = gzip.compress(("\n".join(lines[:2000]) + "\n").encode())
    (tmp_path / "cut.svm.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(KernelCVError, match="truncated"):
        open_rows(tmp_path / "cut.svm.gz")
    with pytest.raises(KernelCVError, match="no such file"):
        open_rows(tmp_path / "missing.svm")


def test_streamed_nan_in_a_memory_map_is_an_error(tmp_path):
    X = np.ones((300, 3))
    X[250, 1] = np.nan
    np.save(tmp_path / "X.npy", X)
    source = ArraySource(np.load(tmp_path / "X.npy", mmap_mode="r"), np.arange(300) % 2)
    with pytest.raises(KernelCVError, match="NaN or infinite"):
        grid_search(source, None, "svm", method=FeatureSpace(refine=False, features=10), **GRID)


def test_cli_stream(capsys, files, tmp_path):
    root, X, y = files
    dump_svmlight_file(X[:100], y[:100], str(tmp_path / "test.svm"))
    common = ["select", str(root / "train.svm.gz"), "--machine", "svm", "--method", "rff",
              "--gamma-grid", "2^-4,2^-1", "--C-grid", "2^0,2^4", "--folds", "4",
              "--max-features", "128", "--no-progress"]
    code = main([*common, "--stream", "--test", str(tmp_path / "test.svm"), "--json",
                 "--save-model", str(tmp_path / "m.npz")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["final_model"] == "linear"
    assert any("read in chunks" in note for note in report["notes"])
    Xt, yt = load_data(tmp_path / "test.svm")
    import kernelcv

    loaded = kernelcv.load_model(tmp_path / "m.npz")
    assert report["test_error"] == float(np.mean(loaded.predict(Xt) != yt))
    memory = main([*common, "--test", str(tmp_path / "test.svm"), "--final", "linear",
                   "--json"])
    assert memory == 0
    in_memory = json.loads(capsys.readouterr().out)
    assert in_memory["best_params"] == report["best_params"]
    assert abs(in_memory["test_error"] - report["test_error"]) < 1e-12
    for bad, message in [(["--method", "bif"], "only --method rff"),
                         (["--scale", "standard"], "scale the file beforehand"),
                         (["--final", "kernel"], "--final auto or linear"),
                         (["--feature-loss", "hinge"], "LIBLINEAR"),
                         (["--refine", "on"], "refinement"),
                         (["--plot", "--out", str(tmp_path / "o")], "drop it with --stream")]:
        base = [a for a in common if a not in ("--method", "rff", "--max-features", "128")] \
            if bad[0] == "--method" else common
        argv = [*base, "--stream", *bad]
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and message in err, (bad, err)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("block_bytes", [4096, 1 << 20])
def test_a_nan_in_a_streamed_svmlight_file_names_its_line(tmp_path, block_bytes):
    # issue 41: a NaN at line 1,500 was reported "near line 1" (the block's first line)
    rng = np.random.default_rng(0)
    lines = ["# a comment line", ""]
    for i in range(2000):
        x = rng.normal(size=3)
        second = "nan" if i == 1495 else f"{x[1]:.4f}"
        lines.append(f"{1 if x[0] > 0 else -1} 1:{x[0]:.4f} 2:{second} 3:{x[2]:.4f}")
    path = tmp_path / "nan.svm"
    path.write_text("\n".join(lines) + "\n")
    expected = 1 + lines.index(next(line for line in lines if "nan" in line))
    assert expected == 1498
    source = open_svmlight_files(path, block_bytes=block_bytes)[0]
    with pytest.raises(KernelCVError, match=f"line {expected} holds a NaN"):
        grid_search(source, None, "svm", method=FeatureSpace(refine=False, features=10), **GRID)


@pytest.mark.parametrize("block_bytes", [2048, 1 << 20])
def test_a_streamed_csv_with_text_labels_equals_the_in_memory_search(tmp_path, block_bytes):
    # issue 41: --stream refused the text class labels the in-memory path accepts
    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 3))
    labels = np.where(X[:, 0] + 0.3 * rng.normal(size=240) > 0, "cat", "dog")
    path = tmp_path / "text.csv"
    path.write_text("".join(f"{a:.6f},{b:.6f},{c:.6f},{label}\n"
                            for (a, b, c), label in zip(X, labels, strict=True)))
    X_memory, y_memory = load_data(path)
    assert set(y_memory) == {"cat", "dog"}
    reference = grid_search(X_memory, y_memory, "svm",
                            method=FeatureSpace(refine=False, features=10), **GRID)
    source = CsvSource(path, block_bytes=block_bytes)
    assert list(source.labels()) == list(labels)
    streamed = grid_search(source, None, "svm",
                           method=FeatureSpace(refine=False, features=10), **GRID)
    np.testing.assert_allclose([c["cv_error"] for c in streamed.candidates],
                               [c["cv_error"] for c in reference.candidates], atol=1e-8)
    assert streamed.best_params == reference.best_params
