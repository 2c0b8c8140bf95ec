"""A torch.profiler trace's JSON read one event at a time.

`json.loads` would build the whole document: about ten times its size in Python objects (a
32 MiB trace, some 350 MB). Here the top-level object is walked key by key and the elements
of `traceEvents` are decoded one by one (by the standard library's own scanner, in C) and
handed to the engine's `TraceEvents`, which keeps only what the analysis needs of each, so
that the memory a trace takes is its text and the records kept, not its document. Every other
top-level value is decoded and dropped, but `deviceProperties` (the GPUs the trace names).

The JSON accepted is json.loads's: the same encodings (UTF-8, -16 or -32), whitespace and
escapes; NaN and Infinity refused; a document nested deeper than the parser goes is not JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator

from app.engine.trace_events import HOW, NotATrace

_SPACE = re.compile(r"[ \t\n\r]*")


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_constant)


class Document:
    """A trace's text, whose events `events()` yields in order; `device_properties` is the
    document's `deviceProperties` once they have all been read."""

    def __init__(self, body: bytes) -> None:
        try:
            self.text = body.decode(json.detect_encoding(body), "surrogatepass")
        except UnicodeDecodeError as error:
            raise _not_json(error) from None
        self.device_properties: object = None

    def events(self) -> Iterator[object]:
        """Each element of traceEvents; NotATrace when the body is not JSON or not an object
        with a traceEvents list."""
        try:
            found = yield from self._object()
        except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
            raise _not_json(error) from None
        if not found:
            raise NotATrace(f"not a torch.profiler trace: expected {HOW}")

    def _skip(self, pos: int) -> int:
        space = _SPACE.match(self.text, pos)  # always a match, empty or not
        return space.end() if space else pos

    def _object(self) -> Generator[object, None, bool]:
        """The events of the top-level object, then whether it had a traceEvents list."""
        text = self.text
        pos = self._skip(0)
        if not text.startswith("{", pos):
            _DECODER.decode(text)  # not JSON (ValueError), or JSON that is no object
            return False
        found = False
        pos = self._skip(pos + 1)
        if text.startswith("}", pos):
            return self._end(pos + 1, found)
        while True:
            if not text.startswith('"', pos):
                raise json.JSONDecodeError("Expecting property name enclosed in quotes", text, pos)
            key, pos = _DECODER.raw_decode(text, pos)  # a string: it starts with a quote
            pos = self._skip(pos)
            if not text.startswith(":", pos):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
            pos = self._skip(pos + 1)
            if key == "traceEvents" and text.startswith("[", pos):
                if found:
                    raise NotATrace("not a torch.profiler trace: traceEvents appears twice")
                found = True
                pos = yield from self._array(pos + 1)
            else:
                value, pos = _DECODER.raw_decode(text, pos)
                if key == "deviceProperties":
                    self.device_properties = value
                elif key == "traceEvents":
                    raise NotATrace(f"not a torch.profiler trace: expected {HOW}")
            pos = self._skip(pos)
            if text.startswith("}", pos):
                return self._end(pos + 1, found)
            if not text.startswith(",", pos):
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos = self._skip(pos + 1)

    def _array(self, pos: int) -> Generator[object, None, int]:
        """The elements of the array whose `[` is just before `pos`, then the position after
        its `]`."""
        text = self.text
        pos = self._skip(pos)
        if text.startswith("]", pos):
            return pos + 1
        while True:
            value, pos = _DECODER.raw_decode(text, pos)
            yield value
            pos = self._skip(pos)
            if text.startswith("]", pos):
                return pos + 1
            if not text.startswith(",", pos):
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos = self._skip(pos + 1)

    def _end(self, pos: int, found: bool) -> bool:
        """`found`, once nothing but whitespace follows the document."""
        if self._skip(pos) != len(self.text):
            raise json.JSONDecodeError("Extra data", self.text, pos)
        return found


def _not_json(error: Exception) -> NotATrace:
    return NotATrace(f"the body is not JSON ({str(error)[:120]})")
