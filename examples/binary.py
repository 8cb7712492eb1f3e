"""Binary classification: tune an L2-SVM (squared hinge) by ROC AUC, as GridSearchCV would.

Run: python examples/binary.py  (about 5 s)
"""

from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelcv import KernelSearchCV
from kernelcv.estimators import L2SVMClassifier

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, stratify=y, random_state=0)

search = KernelSearchCV(
    make_pipeline(StandardScaler(), L2SVMClassifier()),
    {"l2svmclassifier__gamma": [2.0**k for k in range(-10, 1)],
     "l2svmclassifier__C": [2.0**k for k in range(-2, 9)]},
    scoring="roc_auc", cv=5)
search.fit(X_train, y_train)

print("best parameters:", search.best_params_)
print(f"CV ROC AUC: {search.best_score_:.4f}")
print(f"test ROC AUC: {search.score(X_test, y_test):.4f}")
print(f"test accuracy: {(search.predict(X_test) == y_test).mean():.4f}")
