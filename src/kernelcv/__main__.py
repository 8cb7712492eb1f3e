"""``python -m kernelcv`` runs the command-line interface."""

from .cli import console

console()
