"""Cross-validation criteria: exact refit, closed form (KRR/LS-SVM) and the BIF series."""

from .bif import bif_predictions
from .closed_form import ClosedFormCV
from .exact import refit_predictions
from .result import CVResult

__all__ = ["CVResult", "ClosedFormCV", "bif_predictions", "refit_predictions"]
