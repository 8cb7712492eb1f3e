"""Writing reports: JSON-able values, atomic multi-file writes, PNG bytes, folder checks.

Output files are rendered in memory first and then written together by
:func:`write_all` (into a temporary folder beside the output folder, then moved into
place): every file of a run appears, or none does, and a reader never sees half a file.
New files get the permissions the umask gives (:func:`new_file_mode`), not
``tempfile``'s private 0600.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import shutil
import signal
import threading

import numpy as np

from ..exceptions import KernelCVError
from .staging import OWNER, clean_stale, make_staging_folder, record_staged_files

__all__ = ["check_distinct_paths", "check_targets", "check_writable_folder", "jsonable",
           "new_file_mode", "png", "write_all"]


def jsonable(value):
    """Plain JSON types; non-finite floats become null."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same resolved path (symbolic links followed),
    or, where both exist, the same inode (hard links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_distinct_paths(outputs: dict, inputs: dict) -> None:
    """Refuse, before any work, an output path that names an input or another output.

    ``outputs`` and ``inputs`` map an option's name (for the message) to a path or None
    (absent; non-path values such as in-memory arrays are skipped). An output is refused
    when it resolves to the same file as an input or another output (symbolic and hard
    links included), and when it is itself a symbolic link: a write would go through it
    to a file the option does not name.
    """
    def paths(mapping):
        return [(label, os.fspath(path)) for label, path in mapping.items()
                if isinstance(path, (str, os.PathLike))]

    written, read = paths(outputs), paths(inputs)
    for position, (label, path) in enumerate(written):
        if os.path.islink(path):
            raise KernelCVError(f"{label} {path}: is a symbolic link; give the file itself "
                                "(outputs are not written through links)")
        for other_label, other in read:
            if _same_file(path, other):
                raise KernelCVError(f"{label} {path}: is the {other_label} file; writing "
                                    "there would overwrite it -- give another path")
        for other_label, other in written[position + 1:]:
            if _same_file(path, other):
                raise KernelCVError(f"{label} {path} and {other_label} {other} name the "
                                    "same file; give two paths")


def check_writable_folder(out, names=()):
    """Refuse (``KernelCVError``) an ``--out`` folder that cannot be created or written,
    or in which a folder occupies one of the output ``names``."""
    path = os.path.abspath(os.fspath(out))
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise KernelCVError(f"--out {out}: exists and is not a folder")
        target = path
    else:
        target = os.path.dirname(path)
        if os.path.exists(target) and not os.path.isdir(target):
            raise KernelCVError(f"--out {out}: {target} is a file, not a folder")
        if not os.path.isdir(target):
            raise KernelCVError(f"--out {out}: the parent folder {target} does not exist")
    if not os.access(target, os.W_OK | os.X_OK):
        raise KernelCVError(f"--out {out}: folder {target} is not writable")
    check_targets(out, names)
    clean_stale(path)  # a killed run's staging folder: undone before this run starts


def png(fig, dpi=120) -> bytes:
    """The figure as PNG bytes (written later with the report, all or nothing)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def new_file_mode() -> int:
    """Permissions a freshly created file would get under the current umask."""
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it (022 when it cannot be read)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            match = re.search(r"^Umask:\s*([0-7]+)", status.read(), re.MULTILINE)
        return int(match.group(1), 8) if match else 0o022
    except OSError:
        return 0o022


def write_all(out, outputs: dict[str, bytes]):
    """Write every file of a run into the folder ``out``: all of them or none.

    The files are written (and synced) into a temporary folder beside ``out`` (inside it
    when its parent is not writable), then moved into place: a new ``out`` is that
    folder renamed, so every file appears at once; into an existing ``out`` each file is
    moved over the old one, and should a move fail the files already moved are put
    back as they were. Ctrl-C during the moves is held until they (or the restoring)
    are done. The temporary folder is removed on success, on any error and on Ctrl-C;
    one that a killed run left is undone first (:mod:`kernelcv.reports.staging`).

    Raises
    ------
    KernelCVError
        Naming the file that could not be written (a folder of that name, a full disk,
        no permission); nothing of the run is then left in ``out``.
    """
    folder = os.path.abspath(os.fspath(out))
    check_targets(folder, outputs)
    clean_stale(folder)
    staging = None
    try:
        staging = make_staging_folder(folder, list(outputs))
        mode = new_file_mode()
        for name, payload in outputs.items():
            _write_file(os.path.join(staging, name), payload, mode)
        record_staged_files(staging, list(outputs))
        with _sigint_held():
            if not os.path.isdir(folder):
                os.chmod(staging, 0o777 & ~_umask())
                os.rename(staging, folder)
                staging = None
                os.remove(os.path.join(folder, OWNER))  # not one of the run's files
            else:
                _move_into(staging, folder, list(outputs))
    except OSError as exc:
        raise KernelCVError(_write_error(exc, folder, staging)) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def check_targets(folder, names):
    """Refuse (``KernelCVError``) output names that a folder, or a non-folder ``folder``,
    occupies; the message names the offending path."""
    folder = os.fspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise KernelCVError(f"cannot write into {folder}: it exists and is not a folder")
    for name in names:
        target = os.path.join(folder, name)
        if os.path.isdir(target):
            raise KernelCVError(f"cannot write {target}: a folder of that name exists; "
                                "remove or rename it, or choose another output folder")


def _write_file(path, payload, mode):
    with open(path, "wb") as handle:
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, mode)


def _move_into(staging, folder, names):
    """Move the staged files over those in ``folder``; on failure restore the old ones."""
    previous = os.path.join(staging, ".previous")
    os.mkdir(previous)
    moved = []  # (name, whether an old file was kept aside)
    try:
        for name in names:
            target = os.path.join(folder, name)
            kept = os.path.lexists(target)
            if kept:
                os.replace(target, os.path.join(previous, name))
            moved.append((name, kept))
            os.replace(os.path.join(staging, name), target)
    except BaseException:
        for name, kept in reversed(moved):
            target = os.path.join(folder, name)
            try:
                if not os.path.lexists(os.path.join(staging, name)):
                    os.remove(target)  # the new file had arrived
                if kept:
                    os.replace(os.path.join(previous, name), target)
            except OSError:
                pass
        raise


@contextlib.contextmanager
def _sigint_held():
    """Hold Ctrl-C (in the main thread) until the block ends; then raise it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    previous = signal.signal(signal.SIGINT, lambda *_: received.append(True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT,
                      signal.default_int_handler if previous is None else previous)
    if received:
        raise KeyboardInterrupt


def _write_error(exc, folder, staging):
    """One line naming the output file (not only the folder) that could not be written."""
    path = os.fspath(exc.filename or folder)
    if staging is not None and path.startswith(staging + os.sep):
        # a file of the temporary folder (or a move from it): name its destination
        path = os.path.join(folder, os.path.basename(os.fspath(exc.filename2 or path)))
    return f"cannot write {path}: {exc.strerror or exc}"
