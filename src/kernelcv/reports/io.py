"""Writing reports: JSON-able values, atomic multi-file writes, PNG bytes, folder checks.

Output files are rendered in memory first and then written together by
:func:`write_all` (each to a temporary file in the same folder, then ``os.replace``): a
reader never sees half a file and a failed run leaves no partial report. New files get
the permissions the umask gives (:func:`new_file_mode`), not ``tempfile``'s private 0600.
"""

from __future__ import annotations

import io
import math
import os
import re
import tempfile

import numpy as np

from ..exceptions import KernelCVError

__all__ = ["check_writable_folder", "jsonable", "new_file_mode", "png", "write_all"]


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


def check_writable_folder(out):
    """Refuse (``KernelCVError``) an ``--out`` folder that cannot be created or written."""
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


def png(fig, dpi=120) -> bytes:
    """The figure as PNG bytes (written later with the report, all or nothing)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def new_file_mode() -> int:
    """Permissions a freshly created file would get under the current umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            match = re.search(r"^Umask:\s*([0-7]+)", status.read(), re.MULTILINE)
        umask = int(match.group(1), 8) if match else 0o022
    except OSError:
        umask = 0o022
    return 0o666 & ~umask


def write_all(out, outputs: dict[str, bytes]):
    """Write every file to a temporary name first, then move them all into place."""
    folder = os.fspath(out)
    mode = new_file_mode()
    staged = []
    try:
        os.makedirs(folder, exist_ok=True)
        for name, payload in outputs.items():
            handle = tempfile.NamedTemporaryFile(dir=folder, prefix=f".{name}.", delete=False)
            staged.append((handle.name, os.path.join(folder, name)))
            with handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(handle.name, mode)
        for temporary, final in staged:
            os.replace(temporary, final)
    except BaseException as exc:
        for temporary, _ in staged:
            try:
                os.remove(temporary)
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise KernelCVError(f"cannot write to {folder}: {exc.strerror or exc}") from None
        raise
