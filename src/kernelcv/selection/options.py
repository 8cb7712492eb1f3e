"""Option groups of a search as small frozen values, each validated once where it is built.

:func:`kernelcv.selection.search.run_search` takes the machine, a CV method object
(:mod:`kernelcv.selection.methods`) and these groups: the search space
(:class:`SearchSpace`), the safeguards (:class:`Safeguards`) and the execution
(:class:`Execution`). The flat keyword interfaces (``grid_search``, the CLI) build them;
``KernelSearchCV`` takes ``safeguards=Safeguards(...)`` and ``execution=Execution(...)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..devices import check_device, check_precision
from ..exceptions import KernelCVError
from ..kernels import KERNELS
from ..random_features.linear_cv import c_to_lam
from .space.gamma_range import GammaGrid, data_gamma_grid
from .space.grids import check_grid, default_degrees, default_gammas

AVERAGES = ("pooled", "folds")
# Named default gamma grids: from the data's distances (the default) or the papers'.
GAMMA_GRIDS = ("data", "paper")


def kernel_settings(kernel, gammas=None, degrees=None, *, gamma=None, degree=3, coef0=1.0):
    """The kernel settings of a grid and the name of the varied parameter.

    rbf/laplace vary gamma (default: the papers' grid, :func:`default_gammas`); poly
    varies the degree (default 1..8) at a fixed ``gamma`` (default 1) and ``coef0``;
    linear has one setting.
    """
    if kernel not in KERNELS:
        raise KernelCVError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    if kernel in ("rbf", "laplace"):
        if degrees is not None:
            raise KernelCVError(f"kernel {kernel!r} has no degree; give a gamma grid")
        values = check_grid(default_gammas() if gammas is None else gammas, "gamma")
        return [{"kernel": kernel, "gamma": g} for g in values], "gamma"
    if kernel == "poly":
        if gammas is not None:
            raise KernelCVError("the poly grid varies the degree; give gamma as one value")
        values = check_grid(default_degrees() if degrees is None else degrees, "degree",
                            integer=True)
        g = 1.0 if gamma is None else check_grid([gamma], "gamma")[0]
        c = float(coef0)
        if not np.isfinite(c) or c < 0:
            raise KernelCVError(f"coef0 must be a finite number >= 0, got {coef0!r}")
        return [{"kernel": "poly", "gamma": g, "degree": d, "coef0": c} for d in values], \
            "degree"
    if gammas is not None or degrees is not None:
        raise KernelCVError("the linear kernel has no parameter to search; give only lam")
    return [{"kernel": "linear"}], None


#: The kernel parameters a search keeps fixed, as ``kernel_params`` holds them.
KERNEL_PARAMS = ("gamma", "degree", "coef0")


def check_kernel_params(kernel_params) -> dict:
    """``kernel_params`` (None or a dict with ``gamma``, ``degree``, ``coef0``) as a dict."""
    if kernel_params is None:
        return {}
    if not isinstance(kernel_params, dict):
        raise KernelCVError(f"kernel_params must be a dict, got {kernel_params!r}")
    unknown = sorted(set(kernel_params) - set(KERNEL_PARAMS))
    if unknown:
        raise KernelCVError(f"kernel_params takes {', '.join(KERNEL_PARAMS)}, not "
                            f"{', '.join(map(str, unknown))}")
    return dict(kernel_params)

@dataclass(frozen=True)
class SearchSpace:
    """The candidates: kernel settings, each with its lam values.

    Build it with :meth:`grid` (a product grid; defaults are the CV method's) or
    :meth:`explicit` (given settings with one lam list each, as ``KernelSearchCV`` does).
    A named gamma grid (``gamma_grid``: ``"data"`` or ``"paper"``) is filled in by
    :meth:`with_data` once the data are known; default lam grids and C grids depend on
    the number of samples, so :meth:`resolve` returns the lam lists once n is known.
    """

    kernel: str
    param_name: str | None
    settings: tuple
    lams: tuple | None = None
    Cs: tuple | None = None
    setting_lams: tuple | None = None
    gamma_grid: str | None = None
    reserve: tuple | None = None

    @classmethod
    def grid(cls, kernel="rbf", gammas=None, degrees=None, lams=None, *, gamma=None,
             degree=3, coef0=1.0, Cs=None) -> SearchSpace:
        """A product grid of kernel settings x lam (``Cs``: lam = 1 / (2 n C) instead).

        ``gammas`` (rbf/laplace): values, ``"data"`` (or None: the default grid from the
        data's distances, :mod:`kernelcv.selection.space.gamma_range`, for the methods that
        build Gram matrices) or ``"paper"`` (the method's fixed default grid).
        """
        named = None
        if kernel in ("rbf", "laplace") and (gammas is None or isinstance(gammas, str)):
            named = "data" if gammas is None else gammas
            if named not in GAMMA_GRIDS:
                raise KernelCVError(f"gamma grid must be numbers, 'data' or 'paper', got "
                                    f"{gammas!r}")
            gammas = [1.0]  # a placeholder, checked for the other arguments' sake
        settings, param_name = kernel_settings(kernel, gammas, degrees, gamma=gamma,
                                               degree=degree, coef0=coef0)
        if Cs is not None and lams is not None:
            raise KernelCVError("give either a lam grid or a C grid, not both")
        return cls(kernel=kernel, param_name=param_name,
                   settings=() if named else tuple(settings),
                   lams=None if lams is None else tuple(check_grid(lams, "lam")),
                   Cs=None if Cs is None else tuple(check_grid(Cs, "C")), gamma_grid=named)

    def with_data(self, X, method) -> tuple[SearchSpace, GammaGrid | None, dict]:
        """Fill in a named gamma grid: ``(space, data grid or None, the report's grid)``.

        ``"data"`` is derived from X (:func:`data_gamma_grid`, O(n^2 d)) for methods that
        build Gram matrices (``method.kernel_grid``); otherwise, and for ``"paper"``, the
        method's :meth:`default_gammas`. The third item is the report's ``grid`` entry.
        """
        derived = None
        space = self
        if self.gamma_grid is not None:
            if self.gamma_grid == "data" and method.kernel_grid:
                derived = data_gamma_grid(X, self.kernel)
                values = list(derived.values)
            else:
                values = check_grid(method.default_gammas(), "gamma")
            space = replace(self, settings=tuple({"kernel": self.kernel, "gamma": g}
                                                 for g in values), gamma_grid=None)
        source = ("given" if self.gamma_grid is None else
                  "data" if derived is not None else "paper")
        lam_source = ("given" if self.lams is not None or self.setting_lams is not None
                      else "C" if self.Cs is not None else "default")
        entry = {"param_name": self.param_name,
                 "source": source if self.param_name == "gamma" else None,
                 "values": sorted({s[self.param_name] for s in space.settings
                                   if self.param_name in s}) if self.param_name else [],
                 "lam_source": lam_source,
                 "data_range": None if derived is None else derived.to_dict()}
        return space, derived, entry

    @classmethod
    def explicit(cls, kernel, settings, setting_lams, reserve=None) -> SearchSpace:
        """Given kernel settings with one lam list per setting (``reserve``: lam values
        below them evaluated where the choice reaches that edge, as :meth:`reserve_for`)."""
        param_name = "gamma" if kernel in ("rbf", "laplace") else (
            "degree" if kernel == "poly" else None)
        return cls(kernel=kernel, param_name=param_name, settings=tuple(settings),
                   setting_lams=tuple(tuple(check_grid(values, "lam"))
                                      for values in setting_lams),
                   reserve=None if not reserve else tuple(check_grid(reserve, "lam")))

    def reserve_for(self, n_samples: int, method) -> list[float]:
        """The lam values held in reserve below the grid toward large C: the method's
        (:meth:`CVMethod.reserve_lams`) when the lam grid is its default, the given ones
        of :meth:`explicit`, else none (a user's grid is searched as given)."""
        if self.reserve is not None:
            return list(self.reserve)
        if self.lams is None and self.Cs is None and self.setting_lams is None:
            return list(method.reserve_lams(n_samples))
        return []

    def resolve(self, n_samples: int, method) -> tuple[list[dict], list[list[float]]]:
        """The settings and one lam list per setting for n samples (method's defaults)."""
        if self.setting_lams is not None:
            return list(self.settings), [list(values) for values in self.setting_lams]
        if self.lams is not None:
            values = list(self.lams)
        elif self.Cs is not None:
            values = [float(v) for v in c_to_lam(self.Cs, n_samples)]
        else:
            values = check_grid(method.default_lams(n_samples), "lam")
        return list(self.settings), [values] * len(self.settings)


@dataclass(frozen=True)
class Safeguards:
    """Exact refits after an approximate search.

    ``confirm``: the best candidates confirmed by exact refit CV at least (0 switches the
    confirmation off; more are confirmed while the next approximate score beats the best
    exact error so far, at most 5x); ``recheck_degenerate``: re-evaluate degenerate
    candidates exactly.
    """

    confirm: int = 3
    recheck_degenerate: bool = True

    def __post_init__(self):
        confirm = self.confirm
        if isinstance(confirm, bool) or not isinstance(confirm, int | np.integer) \
                or confirm < 0:
            raise KernelCVError(f"confirm must be an integer >= 0, got {confirm!r}")


@dataclass(frozen=True)
class Execution:
    """Where and how the work runs, and what it may use.

    ``n_jobs``, ``backend``, ``scheduler``: parallel execution of the kernel settings (see
    :func:`kernelcv.selection.backends.run_tasks`); ``checkpoint``: a JSON Lines file of
    finished work (a rerun resumes); ``progress``: ``progress(stage, done, total)``;
    ``memory_budget``: bytes or e.g. ``"8G"`` (see :mod:`kernelcv.memory`); ``device``:
    where the ``spectral`` method's linear algebra runs, one of
    :data:`kernelcv.devices.DEVICES` (``"numpy"``, torch's ``"cpu"`` or ``"cuda"``, or
    ``"auto"``: cuda when torch sees a GPU, else numpy); ``precision``: ``"float64"``
    (default) or ``"mixed"``, the ``spectral`` method's MM steps in float32 for each
    (kernel, lam) whose ridge systems are well conditioned
    (:func:`kernelcv.criteria.spectral.single_precision_safe`), float64 for the rest.
    """

    n_jobs: int | None = 1
    backend: str = "auto"
    scheduler: object = None
    checkpoint: object = None
    progress: Callable | None = None
    memory_budget: object = None
    device: str = "numpy"
    precision: str = "float64"

    def __post_init__(self):
        check_device(self.device)
        check_precision(self.precision)

    @property
    def parallel(self) -> bool:
        """Whether tasks leave this process (then they get X, not a Gram-matrix cache)."""
        return self.workers > 1 or self.scheduler is not None

    @property
    def workers(self) -> int:
        """Local workers holding matrices at once (1 on a cluster: its memory, not ours)."""
        if self.scheduler is not None or self.backend == "dask":
            return 1
        if self.n_jobs is None or self.backend == "sequential":
            return 1
        if self.n_jobs == -1:
            return os.cpu_count() or 1
        return max(int(self.n_jobs), 1)

    def report(self, stage: str, done: int, total: int):
        """Advance the progress callback, if any."""
        if self.progress is not None:
            self.progress(stage, done, total)
