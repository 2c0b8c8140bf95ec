"""Stored workloads and form errors in people's words, not the program's: "batch 8, 2,048
tokens, bf16, one chip", never "batch=8, seq_len=2048" or a Python list's repr."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from app import formatting as fmt

# a field's name in words, before its value; a field not listed is named as it is spelt
_NAMES = {
    "batch": "batch",
    "seq_len": "tokens",
    "gen_len": "new tokens",
    "n": "elements",
    "rows": "rows",
    "cols": "columns",
    "heads": "heads",
    "kv_heads": "KV heads",
    "head_dim": "head size",
    "flops_per_element": "FLOPs per element",
    "inputs": "inputs",
    "outputs": "outputs",
    "dp": "data-parallel replicas",
    "pp": "pipeline stages",
    "ep": "expert-parallel groups",
    "zero": "ZeRO stage",
}
# fields whose number comes after the word (batch 8), the others before it (2,048 tokens)
_WORD_FIRST = {"batch", "zero", "inputs", "outputs"}
_HIDDEN = {"kind", "model", "config", "phase"}


def number(value: float) -> str:
    """A count whole, with thousands separators: 131,072, never 131k; 2.0 is 2."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _field(name: str, value: Any, kind: object) -> str:
    if kind == "matmul" and name in ("m", "n", "k"):  # a matmul's sizes, not elements
        return f"{name} {number(value)}"
    if name == "tp":
        return "one chip" if value == 1 else f"tensor parallel over {number(value)} chips"
    if name == "fused":
        return "fused" if value else "unfused"
    if isinstance(value, bool):
        words = name.replace("_", " ")
        return words if value else f"no {words}"
    if isinstance(value, list | tuple):
        return "ops " + ", ".join(str(v) for v in value)
    if name in ("dtype", "weight_dtype", "kv_dtype", "stack", "implementation", "unit"):
        return str(value) if name == "dtype" else f"{name.replace('_', ' ')} {value}"
    words = _NAMES.get(name, name.replace("_", " "))
    text = number(value) if isinstance(value, int | float) else str(value)
    return f"{words} {text}" if name in _WORD_FIRST or name not in _NAMES else f"{text} {words}"


def fields(workload: Mapping[str, Any], only: Iterable[str] | None = None) -> str:
    """A workload's set fields in words, in its order (or `only` these): new tokens only for a
    generation, which alone makes them."""
    chosen = list(workload) if only is None else [n for n in only if n in workload]
    generate = workload.get("phase") == "generate"
    return ", ".join(
        _field(name, workload[name], workload.get("kind"))
        for name in chosen
        if name not in _HIDDEN and workload[name] is not None and (name != "gen_len" or generate)
    )


def workload(workload: Mapping[str, Any]) -> str:
    """A stored workload in one line: its model and phase (or kind), then its fields."""
    head = str(workload.get("model") or workload.get("kind", "workload"))
    if workload.get("model") and workload.get("phase"):
        head += f" {workload['phase']}"
    rest = fields(workload)
    return f"{head}: {rest}" if rest else head


_MAYBE_PLURAL = re.compile(r"\b(\d[\d,]*) (\w+)\(s\)")


def plural(line: str) -> str:
    """An answer's line with "1 chip(s)" said as "1 chip" and "8 chip(s)" as "8 chips"."""

    def said(match: re.Match[str]) -> str:
        count, noun = match.groups()
        return f"{count} {noun}" if count == "1" else f"{count} {noun}s"

    return _MAYBE_PLURAL.sub(said, line)


# Pydantic's messages in the form's words, by error type: "must be at least 1", not "Input
# should be greater than or equal to 1"
_IN_WORDS = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "missing": "is required",
}
_NO_MODEL = "give exactly one of model"


def in_words(error: Any) -> str:
    """A validation error's message as the form says it."""
    words = _IN_WORDS.get(str(error["type"]))
    context = error.get("ctx") or {}
    if words is not None:
        return words.format(
            **{k: fmt.number(v) if isinstance(v, float) else v for k, v in context.items()}
        )
    message = str(error["msg"]).removeprefix("Value error, ")
    if message.startswith(_NO_MODEL):  # the model field left empty
        return "choose a model (type to search), or paste a config.json"
    return message
