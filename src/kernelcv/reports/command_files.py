"""What a command reads and writes, as two small objects the command functions take.

Each command's library side (``run_select``, ``run_cv``, ``run_tune``) reads a data file,
maybe a test file and a fold-id file, with one way to read a CSV file, and writes a
report folder. :class:`DataFiles` holds the inputs, :class:`Outputs` the outputs; the
command line builds them from its options. A command refuses a field it has no use for
(:meth:`DataFiles.refuse`), so an option is never silently dropped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from ..exceptions import KernelCVError

SCALES = ("none", "standard", "minmax")
HEADERS = ("auto", "yes", "no")


@dataclass(frozen=True)
class DataFiles:
    """The input files of a command and how to read them.

    Attributes
    ----------
    data : the training data file (svmlight, CSV or npz; :mod:`kernelcv.reading.files`).
    test : an optional test file, read with the training file's columns.
    fold_ids : an optional file of one fold id per training row (instead of seeded folds).
    header : whether a CSV file's first row is a header: ``"auto"``, ``"yes"``, ``"no"``.
    target : a CSV file's target column: a header name or a number (1 = first, -1 = last).
    scale : ``"none"``, ``"standard"`` or ``"minmax"``: feature scaling fitted on the
        training data and applied to the test data (:mod:`kernelcv.reports.scaling`).
    stream : read the files in row chunks, never whole (random features only).
    sample_weight : an optional file of one weight per training row
        (:func:`kernelcv.reading.files.read_sample_weights`).
    """

    data: str | os.PathLike
    test: str | os.PathLike | None = None
    fold_ids: str | os.PathLike | None = None
    header: str = "auto"
    target: object = None
    scale: str = "none"
    stream: bool = False
    sample_weight: str | os.PathLike | None = None

    def __post_init__(self):
        if self.header not in HEADERS:
            raise KernelCVError(f"header must be one of {', '.join(HEADERS)}, got "
                                f"{self.header!r}")
        if self.scale not in SCALES:
            raise KernelCVError(f"scale must be one of {', '.join(SCALES)}, got "
                                f"{self.scale!r}")

    def refuse(self, command: str, *names: str):
        """Refuse the fields ``names`` when they differ from their defaults: ``command``
        has no use for them."""
        for item in fields(self):
            if item.name in names and getattr(self, item.name) != item.default:
                raise KernelCVError(f"{command} takes no {item.name} (it was "
                                    f"{getattr(self, item.name)!r})")


@dataclass(frozen=True)
class Outputs:
    """What a command writes besides its return value.

    Attributes
    ----------
    out : the report folder (None: nothing is written there).
    plot : also draw the command's PNG figures into ``out``, from the values the search
        computed (no refits: a few tenths of a second).
    plot_exact : the CV-curve figure also computes what the search did not: exact refit
        CV along the kernel parameter at the chosen lam and BIF of low orders beside it
        (t refits per point; implies ``plot``).
    save_model : a file for the chosen model (:func:`kernelcv.load_model` reads it).
    argv : the command line, recorded in the report (None from Python).
    """

    out: str | os.PathLike | None = None
    plot: bool = False
    save_model: str | os.PathLike | None = None
    argv: tuple | list | None = None
    plot_exact: bool = False

    def __post_init__(self):
        if self.plot_exact:
            object.__setattr__(self, "plot", True)
        if self.plot and self.out is None:
            raise KernelCVError("--plot writes PNG files: give an output folder with --out DIR")
