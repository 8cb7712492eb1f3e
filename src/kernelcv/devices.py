"""Where the spectral engine's dense linear algebra runs: numpy, or torch on a CPU or GPU.

``device`` is one of :data:`DEVICES`:

* ``"numpy"`` (the default): numpy and scipy (LAPACK's ``eigh``), the only required path;
* ``"cpu"``: torch on the CPU (its own BLAS and LAPACK), chiefly to test the torch path
  where no GPU is;
* ``"cuda"``: torch on the first GPU torch sees;
* ``"auto"``: ``"cuda"`` when torch is installed and sees a GPU, else ``"numpy"``.

torch is an optional extra (``pip install 'kernelcv[gpu]'``), imported only when a torch
device is asked for. Everything runs in float64 on every device unless a search asks for
``precision="mixed"`` (:data:`PRECISIONS`): then the spectral engine runs the MM steps of
each (kernel, lam) whose ridge systems are well conditioned in float32
(:func:`kernelcv.criteria.spectral.single_precision_safe`) and the rest in float64; the
report's ``device`` entry says which device and precision ran.
"""

from __future__ import annotations

from dataclasses import dataclass

from .exceptions import KernelCVError

#: The accepted ``device`` names.
DEVICES = ("numpy", "cpu", "cuda", "auto")
#: The accepted ``precision`` values: float64 throughout, or float32 where it is safe.
PRECISIONS = ("float64", "mixed")

_INSTALL = "pip install 'kernelcv[gpu]' (torch)"


@dataclass(frozen=True)
class Device:
    """A resolved device: ``name`` ``"numpy"``, ``"cpu"`` or ``"cuda"``; ``card`` the GPU's
    name (cuda) or None; ``dtype`` ``"float64"``, or ``"mixed"`` (float32 where safe)."""

    name: str
    card: str | None = None
    dtype: str = "float64"

    @property
    def is_torch(self) -> bool:
        """Whether torch runs the linear algebra."""
        return self.name != "numpy"

    def torch_device(self):
        """torch's device object (torch devices only)."""
        torch = _torch()
        return torch.device("cuda" if self.name == "cuda" else "cpu")

    def free_bytes(self) -> int | None:
        """Free memory on a GPU (bytes), or None where host memory is the limit."""
        if self.name != "cuda":
            return None
        return int(_torch().cuda.mem_get_info()[0])

    def to_dict(self) -> dict:
        """The report's ``device`` entry."""
        return {"name": self.name, "card": self.card, "dtype": self.dtype}

    def with_precision(self, precision: str) -> Device:
        """This device with ``precision`` (one of :data:`PRECISIONS`) as its dtype."""
        return Device(self.name, self.card, check_precision(precision))

    def describe(self) -> str:
        """One line: ``numpy``, ``torch cpu`` or ``torch cuda (card)``, and the dtype."""
        dtype = ("float64; float32 MM steps where kappa <= 1e3" if self.dtype == "mixed"
                 else self.dtype)
        if self.name == "numpy":
            return f"numpy ({dtype})"
        card = f", {self.card}" if self.card else ""
        return f"torch {self.name}{card} ({dtype})"


NUMPY = Device("numpy")


def check_device(device) -> str:
    """``device`` as a name of :data:`DEVICES` (a :class:`Device` gives its name)."""
    if isinstance(device, Device):
        return device.name
    if device is None:
        return "numpy"
    if not isinstance(device, str) or device not in DEVICES:
        raise KernelCVError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    return device


def check_precision(precision) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else a one-line error."""
    if precision not in PRECISIONS:
        raise KernelCVError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                            f"{precision!r}")
    return precision


def resolve_device(device) -> Device:
    """The :class:`Device` of a name of :data:`DEVICES` (or a Device, as given).

    Raises
    ------
    KernelCVError
        For an unknown name, a torch device without torch installed, or ``"cuda"`` where
        torch sees no GPU.
    """
    if isinstance(device, Device):
        return device
    name = check_device(device)
    if name == "numpy":
        return NUMPY
    if name == "auto":
        torch = _torch(required=False)
        if torch is None or not torch.cuda.is_available():
            return NUMPY
        name = "cuda"
    torch = _torch()
    if name == "cuda":
        if not torch.cuda.is_available():
            raise KernelCVError("device='cuda': torch sees no GPU (torch "
                                f"{torch.__version__}); use device='auto' or 'numpy'")
        return Device("cuda", card=torch.cuda.get_device_name(0))
    return Device("cpu")


def _torch(required: bool = True):
    """The torch module, or None (``required=False``) when it is not installed."""
    try:
        import torch  # the optional extra
    except ImportError:
        if not required:
            return None
        raise KernelCVError(f"a torch device needs torch: {_INSTALL}") from None
    return torch
