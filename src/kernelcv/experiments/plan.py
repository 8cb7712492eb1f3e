"""``BenchPlan``: what ``kernelcv bench`` runs, as one object checked when it is made.

The mode, the splits and their seed, the data sets and tables, the size limit, the
confirmations, the significance threshold and the protocol of
:func:`kernelcv.experiments.bench.run_bench`. Unknown names, numbers out of range and
sets and tables of different tasks only are refused here, before any file is looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from ..exceptions import KernelCVError
from . import sloo_mps
from .suites import DATASETS, MODES, PROTOCOLS, TABLES, check_names

ALL_TABLES = (*TABLES, sloo_mps.TABLE)
ALL_SETS = (*DATASETS, *(name for name in sloo_mps.SETS if name not in DATASETS))


@dataclass(frozen=True)
class BenchPlan:
    """What the bench runs.

    Attributes
    ----------
    mode : {"quick", "full"}, default "quick"
        Grids, default splits, sets and size limit (:data:`kernelcv.experiments.suites.MODES`).
    splits : int >= 2 or None, default None
        Number R of random halves (None: the mode's, 3 or 10).
    seed : int, default 0
        Seed of the splits (split s uses ``seed + s``) and of each split's folds.
    sets : sequence of str or None, default None
        Data sets to run (None: the mode's; the ``sloo-mps`` table then runs on its mode's
        sets, :data:`kernelcv.experiments.sloo_mps.SLOO_MODES`). Kept as a tuple, each
        name once.
    tables : sequence of str or None, default None
        Tables (machines) to run (None: every table, ``sloo-mps`` included). Kept as a
        tuple, each name once.
    max_train : int >= 10 or None, default None
        Largest training half to run (None: the mode's limit).
    confirm : int >= 0, default 0
        Exact confirmations of approximate searches (0: judge them alone).
    t_threshold : float > 0 or None, default None
        |t| above which a difference to the reference is significant (None:
        ``scipy.stats.t.ppf(0.95, splits - 1)``, 1.833 at 10 splits).
    protocol : str, default "ours"
        ``"ours"``, ``"paper"`` or ``"paper-bias-free"``
        (:data:`kernelcv.experiments.suites.PROTOCOLS`: kernel width convention,
        standardised or centred targets, SVR tube, liver-disorders coding, bias term).

    Raises
    ------
    KernelCVError
        For an unknown mode, set, table or protocol, a number out of range, or sets and
        tables without a common task (no (set, table) pair to run).
    """

    mode: str = "quick"
    splits: int | None = None
    seed: int = 0
    sets: tuple | None = None
    tables: tuple | None = None
    max_train: int | None = None
    confirm: int = 0
    t_threshold: float | None = None
    protocol: str = "ours"

    def __post_init__(self):
        if self.mode not in MODES:
            raise KernelCVError(f"unknown mode {self.mode!r}; choose one of "
                                f"{', '.join(MODES)}")
        spec = MODES[self.mode]
        splits = spec.splits if self.splits is None else self.splits
        if isinstance(splits, bool) or not isinstance(splits, int) or splits < 2:
            raise KernelCVError(f"--splits must be an integer >= 2 (a paired t-test needs "
                                f"two splits), got {splits!r}")
        max_train = spec.max_train if self.max_train is None else self.max_train
        if isinstance(max_train, bool) or not isinstance(max_train, int) or max_train < 10:
            raise KernelCVError(f"--max-train must be an integer >= 10, got {max_train!r}")
        set_names = check_names(spec.sets if self.sets is None else self.sets, ALL_SETS,
                                "data set(s)")
        table_names = check_names(list(ALL_TABLES) if self.tables is None else self.tables,
                                  ALL_TABLES, "table(s)")
        if self.protocol not in PROTOCOLS:
            raise KernelCVError(f"unknown protocol {self.protocol!r}; choose one of "
                                f"{', '.join(PROTOCOLS)}")
        _check_pairs([*set_names, *sloo_mps.SLOO_MODES[self.mode].sets]
                     if self.sets is None else set_names, table_names)
        for name in ("seed", "confirm"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or (
                    name == "confirm" and value < 0):
                kind = "an integer >= 0" if name == "confirm" else "an integer"
                raise KernelCVError(f"--{name} must be {kind}, got {value!r}")
        threshold = self.t_threshold
        if threshold is not None and (isinstance(threshold, bool)
                                      or not isinstance(threshold, Real)
                                      or not np.isfinite(threshold) or threshold <= 0):
            raise KernelCVError(f"--t-threshold must be a number > 0, got {threshold!r}")
        if self.sets is not None:
            object.__setattr__(self, "sets", tuple(set_names))
        if self.tables is not None:
            object.__setattr__(self, "tables", tuple(table_names))

    @property
    def n_splits(self) -> int:
        """R: ``splits``, or the mode's."""
        return MODES[self.mode].splits if self.splits is None else self.splits

    @property
    def train_limit(self) -> int:
        """``max_train``, or the mode's limit."""
        return MODES[self.mode].max_train if self.max_train is None else self.max_train

    @property
    def set_names(self) -> list[str]:
        """The sets to run: ``sets``, or the mode's."""
        return list(MODES[self.mode].sets if self.sets is None else self.sets)

    @property
    def table_names(self) -> list[str]:
        """The tables to run: ``tables``, or all of them."""
        return list(ALL_TABLES if self.tables is None else self.tables)


def _tables_for(name) -> tuple[str, tuple[str, ...]]:
    """The kind of a set and the tables that run on it."""
    fit = ()
    if name in DATASETS:
        fit = tuple(t for t, spec in TABLES.items() if spec.task == DATASETS[name].task)
    if name in sloo_mps.SETS:
        fit += (sloo_mps.TABLE,)
    return (DATASETS[name].task if name in DATASETS else "sloo-mps set"), fit


def _check_pairs(set_names, table_names):
    """Refuse a selection in which no table applies to any set (tasks differ)."""
    if any(t in _tables_for(name)[1] for name in set_names for t in table_names):
        return
    groups: dict = {}
    for name in set_names:
        groups.setdefault(_tables_for(name), []).append(name)
    parts = [f"{', '.join(sets_)} ({kind}) need tables {', '.join(fit)}"
             for (kind, fit), sets_ in groups.items()]
    given = ", ".join(f"{t} ({TABLES[t].task if t in TABLES else 'sloo-mps sets'})"
                      for t in table_names)
    raise KernelCVError(f"no selected table applies to the selected sets: {'; '.join(parts)}"
                        f"; got tables {given}. Choose matching --sets and --tables")
