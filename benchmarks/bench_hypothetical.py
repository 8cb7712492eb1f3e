"""Multi-kernel relevance-object machine: mu by the hypothetical criterion vs exact LOO.

An analogue of the multi-kernel experiment of Chernousova et al. (their chicken-pieces
data are not available): on each binary data set, the training half (stratified, seed 0)
gives secondary features from five similarities — RBF at gamma = 1/(4d), 1/d, 4/d,
Laplace at gamma = 1/d and the polynomial kernel of degree 2 (gamma = 1/d, coef0 = 1) —
so the elastic-net SVM (C = 1) selects relevant (kernel, training object) pairs. Along one
path of mu values (mu_max down to mu_max / 1000, warm starts) it reports the mu chosen by
the criterion (43) and the mu chosen by exact leave-one-out (n refits per mu), with the
number of relevant objects and kernels, the LOO error, the test error on the other half
(predicting from the similarities to the retained objects only), and the time of the
criterion path against the exact LOO path. For context, the last column is scikit-learn's
SVC (RBF, every object a candidate support vector) tuned over gamma and C by 10-fold
GridSearchCV on the same training half.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_hypothetical.py \
        [--data heart,sonar,ionosphere] [--n-mus 10] [--figures docs/figures]

Prints a Markdown table. With ``--figures DIR`` it writes ``hypothetical_loo.png`` (exact
LOO error vs mu / mu_max) and ``hypothetical_criterion.png`` (criterion / n vs
mu / mu_max), one curve per data set; diamonds mark the criterion's mu, stars the exact
LOO choice. Not run in CI.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.svm import SVC

from kernelcv.hypothetical.elastic_net import mu_max
from kernelcv.hypothetical.relevance import (
    kernel_similarities,
    make_kernels,
    relevance_path,
    relevant_features,
)

ROOT = Path("/work/shared/datasets")
KERNEL_NAMES = ["rbf 1/(4d)", "rbf 1/d", "rbf 4/d", "laplace 1/d", "poly 2"]


def load(name):
    """Features (standardised on the training half later) and +-1 labels."""
    if name == "heart":
        X, y = load_svmlight_file(str(ROOT / "libsvm/heart_scale.svm"))
        return X.toarray(), np.where(y > 0, 1.0, -1.0)
    if name == "breast-cancer":
        X, y = load_svmlight_file(str(ROOT / "libsvm/breast-cancer_scale.svm"))
        return X.toarray(), np.where(y > 0, 1.0, -1.0)
    files = {"sonar": ("uci_raw/sonar.all-data", "M"),
             "ionosphere": ("uci_raw/ionosphere.data", "g")}
    path, positive = files[name]
    rows = [line.strip().split(",") for line in open(ROOT / path) if line.strip()]
    X = np.array([[float(v) for v in row[:-1]] for row in rows])
    y = np.array([1.0 if row[-1] == positive else -1.0 for row in rows])
    return X[:, X.std(axis=0) > 0], y


def kernels_for(d):
    return make_kernels([f"rbf:{0.25 / d}", f"rbf:{1.0 / d}", f"rbf:{4.0 / d}",
                         f"laplace:{1.0 / d}", "poly:2"], d)


def test_error(path, index, k, kernels, X_train, X_test, y_test):
    """0-1 test error of the retrained machine of mu number ``k`` of the path."""
    pairs = [index[j] for j in path["relevant"][k]]
    if pairs:
        f = relevant_features(X_test, kernels, X_train, pairs) @ np.asarray(path["coef"][k])
    else:
        f = np.zeros(len(y_test))
    f = f + path["intercept"][k]
    return float(np.mean(np.where(f >= 0, 1.0, -1.0) != y_test))


def svc_reference(X_train, y_train, X_test, y_test):
    """Context: scikit-learn's SVC (RBF, all objects) tuned by 10-fold GridSearchCV."""
    d = X_train.shape[1]
    grid = {"gamma": [0.25 / d, 1.0 / d, 4.0 / d], "C": [2.0**k for k in range(-2, 7)]}
    search = GridSearchCV(SVC(), grid, cv=10).fit(X_train, y_train)
    return {"test": 1.0 - search.score(X_test, y_test),
            "n_support": int(search.best_estimator_.n_support_.sum())}


def run_one(name, n_mus, C=1.0):
    X, y = load(name)
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=0.5, stratify=y,
                                                        random_state=0)
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    std[std == 0] = 1.0
    X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    kernels = kernels_for(X.shape[1])
    start = time.perf_counter()
    sims = kernel_similarities(X_train, kernels)
    seconds_sims = time.perf_counter() - start
    n = len(y_train)
    index = [(k, i) for k in range(len(kernels)) for i in range(n)]
    top = mu_max(np.hstack(sims), y_train, C)
    mus = top * np.logspace(0, -3, n_mus)
    path = relevance_path(sims, y_train, mus=mus, C=C, loo=True)
    row = {"name": name, "n": n, "n_test": len(y_test), "d": X.shape[1], "mu_max": top,
           "path": path, "seconds_sims": seconds_sims,
           "svc": svc_reference(X_train, y_train, X_test, y_test)}
    loo = np.array(path["loo_error"])
    for tag, k in (("crit", int(np.argmin(path["criterion"]))), ("loo", int(np.argmin(loo)))):
        pairs = [index[j] for j in path["relevant"][k]]
        row[tag] = {"mu": path["mus"][k], "objects": len({i for _, i in pairs}),
                    "kernels": sorted({KERNEL_NAMES[kk] for kk, _ in pairs}),
                    "loo": float(loo[k]),
                    "test": test_error(path, index, k, kernels, X_train, X_test, y_test)}
    return row


def markdown(rows):
    lines = ["| data (n train / test, d) | mu/mu_max: criterion / LOO | relevant objects "
             "(kernels): criterion / LOO | LOO error: criterion / LOO | test error: "
             "criterion / LOO | seconds: criterion path / exact LOO path (ratio) | SVC: test error "
             "(support vectors) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        c, o, p = r["crit"], r["loo"], r["path"]
        ratio = p["seconds_loo"] / p["seconds_criterion"]
        lines.append(
            f"| {r['name']} ({r['n']} / {r['n_test']}, {r['d']}) "
            f"| {c['mu'] / r['mu_max']:.3g} / {o['mu'] / r['mu_max']:.3g} "
            f"| {c['objects']} ({len(c['kernels'])}) / {o['objects']} ({len(o['kernels'])}) "
            f"| {c['loo']:.3f} / {o['loo']:.3f} | {c['test']:.3f} / {o['test']:.3f} "
            f"| {p['seconds_criterion']:.2f} / {p['seconds_loo']:.1f} (**{ratio:.0f}×**) "
            f"| {r['svc']['test']:.3f} ({r['svc']['n_support']}) |")
    return "\n".join(lines)


def figures(rows, directory):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    specs = (("loo", "loo_error", "exact LOO 0-1 error",
              "Exact leave-one-out error along the mu path"),
             ("criterion", "criterion", "criterion (43) / n",
              "Hypothetical criterion along the same path"))
    written = []
    for tag, key, ylabel, title in specs:
        fig, ax = plt.subplots(figsize=(5.5, 3.6), dpi=100)
        for j, r in enumerate(rows):
            p = r["path"]
            x = np.asarray(p["mus"]) / r["mu_max"]
            values = np.asarray(p[key], dtype=float) / (r["n"] if key == "criterion" else 1)
            ax.semilogx(x, values, "o-", color=f"C{j}", ms=3, label=r["name"])
            for which, marker, size in (("crit", "D", 7), ("loo", "*", 13)):
                k = int(np.argmin(np.abs(x - r[which]["mu"] / r["mu_max"])))
                ax.plot(x[k], values[k], marker, color=f"C{j}", ms=size, mec="k")
        ax.plot([], [], "D", color="0.6", mec="k", label="mu chosen by the criterion")
        ax.plot([], [], "*", color="0.6", mec="k", ms=11, label="mu chosen by exact LOO")
        ax.set(xlabel="mu / mu_max", ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        target = directory / f"hypothetical_{tag}.png"
        fig.savefig(target)
        plt.close(fig)
        written.append(target)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="heart,sonar,ionosphere")
    parser.add_argument("--n-mus", type=int, default=10)
    parser.add_argument("--figures", metavar="DIR", help="write the two PNGs here")
    args = parser.parse_args()
    rows = []
    for name in args.data.split(","):
        row = run_one(name.strip(), args.n_mus)
        rows.append(row)
        c, o = row["crit"], row["loo"]
        print(f"# {name}: criterion kernels {c['kernels']}, LOO kernels {o['kernels']}, "
              f"similarities {row['seconds_sims']:.3f} s", flush=True)
    print(markdown(rows))
    if args.figures:
        for target in figures(rows, args.figures):
            print(f"wrote {target} ({target.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
