"""scikit-learn estimators of the hypothetical criterion: conformance, independent refits,
prediction on new objects, Pipeline and GridSearchCV."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from kernelcv.estimators._hypothetical import (
    EnetSVMClassifier,
    HypotheticalRidgeCV,
    RelevanceSVMClassifier,
)
from kernelcv.exceptions import KernelCVError
from kernelcv.hypothetical import enet_svm_path, fit_enet_svm, relevance_path
from kernelcv.hypothetical.relevance import make_kernels


@parametrize_with_checks([HypotheticalRidgeCV(), EnetSVMClassifier(n_mus=4),
                          RelevanceSVMClassifier(n_mus=3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks([RelevanceSVMClassifier(kernels=("rbf:0.1", "laplace"), n_mus=3),
                          EnetSVMClassifier(loo=True, n_mus=3)])
def test_sklearn_compatible_multi_kernel_and_loo(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------------------


def _classes(seed, n=50, p=6, informative=2, shift=1.3):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((n, p))
    X[:, :informative] += shift * y[:, None]
    return X, y


def _scipy_squared_hinge(X, y, C):
    """min ||a||^2 + C sum max(0, 1 - y (Xa + b))^2 by L-BFGS with the analytic gradient."""
    p = X.shape[1]

    def fun(w):
        xi = np.maximum(0.0, 1.0 - y * (X @ w[:p] + w[p]))
        g = -2.0 * C * y * xi
        return w[:p] @ w[:p] + C * xi @ xi, np.append(X.T @ g + 2.0 * w[:p], g.sum())

    res = minimize(fun, np.zeros(p + 1), jac=True, method="L-BFGS-B",
                   options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 20000})
    return res.x[:p], res.x[p]


def test_ridge_cv_path_and_refit_match_sklearn_ridge():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    y = X @ np.array([1.0, -2.0, 0.0, 0.0, 0.5]) + 3.0 + rng.standard_normal(40)
    lams = [0.01, 0.1, 1.0, 10.0, 100.0]
    est = HypotheticalRidgeCV(lams=lams, noise_var=0.5).fit(X, y)
    Z = np.column_stack([X, np.ones(40)])
    expected, loo = [], []
    for lam in lams:
        model = Ridge(alpha=lam).fit(X, y)  # free intercept, like ours
        B = lam * np.diag([1.0] * 5 + [0.0])
        hat = Z @ np.linalg.solve(Z.T @ Z + B, Z.T)
        expected.append(np.sum((y - model.predict(X)) ** 2) + np.trace(hat))
        errors = [y[i] - Ridge(alpha=lam).fit(np.delete(X, i, 0), np.delete(y, i))
                  .predict(X[i:i + 1])[0] for i in range(40)]
        loo.append(np.mean(np.square(errors)))  # brute-force LOO
    np.testing.assert_allclose(est.criterion_path_, expected, rtol=1e-10)
    np.testing.assert_allclose(est.loo_path_, loo, rtol=1e-9)
    assert est.lam_ == lams[int(np.argmin(expected))]
    reference = Ridge(alpha=est.lam_).fit(X, y)
    np.testing.assert_allclose(est.coef_, reference.coef_, atol=1e-10)
    assert est.intercept_ == pytest.approx(reference.intercept_, abs=1e-10)
    by_loo = HypotheticalRidgeCV(lams=lams, select="loo").fit(X, y)
    assert by_loo.lam_ == lams[int(np.argmin(loo))]


def test_ridge_cv_auto_noise_var_is_mallows_cp():
    """Default ``noise_var="auto"``: s2 = RSS / (n - p - 1) of the OLS fit with intercept."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 5))
    y = X @ np.array([1.0, -2.0, 0.0, 0.0, 0.5]) + 3.0 + 2.0 * rng.standard_normal(40)
    lams = [0.01, 0.1, 1.0, 10.0, 100.0]
    est = HypotheticalRidgeCV(lams=lams).fit(X, y)
    ols = LinearRegression().fit(X, y)
    s2 = np.sum((y - ols.predict(X)) ** 2) / (40 - 6)
    assert est.noise_var_ == pytest.approx(s2, rel=1e-10)
    Z = np.column_stack([X, np.ones(40)])
    expected = []
    for lam in lams:
        B = lam * np.diag([1.0] * 5 + [0.0])
        hat = Z @ np.linalg.solve(Z.T @ Z + B, Z.T)
        rss = np.sum((y - Ridge(alpha=lam).fit(X, y).predict(X)) ** 2)
        expected.append(rss + 2 * s2 * np.trace(hat))
    np.testing.assert_allclose(est.criterion_path_, expected, rtol=1e-10)


def test_enet_classifier_matches_path_and_independent_retrain():
    X, y = _classes(1)
    labels = np.where(y > 0, "yes", "no")
    est = EnetSVMClassifier(n_mus=8, C=1.0).fit(X, labels)
    path = enet_svm_path(X, y, C=1.0, n_mus=8)
    assert est.mu_ == path["best_mu"] and est.loo_path_ is None
    assert list(est.relevant_features_) == path["best_relevant"]
    assert {0, 1} <= set(est.relevant_features_)
    np.testing.assert_allclose(est.criterion_path_, path["criterion"])
    # the kept machine is the plain squared-hinge SVM retrained on the relevant features
    rel = est.relevant_features_
    a, b = _scipy_squared_hinge(X[:, rel], y, 1.0)
    np.testing.assert_allclose(est.coef_[rel], a, atol=1e-5)
    assert est.intercept_ == pytest.approx(b, abs=1e-5)
    assert np.all(np.delete(est.coef_, rel) == 0)
    X_new = np.random.default_rng(2).standard_normal((25, X.shape[1]))
    f = X_new[:, rel] @ a + b
    np.testing.assert_allclose(est.decision_function(X_new), f, atol=1e-4)
    assert list(est.predict(X_new)) == list(np.where(f >= 0, "yes", "no"))
    by_loo = EnetSVMClassifier(n_mus=8, select="loo").fit(X, labels)
    assert by_loo.mu_ == by_loo.mus_[np.argmin(by_loo.loo_path_)]
    np.testing.assert_allclose(by_loo.criterion_path_, path["criterion"])


def test_loo_path_is_exact_leave_one_out():
    """loo_path_ against n cold-started refits (elastic net, then retrain) by hand."""
    X, y = _classes(3, n=24, p=4)
    mu = 3.0
    est = EnetSVMClassifier(mus=[mu], loo=True).fit(X, y)
    wrong = 0
    for i in range(len(y)):
        Xi, yi = np.delete(X, i, 0), np.delete(y, i)
        rel = np.flatnonzero(fit_enet_svm(Xi, yi, mu, 1.0)[0])
        a, b = _scipy_squared_hinge(Xi[:, rel], yi, 1.0)
        wrong += int(y[i] * (X[i, rel] @ a + b) <= 0)
    assert est.loo_path_[0] == pytest.approx(wrong / len(y))


def test_relevance_classifier_predicts_new_objects_from_retained_ones():
    X, y = _classes(4, n=40, p=3, informative=1)
    X_new = np.random.default_rng(5).standard_normal((15, 3))
    specs = ("rbf:0.2", "rbf:2", "laplace:0.5", "poly:2")
    est = RelevanceSVMClassifier(kernels=specs, n_mus=6).fit(X, y)
    kernels = make_kernels(specs, 3)
    sims = [k(X, X) for k in kernels]
    path = relevance_path(sims, y, n_mus=6)
    assert est.mu_ == path["best_mu"]
    assert list(est.relevant_objects_) == path["best_objects"]
    assert list(est.relevant_kernels_) == path["best_kernels"]
    assert 0 < len(est.relevant_objects_) < 40
    np.testing.assert_array_equal(est.objects_, X[est.relevant_objects_])
    # manual secondary features of the new objects against every training object
    full_train = np.hstack(sims)
    full_new = np.hstack([k(X_new, X) for k in kernels])
    columns = np.asarray(path["best_relevant"])
    np.testing.assert_array_equal(columns, est.relevant_pairs_[:, 0] * 40
                                  + est.relevant_pairs_[:, 1])
    a, b = _scipy_squared_hinge(full_train[:, columns], y, 1.0)
    np.testing.assert_allclose(est.coef_, a, atol=1e-5)
    np.testing.assert_allclose(est.decision_function(X_new),
                               full_new[:, columns] @ a + b, atol=1e-4)
    assert est.score(X, y) > 0.8


def test_relevance_classifier_with_every_object_removed_predicts_one_class():
    X, y = _classes(6, n=20, p=2)
    est = RelevanceSVMClassifier(mus=[1e6]).fit(X, y)
    assert est.relevant_objects_.size == 0 and est.coef_.size == 0
    assert est.path_["all_removed"] == [True]
    assert len(set(est.predict(X))) == 1


@pytest.mark.parametrize("kernels, match", [(("cosine",), "unknown kernel"),
                                            (("rbf:x",), "cannot read"),
                                            (("rbf:-1",), "gamma must be"),
                                            (({"kernel": "rbf", "width": 1},), "unknown kernel "
                                                                                "parameter")])
def test_relevance_classifier_rejects_bad_kernels(kernels, match):
    X, y = _classes(7, n=10, p=2)
    with pytest.raises(KernelCVError, match=match):
        RelevanceSVMClassifier(kernels=kernels).fit(X, y)


def test_estimators_reject_bad_parameters_and_multiclass():
    X, y = _classes(8, n=12, p=2)
    with pytest.raises(ValueError, match="mu must be"):
        EnetSVMClassifier(mus=[-1.0]).fit(X, y)
    with pytest.raises(ValueError, match="'C' parameter"):
        EnetSVMClassifier(C=0.0).fit(X, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        RelevanceSVMClassifier().fit(X, np.arange(12) % 3)


def test_pipeline_and_grid_search():
    X, y = _classes(9, n=60, p=5)
    X = 10.0 * X + 50.0  # badly scaled: the scaler matters for the RBF similarities
    pipe = make_pipeline(StandardScaler(), RelevanceSVMClassifier(n_mus=4))
    grid = GridSearchCV(pipe, {"relevancesvmclassifier__kernels": [("rbf:0.1",),
                                                                   ("rbf:1", "laplace")],
                               "relevancesvmclassifier__C": [0.5, 2.0]}, cv=3)
    grid.fit(X, y)
    best = grid.best_params_
    by_hand = make_pipeline(StandardScaler(), RelevanceSVMClassifier(n_mus=4)).set_params(
        **best).fit(X, y)
    np.testing.assert_allclose(grid.decision_function(X), by_hand.decision_function(X))
    assert grid.score(X, y) > 0.8
    enet = GridSearchCV(make_pipeline(StandardScaler(), EnetSVMClassifier(n_mus=5)),
                        {"enetsvmclassifier__C": [0.1, 1.0]}, cv=3).fit(X, y)
    assert enet.best_score_ > 0.7
    ridge = GridSearchCV(HypotheticalRidgeCV(), {"noise_var": [0.1, 1.0]}, cv=3).fit(X, y)
    assert ridge.best_estimator_.lam_ > 0


def test_relevance_path_checks_the_memory_budget():
    from kernelcv.exceptions import MemoryBudgetError

    X, y = _classes(10, n=20, p=2)
    sims = [np.eye(20), np.eye(20)]
    with pytest.raises(MemoryBudgetError):
        relevance_path(sims, y, mus=[1.0], memory_budget=1000)
