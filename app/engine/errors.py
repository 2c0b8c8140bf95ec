"""Errors the engine raises. None of them knows about HTTP.

EngineError
├── InvalidInput          a parameter is out of its allowed range (names the field)
│   └── InvalidArchitecture   a model config is missing a field or is inconsistent
└── Unsupported           the chip has no published figure the workload needs
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error raised by the engine."""


class InvalidInput(EngineError, ValueError):
    """A parameter is outside the range the model is defined on.

    `field` names the parameter (dotted for nested ones) and `message` says the allowed range.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class InvalidArchitecture(InvalidInput):
    """A model architecture (Hugging Face config) is incomplete or inconsistent."""


class Unsupported(EngineError):
    """The chip lacks a figure the workload needs (e.g. no fp8 peak on an A100)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
