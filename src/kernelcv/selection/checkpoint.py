"""Checkpoint files: a long search records each finished kernel setting and resumes after a kill.

The file is JSON Lines (text, no pickle): the first line identifies the search by a
fingerprint of its data and options; every later line is one finished unit of work::

    {"kernelcv_checkpoint": 1, "fingerprint": "<sha256>", "n_settings": 21}
    {"setting": 3, "records": [{...}, ...]}
    {"confirm": 17, "exact": {...}}

Each line is appended with ``flush`` and ``fsync``, so a ``kill -9`` loses at most the
line being written; a truncated last line is ignored on reading. Resuming a search whose
fingerprint differs is refused rather than mixing two searches.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import scipy.sparse as sp

from ..exceptions import KernelCVError

FORMAT_VERSION = 1


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
    n_settings : number of kernel settings of the search (stored for information).

    Attributes
    ----------
    settings : dict ``setting index -> records`` read back from the file.
    confirmations : dict ``candidate index -> exact result`` read back from the file.
    """

    def __init__(self, path, key: str, n_settings: int):
        self.path = os.fspath(path)
        self.key = key
        self.settings: dict[int, list[dict]] = {}
        self.confirmations: dict[int, dict] = {}
        self.n_settings = n_settings
        if os.path.exists(self.path) and self._has_header():
            self._read()
        else:
            self._write_header(n_settings)

    def _has_header(self) -> bool:
        """False for an empty file or one killed while its first line was written."""
        try:
            with open(self.path, "rb") as handle:
                return b"\n" in handle.read(4096)
        except OSError:
            return True  # let _read report the problem
    def _write_header(self, n_settings):
        header = {"kernelcv_checkpoint": FORMAT_VERSION, "fingerprint": self.key,
                  "n_settings": n_settings}
        try:
            with open(self.path, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(header) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise KernelCVError(f"cannot write checkpoint {self.path}: {exc.strerror}") from None

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
        if not isinstance(header, dict) or header.get("kernelcv_checkpoint") != FORMAT_VERSION:
            raise KernelCVError(f"{self.path} is not a kernelcv checkpoint file")
        if header.get("fingerprint") != self.key:
            raise KernelCVError(
                f"checkpoint {self.path} belongs to a different search (other data or "
                "options); delete it or give another --checkpoint path")
        complete = lines[1:-1] if lines[-1] == "" else lines[1:]
        for number, line in enumerate(complete, start=2):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):  # the line being written when the run was killed
                    break
                raise KernelCVError(f"checkpoint {self.path}: line {number} is corrupt; "
                                    "delete the file to start over") from None
            if "setting" in entry:
                self.settings[int(entry["setting"])] = entry["records"]
            elif "confirm" in entry:
                self.confirmations[int(entry["confirm"])] = entry["exact"]
        # Rewrite without a torn last line, so later appends start on a fresh line.
        if lines[-1] != "":
            self._rewrite()

    def _rewrite(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"kernelcv_checkpoint": FORMAT_VERSION,
                                     "fingerprint": self.key,
                                     "n_settings": self.n_settings}) + "\n")
            for index, records in self.settings.items():
                handle.write(json.dumps({"setting": index, "records": records}) + "\n")
            for index, exact in self.confirmations.items():
                handle.write(json.dumps({"confirm": index, "exact": exact}) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def _append(self, entry: dict):
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def add_setting(self, index: int, records: list[dict]):
        """Record the finished records of kernel setting ``index``."""
        self.settings[index] = records
        self._append({"setting": index, "records": records})

    def add_confirmation(self, index: int, exact: dict):
        """Record the exact re-evaluation of candidate ``index``."""
        self.confirmations[index] = exact
        self._append({"confirm": index, "exact": exact})
