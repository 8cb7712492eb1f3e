"""Checkpoint files: a long search records each finished kernel setting and resumes after a kill.

The file is JSON Lines (text, no pickle): the first line identifies the search by a
fingerprint of its data and options; every later line is one finished unit of work with
a checksum::

    {"kernelcv_checkpoint": 2, "fingerprint": "<sha256>", "n_settings": 21}
    {"setting": 3, "records": [{...}, ...], "sha256": "<hex>"}
    {"confirm": 17, "exact": {...}, "sha256": "<hex>"}

Each line is appended with ``flush`` and ``fsync``, so a ``kill -9`` loses at most the
line being written; a truncated last line is ignored on reading. Resuming a search whose
fingerprint differs is refused rather than mixing two searches.

A line read back is used only when its checksum (SHA-256 of the search's fingerprint and
the line's canonical JSON) matches and its records are well formed
(:mod:`kernelcv.selection.checkpointing.record_checks`: types, ranges, the CV error
equal to the mean of the fold errors). Any other line -- edited, damaged, from an older
kernelcv without checksums -- is dropped with a note in :attr:`Checkpoint.notes`, its
work is done again, and the file is rewritten without it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np
import scipy.sparse as sp

from ...exceptions import KernelCVError
from .record_checks import check_exact, check_setting_records

FORMAT_VERSION = 2
# Every checkpoint file starts with these bytes (its JSON header's first key).
HEADER_START = b'{"kernelcv_checkpoint"'
READABLE_VERSIONS = (1, 2)  # version 1 lines have no checksum: all of them are redone


def fingerprint(X, y, fold_ids, options: dict) -> str:
    """SHA-256 over the data, the labels, the folds and the JSON of the search options."""
    digest = hashlib.sha256()
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        for part in (X.data, X.indices, X.indptr):
            digest.update(np.ascontiguousarray(part).tobytes())
        digest.update(repr(X.shape).encode())
    else:
        array = np.ascontiguousarray(X, dtype=np.float64)
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    digest.update(np.ascontiguousarray(y, dtype=np.float64).tobytes())
    if fold_ids is not None:
        digest.update(np.ascontiguousarray(fold_ids, dtype=np.int64).tobytes())
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()


class Checkpoint:
    """Append-only record of finished work of one search.

    Parameters
    ----------
    path : file to create or resume.
    key : the search's :func:`fingerprint`.
    n_settings : number of kernel settings of the search.
    setting_lams : the lam values of each setting (records must match them), optional.
    n_samples : the number of training samples (fold sizes must add up to it), optional.
    metric : ``"0-1"`` (errors in [0, 1], whole mistakes per fold) or ``"mse"``.

    Attributes
    ----------
    settings : dict ``setting index -> records`` read back from the file.
    confirmations : dict ``candidate index -> exact result`` read back from the file.
    notes : one text per line that was dropped (and whose work is redone).
    """

    def __init__(self, path, key: str, n_settings: int, setting_lams=None, n_samples=None,
                 metric=None):
        self.path = os.fspath(path)
        self.key = key
        self.settings: dict[int, list[dict]] = {}
        self.confirmations: dict[int, dict] = {}
        self.notes: list[str] = []
        self.n_settings = n_settings
        self.setting_lams = setting_lams
        self.n_candidates = (None if setting_lams is None
                             else sum(len(lams) for lams in setting_lams))
        self.n_samples = n_samples
        self.max_error = 1.0 if metric == "0-1" else math.inf
        if os.path.islink(self.path):
            raise KernelCVError(f"checkpoint {self.path} is a symbolic link; give the file "
                                "itself (a checkpoint is not written through links)")
        if os.path.exists(self.path) and self._has_header():
            self._read()
        else:
            self._write_header(n_settings)

    def _has_header(self) -> bool:
        """False for an empty file or one killed while its first line was written (what
        it holds is the start of a checkpoint header); any other file without a line in
        its first 4 KiB is not a checkpoint and is refused, never overwritten."""
        try:
            with open(self.path, "rb") as handle:
                start = handle.read(4096)
        except OSError:
            return True  # let _read report the problem
        if b"\n" in start:
            return True
        torn = start.strip()
        if torn and not (torn.startswith(HEADER_START) or HEADER_START.startswith(torn)):
            raise KernelCVError(f"{self.path} exists and is not a kernelcv checkpoint file; "
                                "give another --checkpoint path (it is not overwritten)")
        return False

    def _header(self) -> str:
        return json.dumps({"kernelcv_checkpoint": FORMAT_VERSION, "fingerprint": self.key,
                           "n_settings": self.n_settings}) + "\n"

    def _write_header(self, n_settings):
        try:
            with open(self.path, "w", encoding="utf-8") as handle:
                handle.write(self._header())
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise KernelCVError(f"cannot write checkpoint {self.path}: {exc.strerror}") from None

    def _checksum(self, entry: dict) -> str:
        body = {k: v for k, v in entry.items() if k != "sha256"}
        text = self.key + "\n" + json.dumps(body, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _read(self):
        try:
            with open(self.path, encoding="utf-8") as handle:
                lines = handle.read().split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise KernelCVError(f"cannot read checkpoint {self.path}: {exc}") from None
        try:
            header = json.loads(lines[0])
        except json.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or \
                header.get("kernelcv_checkpoint") not in READABLE_VERSIONS:
            raise KernelCVError(f"{self.path} is not a kernelcv checkpoint file")
        if header.get("fingerprint") != self.key:
            raise KernelCVError(
                f"checkpoint {self.path} belongs to a different search (other data or "
                "options); delete it or give another --checkpoint path")
        complete = lines[1:-1] if lines[-1] == "" else lines[1:]
        dropped = []
        for number, line in enumerate(complete, start=2):
            problem = self._take(line)
            if problem is not None and not (number == len(lines) and problem == "torn"):
                dropped.append((number, problem))
        for number, problem in dropped:
            self.notes.append(f"checkpoint {self.path}: line {number} dropped ({problem}); "
                              "its work is done again")
        # Rewrite without a torn or dropped line, so later appends start on a fresh line
        # and the file holds only what is used.
        if lines[-1] != "" or dropped or header["kernelcv_checkpoint"] != FORMAT_VERSION:
            self._rewrite()

    def _take(self, line) -> str | None:
        """Use one line if it passes every check; otherwise say why not."""
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            return "torn"
        if not isinstance(entry, dict):
            return "not a JSON object"
        if "sha256" not in entry:
            return "no checksum"
        if entry["sha256"] != self._checksum(entry):
            return "the checksum does not match: edited or damaged"
        if "setting" in entry:
            index = entry["setting"]
            if not isinstance(index, int) or isinstance(index, bool) or \
                    not 0 <= index < self.n_settings:
                return f"setting {index!r} is not one of the search's {self.n_settings}"
            lams = None if self.setting_lams is None else self.setting_lams[index]
            problem = check_setting_records(entry.get("records"), lams, self.n_samples,
                                            self.max_error)
            if problem is None and index not in self.settings:
                self.settings[index] = entry["records"]
            return problem
        if "confirm" in entry:
            index = entry["confirm"]
            if not isinstance(index, int) or isinstance(index, bool) or index < 0 or \
                    (self.n_candidates is not None and index >= self.n_candidates):
                return f"candidate {index!r} is not one of the search's"
            problem = check_exact(entry.get("exact"), self.n_samples, self.max_error)
            if problem is None and index not in self.confirmations:
                self.confirmations[index] = entry["exact"]
            return problem
        return "neither a setting nor a confirmation"

    def _line(self, entry: dict) -> str:
        return json.dumps({**entry, "sha256": self._checksum(entry)}) + "\n"

    def _rewrite(self):
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(self._header())
                for index, records in self.settings.items():
                    handle.write(self._line({"setting": index, "records": records}))
                for index, exact in self.confirmations.items():
                    handle.write(self._line({"confirm": index, "exact": exact}))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            _remove_quietly(tmp)
            raise KernelCVError(f"cannot write checkpoint {self.path}: {exc.strerror}") from None
        except BaseException:
            _remove_quietly(tmp)
            raise

    def _append(self, entry: dict):
        try:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(self._line(entry))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise KernelCVError(f"cannot write checkpoint {self.path}: {exc.strerror}") from None

    def add_setting(self, index: int, records: list[dict]):
        """Record the finished records of kernel setting ``index``."""
        self.settings[index] = records
        self._append({"setting": index, "records": records})

    def add_confirmation(self, index: int, exact: dict):
        """Record the exact re-evaluation of candidate ``index``."""
        self.confirmations[index] = exact
        self._append({"confirm": index, "exact": exact})


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass
