"""KernelSearchCV.predict_proba: calibrated on the chosen candidate's out-of-fold values.

Oracles: the calibration's scale is the maximum-likelihood one (scikit-learn's
LogisticRegression without intercept on the same 1-D values), the out-of-fold values are
those of an independent refit CV (cross_val_predict of the chosen estimator on the same
folds), and the most probable class is always the predicted one.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import PredefinedSplit, cross_val_predict
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kernelcv import KernelSearchCV
from kernelcv.estimators import HuberSVMClassifier
from kernelcv.machines.calibration import fit_score_scale


def test_the_binary_scale_is_the_maximum_likelihood_one():
    rng = np.random.default_rng(0)
    f = rng.normal(size=400) * 2
    codes = (rng.random(400) < 1 / (1 + np.exp(-1.7 * f))).astype(int)
    found = fit_score_scale(f, codes)
    reference = LogisticRegression(fit_intercept=False, C=1e12, tol=1e-12,
                                   max_iter=10_000).fit(f[:, None], codes)
    assert found.scale == pytest.approx(float(reference.coef_[0, 0]), rel=1e-5)


@pytest.mark.parametrize("method", [None, "spectral", "exact"])
def test_binary_probabilities_agree_with_predict_and_come_from_out_of_fold_values(method):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X[:150])
    y = y[:150]
    folds = np.arange(150) % 5
    grid = {"C": [1.0, 10.0], "gamma": [0.01, 0.05]}
    search = KernelSearchCV(SVC(), grid, cv=PredefinedSplit(folds), method=method).fit(X, y)
    proba = search.predict_proba(X)
    assert proba.shape == (150, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(search.classes_[np.argmax(proba, axis=1)], search.predict(X))
    # the scale was fitted on the chosen estimator's own refit CV values
    chosen = search.best_estimator_
    values = cross_val_predict(type(chosen)(**chosen.get_params()), X, y,
                               cv=PredefinedSplit(folds), method="decision_function")
    reference = fit_score_scale(values, y)
    assert search.calibration_.scale == pytest.approx(reference.scale, rel=1e-4)
    assert np.all(np.isfinite(search.predict_log_proba(X)) | (proba == 0))


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
def test_multiclass_probabilities_agree_with_predict(multiclass):
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    search = KernelSearchCV(HuberSVMClassifier(multiclass=multiclass),
                            {"C": [1.0, 10.0], "gamma": [0.1, 0.5]}, cv=5).fit(X, y)
    proba = search.predict_proba(X)
    assert proba.shape == (150, 3) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(search.classes_[np.argmax(proba, axis=1)], search.predict(X))
    assert search.calibration_.log_loss < np.log(3)  # better than the uniform guess


def test_the_pair_scale_repairs_a_disagreeing_row_by_a_swap():
    from kernelcv.machines.calibration import PairScale

    # 3 classes, pairs (0,1), (0,2), (1,2): class 1 wins two votes by a hair, class 2
    # has a large summed value; with a dominant value scale class 2 would be likeliest
    values = np.array([[0.01, 5.0, -0.01]])
    scale = PairScale(vote_scale=0.1, value_scale=2.0, n_classes=3, log_loss=0.0)
    p = scale.probabilities(values)
    assert np.argmax(p) == 1 and np.isclose(p.sum(), 1.0)
    raw = np.exp(0.1 * np.array([0, 2, 1]) + 2.0 * np.array([-5.01, 0.02, 4.99]))
    assert np.isclose(p[0, 1], raw.max() / raw.sum())  # the two entries swapped


def test_regressors_have_no_probabilities():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    search = KernelSearchCV("krr", {"lam": [1e-2], "gamma": [0.5]}, cv=4).fit(X, X[:, 0])
    with pytest.raises(AttributeError, match="classifier"):
        search.predict_proba(X)
    # as scikit-learn's searches answer: no attribute where there are no probabilities
    assert not hasattr(search, "predict_proba") and not hasattr(search, "predict_log_proba")


def test_probabilities_are_an_attribute_only_where_they_exist():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:200]
    y = y[:200]
    grid = {"gamma": [0.01, 0.1], "C": [1.0, 10.0]}
    unfitted = KernelSearchCV("svm", grid, cv=4)
    assert hasattr(unfitted, "predict_proba")  # cannot know before fit
    assert hasattr(unfitted.fit(X, y), "predict_proba")
    features = KernelSearchCV("svm", grid, cv=4, method="rff").fit(X, y)
    assert not hasattr(features, "predict_proba")
    with pytest.raises(AttributeError, match="not method='rff'"):
        features.predict_log_proba(X)


def test_uninformative_scores_still_put_the_predicted_class_on_top():
    # a fitted scale of 0 (noise scores) gave uniform rows whose first arg-max was not
    # the predicted class: 63 of 300 one-vs-one rows disagreed
    from kernelcv.machines.calibration import fit_pair_scale, fit_score_scale
    from kernelcv.machines.multiclass import predict_codes

    rng = np.random.default_rng(0)
    values = rng.normal(size=(300, 3))
    codes = rng.integers(0, 3, 300)
    pairs = fit_pair_scale(values, codes, 3)
    p = pairs.probabilities(values)
    assert np.array_equal(p.argmax(axis=1), predict_codes(values, 3, "ovo"))
    assert np.allclose(p.sum(axis=1), 1.0)
    f = rng.normal(size=300)
    anti = fit_score_scale(f, (f < 0).astype(int))  # scale 0: probabilities 1/2
    assert anti.scale == pytest.approx(0.0, abs=1e-6)
    assert np.array_equal(anti.probabilities(f).argmax(axis=1), (f > 0).astype(int))
    ovr = fit_score_scale(values, codes)
    assert np.array_equal(ovr.probabilities(values).argmax(axis=1), values.argmax(axis=1))


def test_the_log_softmax_is_scipys():
    from scipy.special import log_softmax

    from kernelcv.machines.calibration import _log_softmax

    z = np.random.default_rng(0).normal(scale=30.0, size=(50, 4))
    assert np.allclose(_log_softmax(z), log_softmax(z, axis=1), rtol=1e-12, atol=1e-12)
