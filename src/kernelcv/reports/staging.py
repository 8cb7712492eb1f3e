"""Staging folders of :func:`kernelcv.reports.io.write_all`, and those a killed run left.

``write_all`` stages a run's files in ``.NAME.XXXX.tmp`` beside the output folder NAME
(``.kernelcv.XXXX.tmp`` inside it when its parent is not writable) and records its owner
(process id and host) and the names of its files in a ``.owner`` file there. Ctrl-C and
errors remove the folder; ``kill -9`` cannot. If the kill landed while the files were
moved into an existing folder, some new files are already in place and the old ones they
replaced wait in the staging folder's ``.previous``: the output folder is then a mix of
two runs.

:func:`clean_stale` (called by the next run into the same folder, before it writes
anything) finds such folders whose owner is a process of this host that no longer runs,
undoes the moves (an old file in ``.previous`` goes back; a file the killed run had
moved in with no old version is removed), so the output folder is as it was before the
killed run -- all or nothing --, removes the folder and logs one note per folder. A
folder without an owner file (the kill landed between its creation and the first write)
counts as stale once it is an hour old. A live owner's folder, or another host's, is
left alone. An owner file inside the output folder itself (the kill landed between the
rename of a new folder and the removal of that file) is removed.
Cost: one directory listing of the parent folder.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import tempfile
import time

__all__ = ["OWNER", "clean_stale", "make_staging_folder"]

logger = logging.getLogger("kernelcv.reports")

#: The file naming the process that owns a staging folder.
OWNER = ".owner"
#: A staging folder with no owner file is taken as stale after this many seconds.
ORPHAN_AGE = 3600.0


def make_staging_folder(folder, names) -> str:
    """A new private folder beside ``folder`` (same file system), else inside it, with an
    owner file listing the output ``names``."""
    parent, name = os.path.split(folder)
    try:
        staging = tempfile.mkdtemp(dir=parent, prefix=f".{name}.", suffix=".tmp")
    except PermissionError:
        if not os.path.isdir(folder):
            raise
        staging = tempfile.mkdtemp(dir=folder, prefix=".kernelcv.", suffix=".tmp")
    with open(os.path.join(staging, OWNER), "w", encoding="ascii") as handle:
        handle.write(f"{os.getpid()} {socket.gethostname()}\n")
        handle.writelines(f"{name}\n" for name in names)
    return staging


def clean_stale(folder) -> None:
    """Undo and remove the staging folders of killed runs into ``folder`` (see above).

    Never raises: a folder that cannot be read or removed is left, with a note.
    """
    folder = os.path.abspath(os.fspath(folder))
    parent, name = os.path.split(folder)
    if _dead_owner(folder, orphan=False) is not None:  # killed right after its rename
        with contextlib.suppress(OSError):
            os.remove(os.path.join(folder, OWNER))
    for where, prefix in ((parent, f".{name}."), (folder, ".kernelcv.")):
        try:
            entries = os.listdir(where)
        except OSError:
            continue
        for entry in entries:
            path = os.path.join(where, entry)
            if entry.startswith(prefix) and entry.endswith(".tmp") and os.path.isdir(path):
                owner = _dead_owner(path)
                if owner is not None:
                    _undo(path, folder, owner)


def _dead_owner(path, orphan=True):
    """``(description, output names)`` when the folder's run is over, else None
    (``orphan``: a folder with no owner file counts once it is :data:`ORPHAN_AGE` old)."""
    try:
        with open(os.path.join(path, OWNER), encoding="utf-8") as handle:
            first, *names = handle.read().splitlines()
    except FileNotFoundError:
        if not orphan:
            return None
        try:
            age = time.time() - os.stat(path).st_mtime
        except OSError:
            return None
        return ("a run with no owner record", []) if age > ORPHAN_AGE else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    pid_text, _, host = first.partition(" ")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    if pid == os.getpid() or _alive(pid):
        return None
    return f"process {pid}, no longer running", names


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _undo(path, folder, owner):
    description, names = owner
    previous = os.path.join(path, ".previous")
    restored, removed = [], []
    for name in names:
        if os.sep in name or name in ("", ".", ".."):
            continue
        target, kept = os.path.join(folder, name), os.path.join(previous, name)
        try:
            if os.path.lexists(kept):
                os.replace(kept, target)
                restored.append(name)
            elif not os.path.lexists(os.path.join(path, name)) and os.path.lexists(target):
                os.remove(target)  # moved in by the killed run, with no earlier version
                removed.append(name)
        except OSError:
            pass
    shutil.rmtree(path, ignore_errors=True)
    done = [f"put back the earlier {', '.join(restored)}"] if restored else []
    done += [f"removed its {', '.join(removed)}"] if removed else []
    done.append("removed it" if not os.path.exists(path)
                else "could not remove it: remove it by hand")
    logger.info("%s: the staging folder %s of an interrupted run (%s) was left; %s",
                folder, os.path.basename(path), description, "; ".join(done))
