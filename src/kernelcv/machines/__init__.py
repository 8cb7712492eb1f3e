"""The learning machines: a loss, a task and whether there is an intercept.

All machines solve ``min (1/n) sum_j loss(y_j, f(x_j)) + lam ||f||_H^2`` with
``f = K alpha (+ b)``, by :func:`kernelcv.machines.solver.fit_kernel_machine`.

=========  ===========================  ==============  =====================================
name       loss                         task            scikit-learn counterpart
=========  ===========================  ==============  =====================================
``krr``    square                       regression      ``KernelRidge(alpha = n lam)``
``lssvm``  square on +-1 labels (+ b)   classification  (none; ridge classifier with kernel)
``l2svm``  squared hinge (+ b)          classification  squared-hinge SVM, ``C = 1/(2 n lam)``
``svm``    Huber-smoothed hinge (+ b)   classification  ``SVC(C = 1/(2 n lam))`` as width -> 0
``svr``    Huber eps-insensitive (+ b)  regression      ``SVR(C = 1/(2 n lam))`` as width -> 0
=========  ===========================  ==============  =====================================

The mapping to scikit-learn's ``C``: ``SVC`` minimises ``1/2 ||f||^2 + C sum_j loss_j``;
dividing by ``C n`` gives ``(1/n) sum_j loss_j + ||f||^2 / (2 C n)``, so ``lam = 1/(2 C n)``.

The intercept ``b`` is unregularised. ``lssvm``, ``l2svm``, ``svm`` and ``svr`` fit it by
default, as ``SVC`` and ``SVR`` do; ``fit_intercept=False`` gives the papers' bias-free
machines (``f = K alpha``). ``krr`` is always bias-free (``KernelRidge`` has no intercept).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import numpy as np

from ..exceptions import KernelCVError
from .libsvm_start import (
    LIBSVM_START_MIN_ROWS,
    LIBSVM_START_MIN_ROWS_IMPORTED,
    LIBSVM_START_MIN_ROWS_MULTICLASS,
    libsvm_start,
    supports_libsvm_start,
)
from .losses import HuberHingeLoss, HuberInsensitiveLoss, SquaredHingeLoss, SquareLoss
from .multiclass import check_strategy
from .solver import FitResult, fit_kernel_machine
from .weights import (
    RowWeights,
    WeightedLoss,
    loss_for_rows,
    normalise_class_weight,
    resolve_class_weight,
    unweighted,
)

MACHINES = ("krr", "lssvm", "l2svm", "svm", "svr")
CLASSIFIERS = ("lssvm", "l2svm", "svm")
# The machines with an optional intercept (fitted by default); krr is always bias-free.
INTERCEPT_MACHINES = ("lssvm", "l2svm", "svm", "svr")


@dataclass(frozen=True)
class Machine:
    """A learning machine: its name, loss, task and intercept setting.

    A machine fits one binary classifier (or one regressor) on a Gram matrix. For a
    classifier, ``multiclass`` names the scheme of binary machines used when the data
    have more than two classes (``"ovo"`` or ``"ovr"``, see
    :mod:`kernelcv.machines.multiclass`), and ``n_classes`` is the number of classes of
    the data it is cross-validated on (set by the search from the labels; above 2 the
    labels passed along are class codes ``0..k-1`` instead of +-1).

    ``class_weight`` is the caller's (None, ``"balanced"`` or ``(label, weight)`` pairs,
    see :mod:`kernelcv.machines.weights`); ``class_weights`` the weight of each class
    code once :meth:`for_labels` has seen the labels; ``sample_weight`` the rows' weights
    of a multiclass machine (:meth:`with_sample_weight`). A binary machine carries its
    weights in its loss (:class:`~kernelcv.machines.weights.WeightedLoss`); a multiclass
    one gives each binary machine its classes' and rows' weights (:meth:`problem_machine`).
    Where a subset of the rows is fitted, :meth:`take` narrows the sample weights to it.
    """

    name: str
    loss: object
    fit_intercept: bool = False
    multiclass: str = "ovo"
    n_classes: int = 2
    class_weight: object = None
    class_weights: tuple | None = None
    sample_weight: RowWeights | None = None

    def for_labels(self, mapping, y) -> Machine:
        """This machine for the labels of ``mapping`` (check_data's code -> label) and the
        codes ``y``: ``n_classes`` above two classes, the class weights resolved. O(n)."""
        machine = self
        if self.is_classifier and mapping is not None and len(mapping) > 2:
            machine = replace(machine, n_classes=len(mapping))
        if self.class_weight is None:
            return machine
        if not self.is_classifier:
            raise KernelCVError(f"class_weight is for classifiers; machine {self.name!r} is a "
                                "regressor")
        weights = resolve_class_weight(self.class_weight, mapping, y)
        base = unweighted(self.loss)
        if machine.is_multiclass:
            return replace(machine, loss=base, class_weights=weights)
        return replace(machine, loss=WeightedLoss(base, *weights), class_weights=weights)

    def with_sample_weight(self, sample_weight) -> Machine:
        """This machine (after :meth:`for_labels`) with one weight per row of the data it
        is fitted or cross-validated on (None: unchanged).

        The weights multiply the rows' loss terms, ``(1/n) sum_j s_j loss_j + lam ||f||^2``
        with ``n`` still counting rows, which is scikit-learn's ``C sum_j s_j loss_j +
        ||f||^2 / 2`` at the usual ``lam = 1 / (2 n C)`` (``alpha / n`` for KernelRidge).
        With lam fixed, a weight of 2 is therefore not the row given twice (that changes
        n); in C it is. O(n)."""
        if sample_weight is None:
            return self
        rows = RowWeights(np.asarray(sample_weight, dtype=np.float64))
        if self.is_multiclass:
            return replace(self, sample_weight=rows)
        loss = self.loss
        if isinstance(loss, WeightedLoss):
            return replace(self, loss=replace(loss, rows=rows))
        return replace(self, loss=WeightedLoss(loss, rows=rows))

    @property
    def row_weights(self):
        """The (n,) sample weights of the rows this machine is given, or None."""
        rows = self.sample_weight or getattr(self.loss, "rows", None)
        return None if rows is None else rows.values

    @property
    def row_weighted(self) -> bool:
        """Whether the machine has sample weights (then subsets need :meth:`take`)."""
        return self.row_weights is not None

    @property
    def weighted(self) -> bool:
        """Whether the machine has class or sample weights."""
        return self.class_weights is not None or self.row_weighted

    def take(self, rows) -> Machine:
        """This machine for the subset ``rows`` (indices or a mask) of its rows: the
        sample weights of those rows (no change without sample weights). O(len(rows))."""
        if not self.row_weighted:
            return self
        machine = replace(self, loss=loss_for_rows(self.loss, rows))
        if self.sample_weight is not None:
            machine = replace(machine, sample_weight=self.sample_weight.take(rows))
        return machine

    def problem_machine(self, problem) -> Machine:
        """The machine of one binary problem of a multiclass scheme
        (:class:`kernelcv.machines.multiclass.BinaryProblem`): with class weights, its
        loss weighs the positive class by its weight and the negative class (one-vs-one)
        or the rest (weight 1, one-vs-rest) likewise; with sample weights, the weights of
        the problem's rows; else this machine."""
        if not self.weighted:
            return self
        negative = positive = 1.0
        if self.class_weights is not None:
            negative = 1.0 if problem.negative is None else self.class_weights[problem.negative]
            positive = self.class_weights[problem.positive]
        rows = None
        if self.sample_weight is not None:
            rows = (self.sample_weight if problem.rows is None
                    else self.sample_weight.take(problem.rows))
        return replace(self, sample_weight=None,
                       loss=WeightedLoss(unweighted(self.loss), negative, positive, rows))

    @property
    def is_multiclass(self) -> bool:
        """More than two classes: labels are codes and every fit is per binary problem."""
        return self.n_classes > 2

    @property
    def is_classifier(self) -> bool:
        return self.name in CLASSIFIERS

    @property
    def metric(self) -> str:
        """The cross-validation error: ``"0-1"`` for classifiers, ``"mse"`` for regressors."""
        return "0-1" if self.is_classifier else "mse"

    def params(self) -> dict:
        """The machine's name and options, as reports record them.

        ``fit_intercept`` for every machine that has the option (all but ``krr``),
        ``huber_width`` for ``svm``/``svr``, ``epsilon`` for ``svr``.
        """
        out = {"machine": self.name}
        if self.name in INTERCEPT_MACHINES:
            out["fit_intercept"] = self.fit_intercept
        if self.name in ("svm", "svr"):
            out["huber_width"] = self.loss.width
        if self.name == "svr":
            out["epsilon"] = self.loss.epsilon
        if self.is_multiclass:
            out["multiclass"] = self.multiclass
        if self.class_weight is not None:
            out["class_weight"] = (self.class_weight if isinstance(self.class_weight, str)
                                   else {str(label): w for label, w in self.class_weight})
        return out

    def starts_from_libsvm(self, n_samples: int, start: str = "auto",
                           warm: bool = False) -> bool:
        """Whether :meth:`fit` with this ``start`` begins at LIBSVM's solution for a
        training set of ``n_samples`` rows (then a caller's warm start is not used).

        ``"auto"``: from :data:`LIBSVM_START_MIN_ROWS` rows (a cold fit from
        :data:`LIBSVM_START_MIN_ROWS_IMPORTED` rows once sklearn.svm is imported); for
        the binary problems of a multiclass machine started cold (``warm`` False) from
        :data:`LIBSVM_START_MIN_ROWS_MULTICLASS` rows (see
        :mod:`kernelcv.machines.libsvm_start`)."""
        if start not in ("auto", "given", "libsvm"):
            raise KernelCVError(f"start must be 'auto', 'given' or 'libsvm', got {start!r}")
        if self.is_multiclass and not warm:
            threshold = LIBSVM_START_MIN_ROWS_MULTICLASS
        elif not warm and "sklearn.svm" in sys.modules:  # its import is paid already
            threshold = min(LIBSVM_START_MIN_ROWS, LIBSVM_START_MIN_ROWS_IMPORTED)
        else:
            threshold = LIBSVM_START_MIN_ROWS
        return supports_libsvm_start(self.loss) and (
            start == "libsvm" or (start == "auto" and n_samples >= threshold))

    def fit(self, K, y, lam, alpha0=None, intercept0=0.0, start="auto",
            **kwargs) -> FitResult:
        """Fit on the Gram matrix ``K`` (see :func:`fit_kernel_machine`).

        ``start`` chooses where the Newton solver begins: ``"given"`` at ``alpha0`` /
        ``intercept0`` (zeros by default); ``"libsvm"`` at LIBSVM's solution of the
        machine's dual for ``svm``/``svr`` (:mod:`.libsvm_start`; 1-3 Newton
        iterations instead of tens), else as ``"given"``; ``"auto"`` (default) is
        ``"libsvm"`` from :data:`LIBSVM_START_MIN_ROWS` rows (fewer for multiclass, see
        :meth:`starts_from_libsvm`), else ``"given"``. The
        optimum is the same from every start; only the cost differs.
        """
        if self.starts_from_libsvm(K.shape[0], start, warm=alpha0 is not None):
            found = libsvm_start(K, y, lam, self.loss, self.fit_intercept)
            if found is not None:
                alpha0, intercept0 = found
        return fit_kernel_machine(K, y, lam, self.loss, fit_intercept=self.fit_intercept,
                                  alpha0=alpha0, intercept0=intercept0, **kwargs)


def make_machine(name: str, huber_width: float = 0.01, epsilon: float = 0.1,
                 fit_intercept: bool | None = None, multiclass: str = "ovo",
                 class_weight=None) -> Machine:
    """Build a :class:`Machine` by name.

    Parameters
    ----------
    name : {"krr", "lssvm", "l2svm", "svm", "svr"}
        The machine (see the module's table).
    huber_width : float
        Half-width ``w`` of the smoothed band of ``svm``/``svr`` (the smoothed loss exceeds
        the hinge / eps-insensitive loss by at most ``w / 4``).
    epsilon : float
        Half-width of the insensitive tube of ``svr``.
    fit_intercept : bool or None
        Fit the unregularised intercept ``b`` in ``f = K alpha + b`` (the optimum then
        also has ``sum_j alpha_j = 0``). None (default): True for ``lssvm``, ``l2svm``,
        ``svm`` and ``svr`` (as scikit-learn's ``SVC``/``SVR``), False for ``krr``.
        False gives the papers' bias-free machines. True for ``krr`` is refused.
    multiclass : {"ovo", "ovr"}
        Classifiers: the binary machines used for more than two classes, one per pair
        of classes (default, as scikit-learn's ``SVC``: k(k-1)/2 small problems, stacked
        and solved together; in the multiclass benchmark as accurate as one-vs-rest and
        faster on most sets) or one per class against the rest; see
        :mod:`kernelcv.machines.multiclass`.
    class_weight : None, "balanced" or dict {label: weight}
        Classifiers: each class's loss terms times its weight, as ``SVC(class_weight=...)``
        (see :mod:`kernelcv.machines.weights`; resolved against the labels when the
        machine is fitted or cross-validated). Refused for ``krr`` and ``svr``.

    Returns
    -------
    Machine

    Raises
    ------
    KernelCVError
        For an unknown name or ``fit_intercept=True`` with ``krr``.
    """
    if name not in MACHINES:
        raise KernelCVError(f"unknown machine {name!r}; choose one of {', '.join(MACHINES)}")
    scheme = check_strategy(multiclass)
    weights = normalise_class_weight(class_weight)
    if weights is not None and name not in CLASSIFIERS:
        raise KernelCVError(f"class_weight is for the classifiers ({', '.join(CLASSIFIERS)}); "
                            f"machine {name!r} is a regressor")
    if weights is not None:
        return replace(make_machine(name, huber_width, epsilon, fit_intercept, multiclass),
                       class_weight=weights)
    if name == "krr":
        if fit_intercept:
            raise KernelCVError("machine 'krr' is bias-free (kernel ridge regression has no "
                                "intercept); use lssvm, l2svm, svm or svr for fit_intercept")
        return Machine(name, SquareLoss())
    intercept = True if fit_intercept is None else bool(fit_intercept)
    if name == "lssvm":
        return Machine(name, SquareLoss(), intercept, scheme)
    if name == "l2svm":
        return Machine(name, SquaredHingeLoss(), intercept, scheme)
    if name == "svm":
        return Machine(name, HuberHingeLoss(width=float(huber_width)), intercept, scheme)
    return Machine(name, HuberInsensitiveLoss(epsilon=float(epsilon), width=float(huber_width)),
                   intercept)


__all__ = ["MACHINES", "CLASSIFIERS", "INTERCEPT_MACHINES", "Machine", "make_machine", "FitResult",
           "fit_kernel_machine"]
