"""Measure a PyTorch function: time it, count its work from the aten operators it runs, and
judge the time against a chip's roofline (README, "Measure a function").

    from app.measure import measure
    print(measure(fn, x, chip="local").report())

Importing this package needs no PyTorch; calling `measure` does (the `measure` extra), and
says what to install when it is missing (TorchMissing, an ImportError).
"""

from app.measure.judging import LOCAL
from app.measure.measure_errors import MeasureError, TorchMissing
from app.measure.op_counts import Counts, Event
from app.measure.runner import Measurement, measure
from app.measure.timing import Timing
from app.measure.torch_dtypes import UnsupportedDtype, engine_dtype

__all__ = [
    "LOCAL",
    "Counts",
    "Event",
    "MeasureError",
    "Measurement",
    "Timing",
    "TorchMissing",
    "UnsupportedDtype",
    "engine_dtype",
    "measure",
]
