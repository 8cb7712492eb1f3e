"""A demo data set and reproducible synthetic problems.

Re-exported by :mod:`kernelcv.reading.files`.
"""

from __future__ import annotations

import numpy as np

from .exceptions import KernelCVError

__all__ = ["load_demo_data", "make_synthetic"]


def load_demo_data():
    """The Wisconsin breast-cancer data, ready for a binary classifier.

    The data ship with scikit-learn (:func:`sklearn.datasets.load_breast_cancer`), so
    nothing is downloaded. There are 569 samples with 30 features.

    Returns
    -------
    X : numpy.ndarray of float64, shape (569, 30)
        Each feature standardised to mean 0 and standard deviation 1.
    y : numpy.ndarray of float64, shape (569,)
        -1 for malignant, +1 for benign.
    """
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    X = np.asarray(bunch.data, dtype=np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.where(bunch.target == 1, 1.0, -1.0)
    return X, y


def make_synthetic(n_samples, n_features=10, task="classification", noise=None,
                   random_state=None):
    """A reproducible synthetic problem for trying out and testing the criteria.

    Parameters
    ----------
    n_samples : int
        Number of samples (at least 2).
    n_features : int, default 10
        Number of features (at least 1; at least 5 for regression).
    task : {"classification", "regression"}, default "classification"
        ``"classification"``: :func:`sklearn.datasets.make_classification` with half of
        the features (at least one) informative and the rest pure noise, labels -1/+1.
        ``"regression"``: Friedman's problem #1 (:func:`sklearn.datasets.make_friedman1`):
        features uniform on [0, 1], target
        ``10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + noise``; further features
        do not affect the target.
    noise : float, optional
        Classification: fraction of labels flipped at random (default 0.05).
        Regression: standard deviation of the Gaussian noise on the target (default 1.0).
    random_state : int, numpy.random.Generator/RandomState or None
        Seed; the same seed gives the same data.

    Returns
    -------
    X : numpy.ndarray of float64, shape (n_samples, n_features)
    y : numpy.ndarray of float64, shape (n_samples,)
        -1/+1 labels or real targets.

    Raises
    ------
    KernelCVError
        For an unknown task or out-of-range sizes or noise.
    """
    from sklearn.datasets import make_classification, make_friedman1

    n_samples = _positive_int("n_samples", n_samples, minimum=2)
    n_features = _positive_int("n_features", n_features, minimum=1)
    if task == "classification":
        noise = 0.05 if noise is None else float(noise)
        if not 0.0 <= noise <= 1.0:
            raise KernelCVError(
                f"noise must be a fraction of flipped labels in [0, 1], got {noise}")
        informative = max(1, n_features // 2)
        X, y = make_classification(
            n_samples=n_samples, n_features=n_features, n_informative=informative,
            n_redundant=0, n_repeated=0, n_classes=2,
            n_clusters_per_class=1 if informative < 2 else 2,
            flip_y=noise, random_state=random_state)
        return X.astype(np.float64), np.where(y == 1, 1.0, -1.0)
    if task == "regression":
        if n_features < 5:
            raise KernelCVError(
                f"the regression problem (Friedman #1) needs n_features >= 5, got {n_features}")
        noise = 1.0 if noise is None else float(noise)
        if not noise >= 0.0:
            raise KernelCVError(f"noise must be a non-negative standard deviation, got {noise}")
        X, y = make_friedman1(n_samples=n_samples, n_features=n_features, noise=noise,
                              random_state=random_state)
        return X.astype(np.float64), y.astype(np.float64)
    raise KernelCVError(f"task must be 'classification' or 'regression', got {task!r}")


def _positive_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise KernelCVError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
