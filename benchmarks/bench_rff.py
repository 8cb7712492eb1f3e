"""Model selection in random-feature space (``method="rff"``) against exact grid search.

Sub-commands (data from ../shared/datasets; a set that is missing is skipped):

``ratsch``   Raetsch benchmark sets, provided train/test splits where present (first
             ``--splits`` of them), else stratified random 50/50 splits (seed split - 1);
             where only one realisation is stored (diabetis, twonorm) it is split 1 and
             splits 2.. re-split its pooled rows at random with the same training size.
             A5-CV / A10-CV (kernelcv rff search, then one SVC fit at the chosen values)
             against exact 5-/10-CV with ``GridSearchCV(SVC)`` on the same folds and grid.
``scaling``  time against n for subsets of a9a, w8a and ijcnn1 (both methods; the exact
             one only up to ``--exact-max`` samples), a PNG of the curves and the slope of
             log(time) against log(n).
``dims``     effect of D (30, 100, 300, 1000) on the chosen (gamma, C) and test accuracy.
``target``   ijcnn1 (n = 49,990): the full 13 x 11 grid, 5-fold A-CV plus the final SVC,
             against exact 5-CV selection on a 10,000 subsample (final SVC on all data).

Grids: ``paper`` = gamma 2^-15, 2^-13..2^9 (13) x C 2^-5, 2^-3..2^15 (11), the paper's;
``small`` = every other value (7 x 6), for exact searches that would take too long on the
full grid (say which one you used); ``local`` = gamma 2^-5..2^3 x C 2^-1..2^7 (5 x 5, step
2^2), for the exact 10k-subsample selection of ``target``. GridSearchCV keeps C fixed on
every fold; kernelcv keeps lam = 1/(2 n C) fixed (C_fold = C n / m), so the two differ by
a factor t/(t - 1) in C. Both run on one process; set OMP_NUM_THREADS=1 for comparable timings.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_rff.py MODE [options]``.
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV, PredefinedSplit, train_test_split
from sklearn.svm import SVC

from kernelcv import FeatureSpace, grid_search
from kernelcv.random_features.final import fit_final
from kernelcv.random_features.linear_cv import c_to_lam, paper_cs, paper_gammas
from kernelcv.reading.files import load_data, load_train_test
from kernelcv.validation import make_folds

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
RATSCH = ["banana", "breast_cancer", "diabetis", "flare_solar", "german", "heart", "image",
          "ringnorm", "splice", "thyroid", "titanic", "twonorm", "waveform"]


def grids(name):
    gammas, cs = paper_gammas(), paper_cs()
    if name == "small":
        return gammas[::2], cs[::2]
    if name == "local":  # 5 x 5 around LIBSVM's usual optimum for scaled data
        return [2.0**k for k in range(-5, 4, 2)], [2.0**k for k in range(-1, 8, 2)]
    return gammas, cs


def timed(fn):
    tic = time.perf_counter()
    out = fn()
    return time.perf_counter() - tic, out


def rff_select(X, y, X_test, y_test, folds, gammas, cs, D=30, loss=None, final=True,
               refine="auto"):
    """kernelcv rff search (+ refinement, + final SVC); returns seconds, params, accuracy.

    The svm keeps its (default) intercept: the feature-space model, the refinement's SVC
    refits and the final SVC always had one, so the numbers are those of the paper's setup.
    """
    search_s, result = timed(lambda: grid_search(X, y, "svm",
                                                 method=FeatureSpace(features=D, feature_loss=loss,
                                                                     refine=refine),
                                                 folds=folds, gammas=gammas,
                                                 lams=[float(v) for v in c_to_lam(cs, y.shape[0])]))
    out = {"search_s": search_s, "gamma": result.best["gamma"], "C": result.best["C"],
           "cv_error": result.best["cv_error"], "final_s": None, "accuracy": None,
           "refined": len(result.refined),
           "refine_s": result.timings["refine_seconds"]}
    if final:
        out["final_s"], (model, _, _) = timed(lambda: fit_final(X, y, result, "kernel"))
        if X_test is not None:
            out["accuracy"] = float(np.mean(model.predict(X_test) == y_test))
    return out


def exact_select(X, y, X_test, y_test, folds, gammas, cs):
    """GridSearchCV(SVC) on the same folds; seconds (refit included), params, accuracy."""
    search = GridSearchCV(SVC(kernel="rbf", cache_size=500), {"gamma": gammas, "C": cs},
                          cv=PredefinedSplit(folds), n_jobs=1, refit=True)
    seconds, _ = timed(lambda: search.fit(X, y))
    accuracy = None if X_test is None else float(search.score(X_test, y_test))
    return {"search_s": seconds, "gamma": search.best_params_["gamma"],
            "C": search.best_params_["C"], "accuracy": accuracy,
            "cv_error": 1 - search.best_score_}


# ---------------------------------------------------------------------------- data


def _asc(path):
    with gzip.open(path, "rt") as handle:
        return np.loadtxt(handle, ndmin=2)


def load_ratsch(name, split):
    """(X, y, X_test, y_test, how) for split ``split`` (1-based), or None."""
    folder = SHARED / "ratsch" / name
    splits = folder / "splits"
    part = f"{name}_{{}}_{{}}_{split}.asc.gz"
    if not (splits / part.format("train", "data")).exists():
        part = part.replace(name, name.replace("_", "-"), 1)  # breast-cancer_...
    if (splits / part.format("train", "data")).exists():
        get = [_asc(splits / part.format(a, b)) for a in ("train", "test")
               for b in ("data", "labels")]
        return get[0], get[1].ravel(), get[2], get[3].ravel(), f"split {split}"
    one = folder / f"{name}_one_split.mat"
    first = splits / part.replace(f"_{split}.asc", "_1.asc").format("train", "data")
    from scipy.io import loadmat

    if one.exists() or first.exists():
        if one.exists():
            m = loadmat(one)
            given = m["X_tr"], m["T_tr"].ravel(), m["X_tst"], m["T_tst"].ravel()
        else:
            get = [_asc(splits / part.replace(f"_{split}.asc", "_1.asc").format(a, b))
                   for a in ("train", "test") for b in ("data", "labels")]
            given = get[0], get[1].ravel(), get[2], get[3].ravel()
        if split == 1:
            return (*given, "given split 1")
        # Only one realisation is stored: re-split its pooled rows at random, keeping
        # the given training size.
        X = np.vstack([given[0], given[2]])
        y = np.concatenate([given[1], given[3]])
        X, X_test, y, y_test = train_test_split(X, y, train_size=given[1].size, stratify=y,
                                                random_state=split - 1)
        return X, y, X_test, y_test, f"pooled re-split #{split}"
    full = folder / f"{name}_full.mat"
    if not full.exists():
        return None
    m = loadmat(full)
    X, y = m["data"], (m["target"] if "target" in m else m["lbl"]).ravel()
    X, X_test, y, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                            random_state=split - 1)
    return X, y, X_test, y_test, f"random 50/50 #{split}"


def load_libsvm(name):
    """Training (and test where present) data of a LIBSVM set, dense float64."""
    train = SHARED / "libsvm" / f"{name}.svm.gz"
    test = SHARED / "libsvm" / f"{name}.t.svm.gz"
    if not train.exists():
        return None
    if test.exists():
        X, y, X_test, y_test = load_train_test(train, test)
        return X.toarray(), y, X_test.toarray(), y_test
    X, y = load_data(train)
    return X.toarray(), y, None, None


def subsample(X, y, n, seed=0):
    if n >= y.shape[0]:
        return X, y
    rows, _ = train_test_split(np.arange(y.shape[0]), train_size=n, stratify=y,
                               random_state=seed)
    return X[rows], y[rows]


# ---------------------------------------------------------------------------- modes


def mode_ratsch(args):
    gammas, cs = grids(args.grid)
    egammas, ecs = grids(args.exact_grid)
    print(f"rff: D = {args.features}, loss {args.loss or 'squared_hinge'}, grid {args.grid}, "
          f"refine {args.refine}; exact GridSearchCV(SVC): grid {args.exact_grid}")
    print("| set (split) | n train / test | k | rff acc | exact acc | rff s (search + refine "
          "+ final) | refined points | exact s | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    results = {}
    for name in args.sets:
        for split in range(1, args.splits + 1):
            loaded = load_ratsch(name, split)
            if loaded is None:
                continue
            X, y, X_test, y_test, how = loaded
            for k in args.folds:
                folds = make_folds(y, k, True, 0)
                a = rff_select(X, y, X_test, y_test, folds, gammas, cs, args.features,
                               args.loss, refine=args.refine)
                e = exact_select(X, y, X_test, y_test, folds, egammas, ecs)
                rff_s = a["search_s"] + a["final_s"]
                print(f"| {name} ({how}) | {y.size} / {y_test.size} | {k} | "
                      f"{a['accuracy']:.4f} | {e['accuracy']:.4f} | {rff_s:.2f} "
                      f"({a['search_s'] - a['refine_s']:.2f} + {a['refine_s']:.2f} + "
                      f"{a['final_s']:.2f}) | {a['refined']} | {e['search_s']:.2f} | "
                      f"{e['search_s'] / rff_s:.1f}x |", flush=True)
                results.setdefault((name, k), []).append(
                    (a["accuracy"], e["accuracy"], rff_s, e["search_s"], a["refined"]))
    if args.splits > 1:
        _ratsch_summary(results)


def _ratsch_summary(results):
    """Mean over splits and a one-sided paired t-test: is rff's test error larger?"""
    from scipy import stats

    print("\n| set | k | splits | rff acc | exact acc | difference | t (rff worse) | "
          "significant (95 %) | refined points | rff s | exact s | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (name, k), rows in results.items():
        rff, exact, rff_s, exact_s, refined = (np.array(column)
                                               for column in zip(*rows, strict=True))
        diff = exact - rff  # > 0 where rff is worse
        if len(rows) < 2:
            continue
        if np.ptp(diff) == 0:
            t_value = 0.0 if diff[0] == 0 else np.inf * np.sign(diff[0])
        else:
            t_value = float(stats.ttest_rel(exact, rff).statistic)
        critical = stats.t.ppf(0.95, len(rows) - 1)
        print(f"| {name} | {k} | {len(rows)} | {rff.mean():.4f} | {exact.mean():.4f} | "
              f"{-100 * diff.mean():+.2f} pp | {t_value:.2f} | "
              f"{'yes' if t_value > critical else 'no'} (t > {critical:.2f}) | "
              f"{refined.mean():.1f} | {rff_s.mean():.2f} | {exact_s.mean():.1f} | "
              f"{np.mean(exact_s / rff_s):.1f}x |", flush=True)


def mode_scaling(args):
    gammas, cs = grids(args.grid)
    egammas, ecs = grids(args.exact_grid)
    rows = []
    print(f"5-fold; rff D = {args.features} grid {args.grid} (search only, and + final "
          f"SVC); exact GridSearchCV(SVC) grid {args.exact_grid} up to n = {args.exact_max}")
    print("| data | n | rff search s | final SVC s | exact s | exact / rff search |")
    print("|---|---|---|---|---|---|")
    for name in args.data:
        loaded = load_libsvm(name)
        if loaded is None:
            continue
        X_all, y_all = loaded[0], loaded[1]
        for n in args.sizes:
            if n > y_all.shape[0]:
                n = y_all.shape[0]
            X, y = subsample(X_all, y_all, n)
            folds = make_folds(y, 5, True, 0)
            a = rff_select(X, y, None, None, folds, gammas, cs, args.features,
                           final=n <= args.final_max)
            e = exact_select(X, y, None, None, folds, egammas, ecs) \
                if n <= args.exact_max else None
            rows.append((name, n, a["search_s"], a["final_s"], e and e["search_s"]))
            print(f"| {name} | {n} | {a['search_s']:.2f} | "
                  f"{'-' if a['final_s'] is None else format(a['final_s'], '.2f')} | "
                  f"{'-' if e is None else format(e['search_s'], '.1f')} | "
                  f"{'-' if e is None else format(e['search_s'] / a['search_s'], '.1f')} |",
                  flush=True)
            if n == y_all.shape[0]:
                break
    for name in args.data:
        points = [(n, s) for d, n, s, _, _ in rows if d == name]
        if len(points) > 1:
            ns, ss = np.log([p[0] for p in points]), np.log([p[1] for p in points])
            print(f"{name}: rff search time ~ n^{np.polyfit(ns, ss, 1)[0]:.2f}")
    if args.png:
        _scaling_png(rows, args.png)
        print(f"wrote {args.png}")


def _scaling_png(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for index, name in enumerate(dict.fromkeys(r[0] for r in rows)):
        mine = [r for r in rows if r[0] == name]
        color = f"C{index}"
        ax.plot([r[1] for r in mine], [r[2] for r in mine], "o-", color=color,
                label=f"{name}: rff search")
        final = [r for r in mine if r[3] is not None]
        ax.plot([r[1] for r in final], [r[2] + r[3] for r in final], "s:", color=color,
                label=f"{name}: rff + final SVC")
        exact = [r for r in mine if r[4] is not None]
        if exact:
            ax.plot([r[1] for r in exact], [r[4] for r in exact], "^--", color=color,
                    label=f"{name}: GridSearchCV(SVC)")
    ns = np.array(sorted({r[1] for r in rows}), dtype=float)
    ref = min(r[2] for r in rows if r[1] == ns[0])
    ax.plot(ns, ref * ns / ns[0], "k-", lw=0.6, label="linear in n")
    ax.set(xscale="log", yscale="log", xlabel="n (training samples)", ylabel="seconds",
           title="5-fold model selection: time against n")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def mode_dims(args):
    loaded = load_libsvm(args.data[0])
    if loaded is None:
        return
    X_all, y_all, X_test, y_test = loaded
    X, y = subsample(X_all, y_all, args.n)
    folds = make_folds(y, 5, True, 0)
    gammas, cs = grids(args.grid)
    print(f"{args.data[0]}, n = {y.size}, 5-fold, grid {args.grid}, loss "
          f"{args.loss or 'squared_hinge'}; final SVC on the same n; test on the .t file")
    print("| D | gamma | C | A-CV error | test acc | search s | final s |")
    print("|---|---|---|---|---|---|---|")
    for D in args.dims:
        a = rff_select(X, y, X_test, y_test, folds, gammas, cs, D, args.loss)
        print(f"| {D} | 2^{np.log2(a['gamma']):.0f} | 2^{np.log2(a['C']):.0f} | "
              f"{a['cv_error']:.4f} | {a['accuracy']:.4f} | {a['search_s']:.1f} | "
              f"{a['final_s']:.1f} |", flush=True)


def mode_target(args):
    loaded = load_libsvm("ijcnn1")
    if loaded is None:
        return
    X, y, X_test, y_test = loaded
    folds = make_folds(y, 5, True, 0)
    gammas, cs = grids("paper")
    print(f"ijcnn1 n = {y.size}, test {y_test.size}, 5-fold, 13 x 11 grid")
    for D in args.dims:
        a = rff_select(X, y, X_test, y_test, folds, gammas, cs, D, args.loss)
        print(f"rff D = {D}: gamma 2^{np.log2(a['gamma']):.0f}, C 2^{np.log2(a['C']):.0f}, "
              f"A-CV error {a['cv_error']:.4f}, search {a['search_s']:.1f} s + final SVC "
              f"{a['final_s']:.1f} s = {a['search_s'] + a['final_s']:.1f} s, test accuracy "
              f"{a['accuracy']:.4f}", flush=True)
    if args.exact_n:
        Xs, ys = subsample(X, y, args.exact_n)
        egammas, ecs = grids(args.exact_grid)
        e = exact_select(Xs, ys, None, None, make_folds(ys, 5, True, 0), egammas, ecs)
        seconds, model = timed(lambda: SVC(C=e["C"], gamma=e["gamma"],
                                           cache_size=1000).fit(X, y))
        print(f"exact 5-CV on {ys.size} ({args.exact_grid} grid, {e['search_s']:.0f} s): "
              f"gamma 2^{np.log2(e['gamma']):.0f}, C 2^{np.log2(e['C']):.0f}; SVC on all "
              f"data {seconds:.1f} s, test accuracy {model.score(X_test, y_test):.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["ratsch", "scaling", "dims", "target"])
    parser.add_argument("--sets", nargs="+", default=RATSCH)
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--folds", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--features", type=int, default=30)
    parser.add_argument("--dims", type=int, nargs="+", default=[30, 100, 300, 1000])
    parser.add_argument("--loss", choices=["squared_hinge", "hinge", "square"])
    parser.add_argument("--refine", type=lambda v: {"on": True, "off": False}.get(v, v),
                        choices=["auto", True, False], default="auto",
                        help="exact refinement of the rff choice: auto, on or off")
    parser.add_argument("--grid", choices=["paper", "small"], default="paper")
    parser.add_argument("--exact-grid", choices=["paper", "small", "local"],
                        default="paper")
    parser.add_argument("--data", nargs="+", default=["a9a", "w8a", "ijcnn1"])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[2000, 5000, 10000, 20000, 50000])
    parser.add_argument("--exact-max", type=int, default=5000)
    parser.add_argument("--final-max", type=int, default=20000,
                        help="scaling: fit the final SVC up to this n")
    parser.add_argument("--n", type=int, default=10000, help="dims: training subsample")
    parser.add_argument("--exact-n", type=int, default=10000,
                        help="target: exact 5-CV on this subsample (0: skip)")
    parser.add_argument("--png", default="rff_scaling.png")
    args = parser.parse_args()
    {"ratsch": mode_ratsch, "scaling": mode_scaling, "dims": mode_dims,
     "target": mode_target}[args.mode](args)


if __name__ == "__main__":
    main()
