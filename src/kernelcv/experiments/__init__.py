"""Reproducing the papers' experiments against scikit-learn (``kernelcv bench``).

* :mod:`.suites` — data sets, machines ("tables"), grids of the quick and full modes;
* :mod:`.protocol` — random 50/50 splits, paired t-tests, summaries;
* :mod:`.runners` — the compared selection criteria (kernelcv's and GridSearchCV);
* :mod:`.convergence` — |BIF - exact| CV against the order r;
* :mod:`.sloo_mps` — the ``sloo-mps`` table: SLOO-MPS's 10-fold CV error (Bo, Wang &
  Jiao, Table 1) beside the paper's numbers and ``GridSearchCV(SVC)``;
* :mod:`.tables`, :mod:`.figures` — Markdown / JSON tables and PNG figures;
* :mod:`.plan`, :mod:`.bench_files` — :class:`BenchPlan` (what to run) and
  :class:`BenchFiles` (where to read and write), the options of :func:`run_bench`;
* :mod:`.bench` — :func:`run_bench`, which ties them together with checkpointing.
"""

from .bench import run_bench
from .bench_files import BenchFiles
from .plan import BenchPlan
from .protocol import paired_t, random_splits, summarize

__all__ = ["BenchFiles", "BenchPlan", "paired_t", "random_splits", "run_bench", "summarize"]
