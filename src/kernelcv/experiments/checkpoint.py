"""The checkpoint of ``kernelcv bench``: finished records in JSON Lines, resumed on a rerun.

The first line holds the run's fingerprint (a hash of its options); each further line one
finished record ``{"key": ..., "record": ...}``. A header of another run, or an unreadable
header or middle line, is refused with advice (``--fresh``); a torn last line (an
interrupted write) is dropped. Appending a record is O(size of the record).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..exceptions import KernelCVError
from ..reports.io import jsonable


def file_stamp(path: Path) -> str:
    """Size and modification time of a data file, hashed (changes when the file does)."""
    info = path.stat()
    text = f"{path.name}:{info.st_size}:{info.st_mtime_ns}"
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def fingerprint(config) -> str:
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Checkpoint:
    """JSON Lines: a header with the run's fingerprint, then one finished record a line."""

    def __init__(self, path: Path, key: str, fresh: bool):
        self.path, self.records = path, {}
        if path.exists() and not fresh:
            self._load(key)
        else:
            _write_text(path, json.dumps({"fingerprint": key}) + "\n")

    def _load(self, key):
        damaged = (f"{self.path} is damaged (unreadable header or record); rerun with "
                   "--fresh to discard it, or use another --out")
        try:
            lines = self.path.read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            raise KernelCVError(damaged) from None
        header = _json_object(lines[0]) if lines else None
        if header is None or "fingerprint" not in header:
            raise KernelCVError(damaged)
        if header["fingerprint"] != key:
            raise KernelCVError(
                f"{self.path} belongs to a run with other options (mode, seed, grid, "
                "--confirm or data folder); rerun with --fresh to discard it, or use "
                "another --out")
        good = lines[:1]
        for number, line in enumerate(lines[1:], start=2):
            item = _json_object(line)
            if item is None or not isinstance(item.get("key"), str) or "record" not in item:
                if number == len(lines):  # torn by an interruption: drop it
                    _write_text(self.path, "\n".join(good) + "\n")
                    break
                raise KernelCVError(damaged)
            self.records[item["key"]] = item["record"]
            good.append(line)

    def get(self, key):
        return self.records.get(key)

    def add(self, key, record):
        self.records[key] = record
        _write_text(self.path, json.dumps({"key": key, "record": jsonable(record)}) + "\n",
                    "a")


def _write_text(path: Path, text: str, mode: str = "w"):
    """Write (or append) ``text``; a failure (a full disk) names the checkpoint file."""
    try:
        with path.open(mode) as handle:
            handle.write(text)
            handle.flush()
    except OSError as exc:
        raise KernelCVError(f"cannot write {path}: {exc.strerror or exc}") from None


def _json_object(line):
    """The dict a JSON line holds, or None when it is not JSON or not an object."""
    try:
        item = json.loads(line)
    except ValueError:
        return None
    return item if isinstance(item, dict) else None
