"""TorchKM's side of benchmarks/bench_torchkm.py; runs in a Python that has torch and torchkm.

Draws TorchKM's Table 2 data (``data_gen`` with 5 clusters per class, mu = 2, ro = 3,
standardized; n / 10 test rows), its kernel width ``sig = sigest(X)``, 10 folds
(``randperm(n) % 10``) and 50 lambda log-spaced on [1e-3, 1e3], writes them to an .npz
for kernelcv, then times ``TorchKMSVC`` on them (CPU, one thread) and prints one JSON line.

    python torchkm_runner.py N P SEED OUT.npz [--exact] [--cuda] [--data-only]
    python torchkm_runner.py --data IN.npz [--exact]     # X, y (+-1), folds (0..9), X_test, y_test

With ``--data`` the rows, folds and test rows come from the file (TorchKM's own width
``sigest`` and its 50 lambda are kept) and nothing is written. ``--data-only`` writes the
data and stops (for n past TorchKM's 32,768-row limit): its line has no seconds.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch
from torchkm import data_gen, sigest, standardize
from torchkm.estimators import TorchKMSVC

N_LAMBDA, FOLDS = 50, 10


def main():
    exact = "--exact" in sys.argv
    device = "cuda" if "--cuda" in sys.argv else "cpu"
    torch.set_num_threads(1)
    if sys.argv[1] == "--data":
        given = np.load(sys.argv[2])
        X, y = torch.as_tensor(given["X"]), torch.as_tensor(given["y"])
        X_test, y_test = torch.as_tensor(given["X_test"]), torch.as_tensor(given["y_test"])
        folds, n, seed = given["folds"], len(given["y"]), 0
        torch.manual_seed(seed)
        sig = sigest(X)
    else:
        n, p, seed, out = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                           sys.argv[4])
        X, y, _ = data_gen(n, 5, p, p // 2, p // 2, 2.0, 3.0, seed)
        X_test, y_test, _ = data_gen(n // 10, 5, p, p // 2, p // 2, 2.0, 3.0, seed)
        X, X_test = standardize(X), standardize(X_test)
        torch.manual_seed(seed)
        sig = sigest(X)
        folds = (torch.randperm(n) % FOLDS).numpy()
    lams = np.logspace(3, -3, N_LAMBDA)
    Cs = 1.0 / (2.0 * n * lams)
    if sys.argv[1] != "--data":
        np.savez(out, X=X.numpy(), y=y.numpy(), X_test=X_test.numpy(),
                 y_test=y_test.numpy(), folds=folds, sig=sig, lams=lams)
    if "--data-only" in sys.argv:
        print(json.dumps({"seconds": None, "sig": sig, "torch": torch.__version__}))
        return
    model = TorchKMSVC(kernel="rbf", rbf_sigma=sig, Cs=Cs, nC=N_LAMBDA,
                       cv=int(folds.max()) + 1, foldid=folds + 1, device=device,
                       random_state=seed, is_exact=int(exact))
    tic = time.perf_counter()
    model.fit(X.numpy(), y.numpy())
    seconds = time.perf_counter() - tic
    error = float(np.mean(model.predict(X_test.numpy()) != y_test.numpy()))
    print(json.dumps({"seconds": seconds, "C": model.best_C_, "test_error": error,
                      "cv_error": float(np.min(model.cv_mis_)), "sig": sig,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
