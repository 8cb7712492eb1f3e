"""Staging folders of :func:`kernelcv.reports.io.write_all`, and those a killed run left.

``write_all`` stages a run's files in ``.NAME.TOKEN.XXXX.tmp`` beside the output folder
NAME (``.kernelcv.TOKEN.XXXX.tmp`` inside it when its parent is not writable; TOKEN is
random) and records its owner (process id, host, user id and the same TOKEN), the names
of its files and, once written, each staged file's device and inode in a ``.owner``
file there. Ctrl-C and
errors remove the folder; ``kill -9`` cannot. If the kill landed while the files were
moved into an existing folder, some new files are already in place and the old ones they
replaced wait in the staging folder's ``.previous``: the output folder is then a mix of
two runs.

:func:`clean_stale` (called by the next run into the same folder, before it writes
anything) finds such folders whose owner is a process of this host that no longer runs,
undoes the moves (an old file in ``.previous`` goes back; a file the killed run had
moved in with no old version is removed -- only if it is that very file, by device and
inode), so the output folder is as it was before the killed run -- all or nothing --,
removes the folder and logs one note per folder. Only folders of this user whose owner
file is this user's and carries the token of the folder's name are touched: a folder
that merely looks like one is never removed, nor anything in the output folder on its
word. An empty folder of this user without an owner file (the kill landed between its
creation and the first write) is removed once it is an hour old; a non-empty one is left.
A live owner's folder, or another host's, is left alone. An owner file inside the output
folder itself (the kill landed between the rename of a new folder and the removal of
that file) is removed.
Cost: one directory listing of the parent folder.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import stat
import tempfile
import time

__all__ = ["OWNER", "clean_stale", "make_staging_folder", "record_staged_files"]

logger = logging.getLogger("kernelcv.reports")

#: The file naming the process that owns a staging folder.
OWNER = ".owner"
#: A staging folder with no owner file is taken as stale after this many seconds.
ORPHAN_AGE = 3600.0


def make_staging_folder(folder, names) -> str:
    """A new private folder beside ``folder`` (same file system), else inside it, with an
    owner file: process id, host, user id and a random token that is also part of the
    folder's name, then the output ``names``."""
    parent, name = os.path.split(folder)
    token = secrets.token_hex(8)
    try:
        staging = tempfile.mkdtemp(dir=parent, prefix=f".{name}.{token}.", suffix=".tmp")
    except PermissionError:
        if not os.path.isdir(folder):
            raise
        staging = tempfile.mkdtemp(dir=folder, prefix=f".kernelcv.{token}.", suffix=".tmp")
    try:
        with open(os.path.join(staging, OWNER), "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {socket.gethostname()} {os.getuid()} {token}\n")
            handle.write(f"@ {os.path.abspath(folder)}\n")  # the run's output folder
            handle.writelines(f"{name}\n" for name in names)
    except BaseException:  # a full disk: the caller never learns the folder's name
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def record_staged_files(staging, names) -> None:
    """Append each staged file's device, inode, size and modification time to the owner
    file: a clean-up removes a file from the output folder only if it is one of these (a
    rename keeps all four; a file made later may reuse the inode, not the rest)."""
    lines = []
    for name in names:
        info = os.lstat(os.path.join(staging, name))
        lines.append(f"= {info.st_dev} {info.st_ino} {info.st_size} {info.st_mtime_ns} "
                     f"{name}\n")
    with open(os.path.join(staging, OWNER), "a", encoding="ascii") as handle:
        handle.writelines(lines)
        handle.flush()
        os.fsync(handle.fileno())


def clean_stale(folder) -> None:
    """Undo and remove the staging folders of killed runs into ``folder`` (see above).

    Never raises: a folder that cannot be read or removed is left, with a note.
    """
    folder = os.path.abspath(os.fspath(folder))
    parent, name = os.path.split(folder)
    # killed right after its rename: the owner file is inside the output folder itself
    if _dead_owner(folder, orphan=False, token_in_name=False, folder=folder) is not None:
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
                owner = _dead_owner(path, folder=folder)
                if owner is not None:
                    _undo(path, folder, owner)


def _ours(path) -> bool:
    """A real folder (not a link) of this user."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _dead_owner(path, orphan=True, token_in_name=True, folder=None):
    """``(description, output names, {name: (device, inode, size, mtime_ns)})`` when the
    folder is the
    staging folder of a run of this user on this host that is over, else None.

    Its owner file must be this user's, name this user and host and a process that no
    longer runs, and (``token_in_name``) carry the random token of the folder's name:
    a folder that merely looks like one (or another user's) is never touched, nor one
    whose record names another output folder than ``folder`` (``.res.a.*`` beside
    ``res`` is ``res.a``'s, not ``res``'s). With
    ``orphan``, an empty folder of this user with no owner file (a kill between its
    creation and the owner file) counts once it is :data:`ORPHAN_AGE` old; one with
    anything in it is left alone.
    """
    if not _ours(path):
        return None
    owner = os.path.join(path, OWNER)
    try:
        if os.lstat(owner).st_uid != os.getuid() or os.path.islink(owner):
            return None
        with open(owner, encoding="utf-8") as handle:
            first, *lines = handle.read().splitlines()
    except FileNotFoundError:
        if not orphan:
            return None
        try:
            empty = not os.listdir(path)
            age = time.time() - os.stat(path).st_mtime
        except OSError:
            return None
        return ("a run with no owner record", [], {}) if empty and age > ORPHAN_AGE else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    fields = first.split(" ")
    if len(fields) != 4 or not fields[0].isdigit() or not fields[2].isdigit():
        return None  # not this version's record (or not a record at all)
    pid_text, host, uid_text, token = fields
    if host != socket.gethostname() or int(uid_text) != os.getuid():
        return None
    if token_in_name and f".{token}." not in os.path.basename(path):
        return None
    pid = int(pid_text)
    if pid == os.getpid() or _alive(pid):
        return None
    recorded = next((line[2:] for line in lines if line.startswith("@ ")), None)
    if folder is not None and recorded != os.path.abspath(os.fspath(folder)):
        return None
    names = [line for line in lines if line and not line.startswith(("= ", "@ "))]
    inodes = {}
    for line in lines:
        if line.startswith("= "):
            parts = line.split(" ", 5)
            if len(parts) == 6 and all(part.isdigit() for part in parts[1:5]):
                inodes[parts[5]] = tuple(int(part) for part in parts[1:5])
    return f"process {pid}, no longer running", names, inodes


def _is_staged(target, identity) -> bool:
    """Whether ``target`` is the very file the killed run staged (same device, inode,
    size and modification time): the only kind of file a clean-up removes."""
    if identity is None:
        return False
    try:
        info = os.lstat(target)
    except OSError:
        return False
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns) == identity


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _undo(path, folder, owner):
    description, names, inodes = owner
    previous = os.path.join(path, ".previous")
    restored, removed = [], []
    for name in names:
        if os.sep in name or name in ("", ".", ".."):
            continue
        target, kept = os.path.join(folder, name), os.path.join(previous, name)
        try:
            if os.path.lexists(kept):
                # over nothing, or over the killed run's own new file; never over a file
                # someone wrote there since
                if os.path.lexists(target) and not _is_staged(target, inodes.get(name)):
                    continue
                os.replace(kept, target)
                restored.append(name)
            elif not os.path.lexists(os.path.join(path, name)) and _is_staged(target,
                                                                              inodes.get(name)):
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
