"""The errors of measuring a function."""

from __future__ import annotations

INSTALL = "pip install -e '.[measure]'"
# the modules the measure extra installs: PyTorch runs the function, NumPy probes the CPU
EXTRA_MODULES = frozenset({"torch", "numpy"})


class MeasureError(Exception):
    """Measuring or judging failed: a bad script or case, an unreachable service, an error it
    answered."""


class TorchMissing(ImportError):
    """PyTorch is not installed: measuring needs the `measure` extra."""

    def __init__(self) -> None:
        super().__init__(
            f"measuring a function needs PyTorch: install the measure extra ({INSTALL})",
            name="torch",
        )


def explain(error: ImportError) -> str:
    """What to say of a failed import: which extra to install when the module missing is one
    of the measure extra's (the script's own `import torch` included)."""
    missing = (error.name or "").partition(".")[0]
    if missing not in EXTRA_MODULES:
        return str(error)
    return f"measuring a function needs {missing}: install the measure extra ({INSTALL})"
