"""The CLI's allocator setting (kernelcv._allocator): applied on glibc, left alone where
the user tuned malloc, and it does keep freed arrays' pages (fewer page faults)."""

import platform
import subprocess
import sys

import pytest

from kernelcv import _allocator

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# Allocates six 16 MB arrays at once and frees them, ten times (as a search's Gram and
# fold blocks come and go); prints the minor page faults of rounds 2-10. glibc's defaults
# give back all but twice the largest freed block each round; kept memory is reused.
FAULTS = """
import resource, sys
import numpy as np
from kernelcv._allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory({})
for round_ in range(10):
    if round_ == 1:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.ones(2_000_000) for _ in range(6)]
    del arrays
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode):
    done = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True,
                          text=True, check=True)
    return int(done.stdout.strip())


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_kept_memory_saves_page_faults():
    default, kept = _faults("default"), _faults("keep")
    # Default: about four of the six arrays fault their pages in again every round
    # (~3,900 faults each with 4 KiB pages); kept: round 1's pages serve every round.
    assert kept * 4 < default, (default, kept)


def test_user_settings_win(monkeypatch):
    def refuse():
        raise AssertionError("mallopt must not be looked up when the user tuned malloc")

    monkeypatch.setattr(_allocator, "_mallopt", refuse)
    for name in _allocator.USER_SETTINGS:
        assert _allocator.keep_freed_memory({name: "1"}) is False


def test_no_mallopt_is_a_no_op(monkeypatch):
    monkeypatch.setattr(_allocator, "_mallopt", lambda: None)
    assert _allocator.keep_freed_memory({}) is False


def test_both_settings_are_passed(monkeypatch):
    calls = []

    def fake(parameter, value):
        calls.append((parameter, value))
        return 1

    monkeypatch.setattr(_allocator, "_mallopt", lambda: fake)
    assert _allocator.keep_freed_memory({}) is True
    assert calls == [(_allocator.M_MMAP_THRESHOLD, _allocator.MMAP_THRESHOLD),
                     (_allocator.M_TRIM_THRESHOLD, _allocator.TRIM_THRESHOLD)]


def test_a_refused_value_reports_false(monkeypatch):
    monkeypatch.setattr(_allocator, "_mallopt", lambda: (lambda parameter, value: 0))
    assert _allocator.keep_freed_memory({}) is False
