"""The errors of measuring a function."""

from __future__ import annotations

INSTALL = "pip install 'roofcheck[measure]'"


class MeasureError(Exception):
    """Measuring or judging failed: a bad script or case, an unreachable service, an error it
    answered."""


class TorchMissing(ImportError):
    """PyTorch is not installed: measuring needs the `measure` extra."""

    def __init__(self) -> None:
        super().__init__(
            f"measuring a function needs PyTorch: {INSTALL} (or pip install torch)", name="torch"
        )
