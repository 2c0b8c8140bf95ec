"""A faster `__init__` and `replace` for the engine's frozen, slotted dataclasses.

A frozen dataclass's generated `__init__` sets each field through `object.__setattr__`, the
generic path that looks the attribute up on the class every time: about 1 µs for a six-field
record, which made the construction of records a fifth of a training estimate's CPU
(docs/performance.md). `quick_init` gives the class an `__init__` that sets each field
through its slot's own descriptor, the same assignment without the lookup: half the cost.
Everything else (the fields, defaults and factories, `__post_init__`, equality, hashing,
repr, immutability after construction) stays the dataclass's. `replace` is
`dataclasses.replace` for such a record through a copier generated with it: the standard one
walks the fields' metadata on every call (about 2 µs; a scaling curve makes 26 copies).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar, cast

Record = TypeVar("Record", bound=type[Any])
Instance = TypeVar("Instance")


def quick_init(cls: Record) -> Record:
    """Replace the `__init__` of `cls`, a `dataclass(frozen=True, slots=True)`, by one that
    assigns through the slots' descriptors, with the same parameters. Raises TypeError for
    any other class, or one whose `__init__` takes what it does not build (an InitVar)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a dataclass(frozen=True, slots=True)")
    names: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for field in dataclasses.fields(cls):
        name = field.name
        names[f"_set_{name}"] = _slot(cls, name).__set__
        if field.default_factory is not dataclasses.MISSING:
            names[f"_factory_{name}"] = field.default_factory
            value, parameter = f"_factory_{name}()", f"{name}=_MISSING"
            fill = f"    if {name} is _MISSING: {name} = {value}"
        elif field.default is not dataclasses.MISSING:
            names[f"_default_{name}"] = field.default
            value, parameter, fill = f"_default_{name}", f"{name}=_default_{name}", ""
        else:
            value, parameter, fill = "", name, ""
        if not field.init:  # set from its default or factory, or left to __post_init__
            body += [f"    _set_{name}(self, {value})"] if value else []
            continue
        (keyword if field.kw_only else positional).append(parameter)
        body += [fill] if fill else []
        body.append(f"    _set_{name}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + "\n".join(body or ["    pass"]) + "\n"
    # from the class's own field names, as dataclasses does; named for tracebacks
    exec(compile(source, f"<quick_init {cls.__qualname__}>", "exec"), names)
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = cls.__init__.__annotations__
    if _parameters(init) != _parameters(cls.__init__):  # an InitVar, or anything not built here
        raise TypeError(f"{cls.__name__}: quick_init cannot build its __init__'s parameters")
    cls.__init__ = init
    cls._quick_replace = _copier(cls)
    return cls


def replace(record: Instance, /, **changes: Any) -> Instance:
    """`dataclasses.replace(record, **changes)`: the same copy (fields not named are passed to
    `__init__` as they are, so `__post_init__` runs), and the same errors."""
    copier = type(record).__dict__.get("_quick_replace")  # its own, not a base class's
    if copier is None:
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    return cast(Instance, copier(record, changes))


def _copier(cls: type[Any]) -> Any:
    """A function (record, changes) -> its copy with `changes`, which hands any change it
    does not build (a field set by __post_init__, a name the class lacks) to
    dataclasses.replace, for its error."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    arguments = []
    for f in fields:
        value = f"changes['{f.name}'] if '{f.name}' in changes else self.{f.name}"
        arguments.append(f"{f.name}={value}" if f.kw_only is True else value)
    source = (
        "def _quick_replace(self, changes):\n"
        "    if not changes.keys() <= _NAMES:\n"
        "        return _replace(self, **changes)\n"
        f"    return _cls({', '.join(arguments)})\n"
    )
    names = {
        "_cls": cls,
        "_NAMES": frozenset(f.name for f in fields),
        "_replace": dataclasses.replace,
    }
    exec(compile(source, f"<quick_init {cls.__qualname__} replace>", "exec"), names)
    return names["_quick_replace"]


def _slot(cls: type[Any], name: str) -> Any:
    """The member descriptor of slot `name`, from the class that declares it."""
    for owner in cls.__mro__:
        if name in owner.__dict__ and hasattr(owner.__dict__[name], "__set__"):
            return owner.__dict__[name]
    raise TypeError(f"{cls.__name__}.{name} is not a slot")


def _parameters(init: Any) -> list[tuple[str, Any]]:
    """An __init__'s parameters after self: their names and kinds."""
    return [(p.name, p.kind) for p in list(inspect.signature(init).parameters.values())[1:]]
