"""Regression: kernel ridge regression with KernelRidge's alpha grid, scored by R^2.

Run: python examples/regression.py  (about 3 s)
"""

from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelcv import KernelSearchCV
from kernelcv.estimators import KernelRidgeRegressor

X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
offset = y_train.mean()  # kernel ridge regression has no intercept: centre the targets

search = KernelSearchCV(
    make_pipeline(StandardScaler(), KernelRidgeRegressor()),
    {"kernelridgeregressor__gamma": [2.0**k for k in range(-12, 1)],
     "kernelridgeregressor__alpha": [10.0**k for k in range(-3, 3)]},
    scoring="r2", cv=5)
search.fit(X_train, y_train - offset)

print("best parameters:", search.best_params_)
print(f"CV R^2: {search.best_score_:.4f}")
print(f"test R^2: {search.score(X_test, y_test - offset):.4f}")
