"""scikit-learn estimators that choose a structural parameter by the hypothetical criterion.

* :class:`HypotheticalRidgeCV` — ridge regression with a free intercept; ``lam`` is chosen
  along a path by ``RSS + 2 s2 Tr H`` (or by the closed-form LOO / GCV).
* :class:`EnetSVMClassifier` — the elastic-net squared-hinge SVM; ``mu`` is chosen along a
  path by criterion (43) (or by exact LOO) and the SVM is retrained on the relevant
  features.
* :class:`RelevanceSVMClassifier` — the same machine on secondary features
  ``S_k(x, x_i)`` from one or several kernels, so ``mu`` selects relevant training
  objects and kernels; predictions need only the retained objects.

The work is done by :mod:`kernelcv.hypothetical`; these classes validate the input, map
labels and store what the path chose (everything learned ends in ``_``).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..hypothetical.elastic_net import enet_svm_path
from ..hypothetical.relevance import (
    kernel_similarities,
    make_kernels,
    relevance_path,
    relevant_features,
)
from ..hypothetical.ridge import DEFAULT_LAMS, intercept_design, ridge_fit, ridge_path

__all__ = ["EnetSVMClassifier", "HypotheticalRidgeCV", "RelevanceSVMClassifier"]

_POSITIVE = Interval(Real, 0, np.inf, closed="neither")
_GRID = [None, "array-like"]


def _pick(path, select, loo_key):
    """Index of the chosen path value: the criterion's minimum or the LOO minimum."""
    values = path["criterion"] if select == "criterion" else path[loo_key]
    return int(np.argmin(values))


class HypotheticalRidgeCV(RegressorMixin, BaseEstimator):
    """Ridge regression whose ``lam`` is chosen by the hypothetical criterion.

    The model is ``y ~ X a + b`` with ``(a, b) = argmin ||y - X a - b||^2 + lam ||a||^2``
    (the intercept is not penalised; scikit-learn's ``Ridge(alpha=lam)``). For every
    ``lam`` of ``lams`` it evaluates ``J = RSS + 2 s2 Tr H`` with the hat matrix ``H`` of
    ``Z = [X, 1]`` and ``B = lam diag(1, ..., 1, 0)`` (Theorem 3 of Chernousova et al.), the
    closed-form LOO MSE and GCV, and refits at the chosen ``lam``.
    Cost O(n p^2 + p^3) per ``lam`` plus one O(n p^2) Gram matrix.

    Parameters
    ----------
    lams : array-like of float >= 0, default None
        The path; None means 13 values ``10^-3 .. 10^3``.
    noise_var : "auto" or float > 0, default "auto"
        ``s2`` of the penalty. ``"auto"`` is Mallows' Cp: ``s2 = RSS / (n - p - 1)`` of the
        least-squares fit on ``Z`` (see :func:`kernelcv.hypothetical.ridge_path`), so the
        choice of ``lam`` does not depend on the units of ``y``. A number fixes ``s2``;
        ``0.5`` is the paper's unit-scaled form, sensible only when the noise variance is
        about 0.5 in the units of ``y``.
    select : {"criterion", "loo", "gcv"}, default "criterion"
        What chooses ``lam``: the hypothetical criterion, the exact LOO MSE or GCV.

    Attributes
    ----------
    lam_ : float, the chosen ``lam``.
    noise_var_ : float, the ``s2`` used (estimated when ``noise_var="auto"``).
    coef_ : (p,) weights; intercept_ : float.
    lams_, criterion_path_, loo_path_, gcv_path_, effective_dimension_path_ : (L,) arrays
        The path (``loo_path_`` is the closed-form LOO MSE).
    """

    _parameter_constraints: dict = {
        "lams": _GRID,
        "noise_var": [_POSITIVE, StrOptions({"auto"})],
        "select": [StrOptions({"criterion", "loo", "gcv"})],
    }

    def __init__(self, lams=None, noise_var="auto", select="criterion"):
        self.lams = lams
        self.noise_var = noise_var
        self.select = select

    def fit(self, X, y):
        """Evaluate the path and refit at the chosen ``lam``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features); y : array-like (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        Z, B0 = intercept_design(X)
        path = ridge_path(Z, y.astype(np.float64),
                          DEFAULT_LAMS if self.lams is None else np.asarray(self.lams, float),
                          B0=np.diag(B0), noise_var=self.noise_var)
        self.noise_var_ = float(path["noise_var"])
        key = {"criterion": "criterion", "loo": "loo_mse", "gcv": "gcv"}[self.select]
        best = int(np.argmin(path[key]))
        self.lams_ = path["lams"]
        self.criterion_path_ = path["criterion"]
        self.loo_path_ = path["loo_mse"]
        self.gcv_path_ = path["gcv"]
        self.effective_dimension_path_ = path["effective_dimension"]
        self.lam_ = float(self.lams_[best])
        w, _ = ridge_fit(Z, y, self.lam_ * B0)
        self.coef_, self.intercept_ = w[:-1], float(w[-1])
        return self

    def predict(self, X):
        """``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


class _BinarySVMBase(ClassifierMixin, BaseEstimator):
    """Label handling and the prediction rule shared by the two elastic-net classifiers."""

    _parameter_constraints: dict = {
        "mus": _GRID,
        "n_mus": [Interval(Integral, 1, None, closed="left")],
        "C": [_POSITIVE],
        "noise_var": [_POSITIVE],
        "loo": ["boolean"],
        "select": [StrOptions({"criterion", "loo"})],
    }

    def _validate_xy(self, X, y):
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(
                f"Only binary classification is supported. {type(self).__name__} is a "
                f"two-class machine but y has {classes.size} class(es); wrap it in "
                "sklearn.multiclass.OneVsRestClassifier for more")
        self.classes_ = classes
        X = X.toarray() if sp.issparse(X) else X
        return X, np.where(y == classes[1], 1.0, -1.0)

    def _store_path(self, path):
        best = _pick(path, self.select, "loo_error")
        self.path_ = path
        self.mus_ = np.asarray(path["mus"])
        self.criterion_path_ = np.asarray(path["criterion"])
        self.loo_path_ = None if path["loo_error"] is None else np.asarray(path["loo_error"])
        self.n_relevant_path_ = np.asarray(path["n_relevant"])
        self.mu_ = float(self.mus_[best])
        self.intercept_ = float(path["intercept"][best])
        return best

    def predict(self, X):
        """Labels: ``classes_[1]`` where the decision value is >= 0, else ``classes_[0]``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) >= 0).astype(np.intp)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags


class EnetSVMClassifier(_BinarySVMBase):
    """Elastic-net squared-hinge SVM whose ``mu`` is chosen by criterion (43).

    For each ``mu`` of a decreasing path (warm starts) it solves
    ``min ||a||^2 + mu ||a||_1 + C sum_j max(0, 1 - y_j (x_j'a + b))^2``, retrains the
    plain squared-hinge SVM on the relevant features ``F = {i : a_i != 0}`` (eq. 40) and
    scores it by ``sum xi^2 + 2 s2 d_S`` (no refits). Two classes only.
    Cost: one warm-started fit and one retrain per ``mu``; ``loo=True`` multiplies it by n.

    Parameters
    ----------
    mus : array-like of float >= 0, default None
        The path; None means ``n_mus`` values from ``mu_max`` (every feature removed)
        down to ``mu_max / 1000``.
    n_mus : int, default 12
    C : float > 0, default 1.0
    noise_var : float > 0, default 0.5 (the paper's form)
    loo : bool, default False
        Also compute the exact leave-one-out error along the path (``loo_path_``).
    select : {"criterion", "loo"}, default "criterion"
        What chooses ``mu``; ``"loo"`` computes the LOO path whatever ``loo`` says.

    Attributes
    ----------
    mu_ : float; relevant_features_ : int array; coef_ : (p,) (zero off the relevant set)
    intercept_ : float; classes_ : (2,) labels (``classes_[1]`` is the +1 class)
    mus_, criterion_path_, n_relevant_path_ : arrays along the path (``mus_`` decreasing)
    loo_path_ : array or None; path_ : the full report of
    :func:`kernelcv.hypothetical.enet_svm_path`.
    """

    def __init__(self, mus=None, n_mus=12, C=1.0, noise_var=0.5, loo=False,
                 select="criterion"):
        self.mus = mus
        self.n_mus = n_mus
        self.C = C
        self.noise_var = noise_var
        self.loo = loo
        self.select = select

    def fit(self, X, y):
        """Run the ``mu`` path and keep the retrained SVM of the chosen ``mu``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two classes

        Returns
        -------
        self : object
        """
        X, y = self._validate_xy(X, y)
        path = enet_svm_path(X, y, mus=self.mus, C=self.C, noise_var=self.noise_var,
                             loo=self.loo or self.select == "loo", n_mus=self.n_mus)
        best = self._store_path(path)
        self.relevant_features_ = np.asarray(path["relevant"][best], dtype=np.intp)
        self.coef_ = np.zeros(X.shape[1])
        self.coef_[self.relevant_features_] = path["coef"][best]
        return self

    def decision_function(self, X):
        """``X @ coef_ + intercept_`` (positive means ``classes_[1]``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        decision : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return np.asarray(X @ self.coef_).ravel() + self.intercept_


class RelevanceSVMClassifier(_BinarySVMBase):
    """Relevance-object machine: the elastic-net SVM on kernel similarities to the objects.

    Each kernel ``S_k`` and training object ``x_i`` give the secondary feature
    ``S_k(x, x_i)``; the elastic-net SVM on the ``m n`` columns keeps relevant
    (kernel, object) pairs, ``mu`` is chosen by criterion (43) along a path, and a new
    object is classified by ``f(x) = sum_{(k,i) in F} a_{k,i} S_k(x, x_i) + b`` — only the
    retained objects are stored. Two classes only.
    Cost: O(m n^2 d) for the similarities, then the path on an ``n x m n`` design
    (O(m n^2) memory); prediction O(|F| d) per object.

    Parameters
    ----------
    kernels : sequence, default None
        Kernels, each a name with an optional number (``"rbf:0.5"``, ``"laplace:0.1"``,
        ``"poly:2"`` for the degree, ``"linear"``; ``gamma`` defaults to 1/n_features),
        a dict (``{"kernel": "rbf", "gamma": 0.5}``) or a :class:`kernelcv.kernels.Kernel`.
        None means ``("rbf",)``.
    mus, n_mus, C, noise_var, loo, select
        As in :class:`EnetSVMClassifier`.

    Attributes
    ----------
    kernels_ : list of Kernel; mu_ : float; coef_ : (|F|,) weights of the retained pairs
    intercept_ : float; relevant_pairs_ : (|F|, 2) int array of (kernel, training object)
    relevant_objects_ : sorted training-object indices used by some pair
    relevant_kernels_ : sorted kernel indices used by some pair
    objects_ : (len(relevant_objects_), d) the retained training objects
    mus_, criterion_path_, n_relevant_path_, loo_path_, path_ : as in EnetSVMClassifier
    """

    _parameter_constraints: dict = {**_BinarySVMBase._parameter_constraints,
                                    "kernels": [None, "array-like", str, dict]}

    def __init__(self, kernels=None, mus=None, n_mus=12, C=1.0, noise_var=0.5, loo=False,
                 select="criterion"):
        self.kernels = kernels
        self.mus = mus
        self.n_mus = n_mus
        self.C = C
        self.noise_var = noise_var
        self.loo = loo
        self.select = select

    def fit(self, X, y):
        """Build the secondary features, run the ``mu`` path, keep the relevant objects.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two classes

        Returns
        -------
        self : object
        """
        X, y = self._validate_xy(X, y)
        self.kernels_ = make_kernels(("rbf",) if self.kernels is None else self.kernels,
                                     X.shape[1])
        sims = kernel_similarities(X, self.kernels_)
        path = relevance_path(sims, y, mus=self.mus, C=self.C, noise_var=self.noise_var,
                              loo=self.loo or self.select == "loo", n_mus=self.n_mus)
        best = self._store_path(path)
        n = X.shape[0]
        columns = np.asarray(path["relevant"][best], dtype=np.intp)
        pairs = np.column_stack([columns // n, columns % n]).astype(np.intp)
        self.relevant_pairs_ = pairs
        self.relevant_objects_ = np.unique(pairs[:, 1])
        self.relevant_kernels_ = np.unique(pairs[:, 0])
        self.objects_ = X[self.relevant_objects_].copy()
        self._local_pairs = np.column_stack(
            [pairs[:, 0], np.searchsorted(self.relevant_objects_, pairs[:, 1])])
        self.coef_ = np.asarray(path["coef"][best], dtype=np.float64)
        return self

    def decision_function(self, X):
        """``sum_{(k,i)} coef_ S_k(x, x_i) + intercept_`` over the retained pairs.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        decision : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        X = X.toarray() if sp.issparse(X) else X
        if self.coef_.size == 0:
            return np.full(X.shape[0], self.intercept_)
        features = relevant_features(X, self.kernels_, self.objects_, self._local_pairs)
        return features @ self.coef_ + self.intercept_
