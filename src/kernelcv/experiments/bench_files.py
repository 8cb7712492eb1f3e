"""``BenchFiles``: where ``kernelcv bench`` reads and writes, as one object.

The data folder, the papers' result tables, the output folder (with its checkpoint) and
whether figures are drawn and an old checkpoint discarded, for
:func:`kernelcv.experiments.bench.run_bench`. The folders themselves are looked at when
the bench starts, before any work.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..exceptions import KernelCVError


@dataclass(frozen=True)
class BenchFiles:
    """What the bench reads and writes.

    Attributes
    ----------
    data_dir : path or None, default None
        Data folder (None: ``$KERNELCV_DATA`` or ``shared/datasets``;
        :func:`kernelcv.experiments.suites.resolve_data_dir`).
    out : path, default "kernelcv-bench"
        Output folder (created); holds the checkpoint while running.
    paper_folder : path or None, default None
        The papers' result tables (None: found as
        :func:`kernelcv.experiments.paper_tables.find_folder` says; none found: the
        report's ``papers`` is None and a note says so).
    figures : bool, default True
        Write the PNG figures (needs matplotlib).
    fresh : bool, default False
        Ignore (and replace) an existing checkpoint in ``out``.

    Raises
    ------
    KernelCVError
        When a folder is not a path or a flag is not a bool.
    """

    data_dir: str | os.PathLike | None = None
    out: str | os.PathLike = "kernelcv-bench"
    paper_folder: str | os.PathLike | None = None
    figures: bool = True
    fresh: bool = False

    def __post_init__(self):
        for name in ("data_dir", "out", "paper_folder"):
            value = getattr(self, name)
            if (value is None and name != "out") or isinstance(value, (str, os.PathLike)):
                continue
            raise KernelCVError(f"{name} must be a folder path, got {value!r}")
        if str(self.out) == "":
            raise KernelCVError("out must be a folder path, got ''")
        for name in ("figures", "fresh"):
            if not isinstance(getattr(self, name), bool):
                raise KernelCVError(f"{name} must be True or False, got "
                                    f"{getattr(self, name)!r}")
