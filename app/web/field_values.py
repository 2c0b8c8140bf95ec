"""A form field's text as the JSON value the API takes: sizes typed in scientific notation,
an elementwise chain's ops, a pasted config.json."""

from __future__ import annotations

import json
import re
from typing import Any

from app.engine import InvalidInput

# Real config.json files of language models are 1 to 5 kB. Percent-encoded in the form's
# body (up to 3 bytes a character) with the other fields, 16,000 characters stay under the
# default 64 KiB body cap (ROOFCHECK_MAX_BODY_BYTES, docs/api.md#errors).
MAX_CONFIG_CHARS = 16_000

_SCIENTIFIC = re.compile(r"^\d+(\.\d*)?[eE]\+?\d+$")


def _number(text: str) -> str:
    """'1e8' -> '100000000', so that sizes can be typed in scientific notation."""
    if _SCIENTIFIC.match(text):
        value = float(text)
        if value.is_integer() and value < 1e18:
            return str(int(value))
    return text


def _ops(text: str) -> int | list[str] | str:
    if text.isdigit():
        return int(text)
    names = [part.strip() for part in text.split(",") if part.strip()]
    return names or text


_JSON_TYPES: dict[type, str] = {
    **{list: "an array", str: "a string", bool: "a boolean"},
    **{int: "a number", float: "a number", type(None): "null"},
}


def _config(text: str) -> dict[str, Any]:
    """A pasted config.json, parsed; InvalidInput says where it does not parse."""
    if len(text) > MAX_CONFIG_CHARS:
        raise InvalidInput("config", f"at most {MAX_CONFIG_CHARS:,} characters, got {len(text):,}")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            "config", f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:  # nested deeper than the parser goes
        raise InvalidInput("config", "not valid JSON: nested too deeply") from None
    if not isinstance(config, dict):
        got = _JSON_TYPES.get(type(config), "another value")
        raise InvalidInput("config", f"must be a JSON object {{...}}, got {got}")
    return config


def field_value(schema_name: str, text: str) -> Any:
    """A form field's text as the API's JSON value: the ops as a count or names, a pasted
    config parsed, numbers in scientific notation as integers where they are whole."""
    if schema_name == "ops":
        return _ops(text)
    if schema_name == "config":
        return _config(text)
    return _number(text)
