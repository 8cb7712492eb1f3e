"""Three classes: an LS-SVM, one machine per class against the rest, exact closed-form CV.

Run: python examples/multiclass.py  (about 2 s)
"""

from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelcv import KernelSearchCV
from kernelcv.estimators import LSSVMClassifier

X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, stratify=y, random_state=0)

search = KernelSearchCV(
    make_pipeline(StandardScaler(), LSSVMClassifier(multiclass="ovr")),
    {"lssvmclassifier__gamma": [2.0**k for k in range(-10, 2)],
     "lssvmclassifier__C": [2.0**k for k in range(-2, 11)]},
    scoring="balanced_accuracy", cv=5)
search.fit(X_train, y_train)

print("best parameters:", search.best_params_)
print(f"CV balanced accuracy: {search.best_score_:.4f}")
print(f"test balanced accuracy: {search.score(X_test, y_test):.4f}")
