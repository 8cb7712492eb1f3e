"""How fast the BIF series approaches exact CV: |approx - exact| against the order r.

At one grid point (kernel setting, lam) and one fold assignment, the exact t-fold CV
(refit) is compared with the order-r BIF approximation for several r and with the
series' limit (order ``"inf"``):

* ``cv_gap`` = |CV_r - CV_exact| (0-1 error or MSE, the quantity that selects models);
* ``prediction_gap`` = mean_i |f_r(x_i) - f_exact(x_i)| over the held-out predictions, a
  smoother measure of the same convergence.

Cost: one exact CV (t fits) plus one full fit and the series for each order
(O(n |A| t r)).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..cv import cross_validate
from ..machines import make_machine
from ..selection.methods import BIF


def order_curve(X, y, machine: str, *, gamma: float, lam: float, fold_ids, orders,
                kernel: str = "rbf", huber_width: float = 0.01, fit_intercept=None) -> dict:
    """|BIF order r - exact| CV error and mean |prediction| gap for each r in ``orders``.

    The "series not converged" warnings of the truncated orders are silenced: the gap
    they warn about is the measured quantity. ``fit_intercept`` is passed on (None: the
    machine's default, an intercept for lssvm, l2svm, svm and svr; ``kernelcv bench``
    passes False for the papers' machines).

    Returns
    -------
    dict
        ``machine``, ``gamma``, ``lam``, ``n_samples``, ``n_folds``, ``exact_cv_error``,
        ``orders`` (the integers, then ``"inf"``), ``cv_gap`` and ``prediction_gap``
        (one value per order, same order).
    """
    common = {"kernel": kernel, "gamma": gamma, "lam": lam, "folds": fold_ids}
    spec = make_machine(machine, huber_width=huber_width, fit_intercept=fit_intercept)
    exact = cross_validate(X, y, spec, method="exact", **common)
    labels, cv_gap, prediction_gap = [], [], []
    for order in [*orders, "inf"]:
        with warnings.catch_warnings():  # a truncated series is what is measured here
            warnings.filterwarnings("ignore", message=".*BIF series not converged",
                                    category=RuntimeWarning)
            approx = cross_validate(X, y, spec, method=BIF(order=order), **common)
        labels.append(order)
        gap = abs(approx.cv_error - exact.cv_error)
        cv_gap.append(gap if gap > 1e-12 else 0.0)  # below that: rounding of the means
        prediction_gap.append(float(np.mean(np.abs(approx.predictions - exact.predictions))))
    return {"machine": machine, "gamma": float(gamma), "lam": float(lam),
            "n_samples": int(np.asarray(y).shape[0]),
            "n_folds": int(np.max(fold_ids)) + 1, "exact_cv_error": float(exact.cv_error),
            "orders": labels, "cv_gap": cv_gap, "prediction_gap": prediction_gap}
