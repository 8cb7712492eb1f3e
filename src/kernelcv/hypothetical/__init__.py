"""Non-enumerative ("hypothetical") cross-validation: Chernousova, Levdik, Tatarchuk,
Mottl and Windridge, "Non-enumerative cross validation for the determination of
structural parameters in feature-selective SVMs".

A criterion ``training loss + 2 s2 * effective dimension`` replaces refits for ridge
regression (:mod:`.ridge`), the squared-hinge SVM (:mod:`.svm`), the elastic-net SVM that
selects features (:mod:`.elastic_net`) and the relevance-object machine (:mod:`.relevance`).
The scikit-learn estimators built on them are in :mod:`kernelcv.estimators` and the
library side of ``kernelcv hypothetical`` (``run_hypothetical``, ``MODELS``,
``path_figure``) in :mod:`kernelcv.reports.hypothetical`.
"""

from .elastic_net import enet_objective, enet_svm_path, fit_enet_svm, mu_max
from .relevance import (
    kernel_similarities,
    make_kernels,
    rbf_similarities,
    relevance_path,
    relevant_features,
    secondary_features,
)
from .ridge import (
    effective_dimension,
    estimate_noise_var,
    intercept_design,
    ridge_criterion,
    ridge_fit,
    ridge_path,
)
from .svm import (
    fit_squared_hinge_svm,
    squared_hinge_objective,
    support_effective_dimension,
    svm_criterion,
)

__all__ = [
    "effective_dimension",
    "enet_objective",
    "enet_svm_path",
    "estimate_noise_var",
    "fit_enet_svm",
    "fit_squared_hinge_svm",
    "intercept_design",
    "kernel_similarities",
    "make_kernels",
    "mu_max",
    "rbf_similarities",
    "relevance_path",
    "relevant_features",
    "ridge_criterion",
    "ridge_fit",
    "ridge_path",
    "secondary_features",
    "squared_hinge_objective",
    "support_effective_dimension",
    "svm_criterion",
]
