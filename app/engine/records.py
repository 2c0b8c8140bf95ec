"""A faster `__init__` and `replace` for the engine's frozen, slotted dataclasses.

A frozen dataclass's generated `__init__` sets each field through `object.__setattr__`, the
generic path that looks the attribute up on the class every time: about 1 µs for a six-field
record, which made the construction of records a fifth of a training estimate's CPU
(docs/performance.md). `quick_init` gives the class an `__init__` that builds the instance
as its *twin*, a plain class with the same slots in the same layout: it switches the new
instance's class to the twin, assigns each field as an ordinary slot (which the interpreter
specialises into a direct store), and switches it back, before `__post_init__` and before
anything else can see it. That is about 40% of the instructions of assigning through each
slot's descriptor (the way taken where no twin fits: slots inherited from a base record,
or an instance of a subclass). Everything else (the fields, defaults and factories,
`__post_init__`, equality, hashing, repr, immutability after construction) stays the
dataclass's. `replace` is `dataclasses.replace` for such a record through a copier generated
with it: the standard one walks the fields' metadata on every call (about 2 µs; a scaling
curve makes 26 copies).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar, cast

Record = TypeVar("Record", bound=type[Any])
Instance = TypeVar("Instance")


def quick_init(cls: Record) -> Record:
    """Replace the `__init__` of `cls`, a `dataclass(frozen=True, slots=True)`, by one that
    builds it as its twin (or through the slots' descriptors), with the same parameters, every
    default and factory evaluated before the instance is touched. Where `cls` has a static
    `_derive`, its fields with neither init nor default are `_derive(*init fields)`, a
    tuple in field order: values read often, set as cheaply as the others. Raises TypeError for
    any other class, or one whose `__init__` takes what it does not build (an InitVar)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a dataclass(frozen=True, slots=True)")
    names: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    twin = _twin(cls)
    positional, keyword, prelude, assigned = _fields(cls, names)
    names.update({f"_set_{f}": _slot(cls, f).__set__ for f, _ in assigned})
    through_slots = [f"_set_{f}(self, {value})" for f, value in assigned]
    body = prelude.copy()
    if twin is None or not assigned:
        body += through_slots
    else:  # switched to the twin, assigned as plain slots, switched back; a subclass's
        # instance (whose layout may differ) through the slots' descriptors
        names.update(_cls=cls, _twin=twin, _become=object.__setattr__)
        body += [
            "if type(self) is _cls:",
            "    _become(self, '__class__', _twin)",
            *(f"    self.{f} = {value}" for f, value in assigned),
            "    self.__class__ = _cls",
            "else:",
            *(f"    {line}" for line in through_slots),
        ]
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    body = [f"    {line}" for line in body]
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


def _fields(
    cls: type[Any], names: dict[str, Any]
) -> tuple[list[str], list[str], list[str], list[tuple[str, str]]]:
    """The `__init__` of `cls` in parts: its positional and keyword-only parameters, the
    prelude that computes every value before the instance is touched, and the (field, value)
    pairs it assigns; the names those parts read go into `names`."""
    positional: list[str] = []
    keyword: list[str] = []
    prelude: list[str] = []
    assigned: list[tuple[str, str]] = []
    derive = cls.__dict__.get("_derive")
    derived: list[str] = []  # fields computed by the class's _derive from the init fields
    for field in dataclasses.fields(cls):
        name = field.name
        value = name  # what the field is set to: its parameter, or a local of the prelude
        if field.default_factory is not dataclasses.MISSING:
            names[f"_factory_{name}"] = field.default_factory
            parameter = f"{name}=_MISSING"
            fill = f"if {name} is _MISSING: {name} = " if field.init else f"{name} = "
            prelude.append(fill + f"_factory_{name}()")
        elif field.default is not dataclasses.MISSING:
            names[f"_default_{name}"] = field.default
            parameter = f"{name}=_default_{name}"
            value = value if field.init else f"_default_{name}"
        elif not field.init:
            if derive is not None:  # derived; else left to __post_init__
                derived.append(name)
                assigned.append((name, name))
            continue
        else:
            parameter = name
        if field.init:
            (keyword if field.kw_only else positional).append(parameter)
        assigned.append((name, value))
    if derived:
        names["_derive"] = derive.__func__ if isinstance(derive, staticmethod) else derive
        arguments = ", ".join(f.name for f in dataclasses.fields(cls) if f.init)
        prelude.append(f"{', '.join(derived)}, = _derive({arguments})")
    return positional, keyword, prelude, assigned


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
    positional, keyword = [], []  # keyword-only fields may come before positional ones
    for f in fields:
        value = f"changes['{f.name}'] if '{f.name}' in changes else self.{f.name}"
        if f.kw_only is True:
            keyword.append(f"{f.name}={value}")
        else:
            positional.append(value)
    arguments = positional + keyword
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


def _twin(cls: type[Any]) -> type[Any] | None:
    """A plain class with the slots of `cls` in the same layout, to which an instance of `cls`
    can be switched and back (None where the layouts differ: slots inherited from a base)."""
    twin = type(f"{cls.__name__}Twin", (), {"__slots__": cls.__slots__})
    probe = object.__new__(cls)
    try:
        object.__setattr__(probe, "__class__", twin)
        probe.__class__ = cls
    except TypeError:
        return None
    return twin


def _slot(cls: type[Any], name: str) -> Any:
    """The member descriptor of slot `name`, from the class that declares it."""
    for owner in cls.__mro__:
        if name in owner.__dict__ and hasattr(owner.__dict__[name], "__set__"):
            return owner.__dict__[name]
    raise TypeError(f"{cls.__name__}.{name} is not a slot")


def _parameters(init: Any) -> list[tuple[str, Any]]:
    """An __init__'s parameters after self: their names and kinds."""
    return [(p.name, p.kind) for p in list(inspect.signature(init).parameters.values())[1:]]
