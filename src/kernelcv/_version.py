"""The package version, in one place (``pyproject.toml`` repeats it; a test compares them).

Read from here rather than ``importlib.metadata``, whose import costs ~35 ms of every
command's start-up.
"""

__version__ = "0.2.0"
