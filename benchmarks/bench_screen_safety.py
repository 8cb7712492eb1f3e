"""Is screening safe? The screened search's choice against the whole grid's (issue 37).

For each shared binary set (bench_select's small sets, and with ``--large`` its 2,000-row
subsamples), split and machine: ``grid_search`` on the default grid with the screen
``kernelcv select`` uses (``halving`` from 200 rows, else ``coarse``; with its spot check)
and with ``screen="off"``, on the same 10 folds. Both confirm their best candidates by
exact refit CV, so both chosen CV errors are exact. Printed per run: the candidates each
evaluated, the two exact CV errors, their difference in standard errors of the whole
grid's best (``sqrt(p (1 - p) / n)``) and whether the spot check warned; at the end, how
many runs lie more than one standard error above the whole grid's best (the issue's bar:
none).

    OMP_NUM_THREADS=1 python benchmarks/bench_screen_safety.py --splits 0 1

``--full-from FILE ...`` takes the whole grid's runs from earlier ``--json`` files (same
set, split and machine) instead of rerunning them, to measure a change to the screen
alone (the whole grid does not depend on it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402

from bench_select import DATASETS, SMALL_SETS, Loader, subsample_sets  # noqa: E402
from kernelcv import grid_search  # noqa: E402
from kernelcv.selection.screening import Screening  # noqa: E402
from kernelcv.validation import make_folds  # noqa: E402


def run(X, y, machine, seed, full=None):
    folds = make_folds(y, 10, True, seed)
    strategy = "halving" if len(y) >= 200 else "coarse"
    out = {} if full is None else {"full": full}
    for label, screen in (("screened", Screening(strategy)), ("full", Screening("off"))):
        if label in out:
            continue
        tic = time.perf_counter()
        result = grid_search(X, y, machine, folds=folds, screen=screen, random_state=seed)
        out[label] = {"seconds": time.perf_counter() - tic,
                      "evaluated": len(result.candidates),
                      "cv_error": float(result.best_cv_error),
                      "warned": any(note.startswith("screen check warning")
                                    for note in result.notes)}
    p, n = out["full"]["cv_error"], len(y)
    se = max(np.sqrt(p * (1.0 - p) / n), 1.0 / n)
    out["gap_in_se"] = (out["screened"]["cv_error"] - p) / se
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=SMALL_SETS,
                        help="small sets (none: only the --large subsamples)")
    parser.add_argument("--large", action="store_true", help="add the 2,000-row subsamples")
    parser.add_argument("--splits", type=int, nargs="+", default=[0])
    parser.add_argument("--machines", nargs="+", default=["svm"])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--full-from", nargs="+", default=[],
                        help="earlier --json files: their whole-grid runs are reused")
    args = parser.parse_args()
    earlier = {(r["set"], r["split"], r["machine"]): r["full"]
               for path in args.full_from for r in json.loads(Path(path).read_text())}
    if not DATASETS.exists():
        sys.exit(f"no shared datasets at {DATASETS}")
    loader = Loader(DATASETS)
    names = list(args.sets) + (subsample_sets(False) if args.large else [])
    rows = []
    for name in names:
        if not loader.exists(name):
            print(f"{name}: not in the shared datasets, skipped")
            continue
        for seed in args.splits:
            X, y, _X_test, _y_test = loader.split(name, seed)
            for machine in args.machines:
                out = run(X, y, machine, seed, earlier.get((name, seed, machine)))
                s, f = out["screened"], out["full"]
                print(f"{name:>22} split {seed} {machine}: screened {s['evaluated']:3d} "
                      f"cand. {s['seconds']:6.2f} s CV {s['cv_error']:.4f} | full "
                      f"{f['evaluated']:3d} cand. {f['seconds']:6.2f} s CV {f['cv_error']:.4f}"
                      f" | gap {out['gap_in_se']:+.2f} SE"
                      + ("  (spot check warned)" if s["warned"] else ""), flush=True)
                rows.append({"set": name, "split": seed, "machine": machine, **out})
    above = [r for r in rows if r["gap_in_se"] > 1.0]
    print(f"\n{len(rows)} runs: {len(above)} more than one standard error above the whole "
          f"grid's best; largest gap {max(r['gap_in_se'] for r in rows):+.2f} SE; "
          f"{sum(r['screened']['warned'] for r in rows)} spot-check warnings; time "
          f"screened / full: {sum(r['screened']['seconds'] for r in rows):.1f} / "
          f"{sum(r['full']['seconds'] for r in rows):.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
