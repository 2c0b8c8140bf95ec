"""A quantity affine in the batch, as the optimal batch's search reads it (app/engine/batch.py):
its value at batch 1 and its slope."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.engine.workload import MAX_BATCH


@dataclass(frozen=True, slots=True)
class Line:
    """value(b) = at_one + slope (b - 1): a quantity that is affine in the batch."""

    at_one: float
    slope: float

    @classmethod
    def through(cls, at_one: float, at_max: float) -> Line:
        """The line through its values at batch 1 and at MAX_BATCH (so wide apart that the
        slope keeps all its digits, even beside a large constant such as the weights)."""
        return cls(at_one, (at_max - at_one) / (MAX_BATCH - 1))

    def at(self, batch: int) -> float:
        return self.at_one + self.slope * (batch - 1)

    def scaled(self, factor: float) -> Line:
        return Line(self.at_one * factor, self.slope * factor)

    def plus(self, other: Line) -> Line:
        return Line(self.at_one + other.at_one, self.slope + other.slope)

    def first_above(self, other: Line) -> int | None:
        """The smallest batch >= 1 where self >= other, or None if there is none."""
        gap, closing = other.at_one - self.at_one, self.slope - other.slope
        if gap <= 0:
            return 1
        if closing <= 0:
            return None
        return 1 + math.ceil(gap / closing)


BATCH = Line(1.0, 1.0)  # the batch itself
