"""A faster construction and `replace` for the engine's frozen, slotted dataclasses.

A frozen dataclass's generated `__init__` sets each field through `object.__setattr__`, the
generic path that looks the attribute up on the class every time: about 1 µs for a six-field
record, which made the construction of records a fifth of a training estimate's CPU
(docs/performance.md). `quick_init` builds the instance in a generated `__new__` instead (the
class keeps object's `__init__`, which then costs nothing): it makes the instance as its
*twin*, a plain class with the same slots in the same layout, assigns each field as an
ordinary slot (which the interpreter specialises into a direct store), and sets its class to
the record's, before `__post_init__` and before anything else can see it. That is about 40%
of the instructions of assigning through each slot's descriptor (the way taken where no twin
fits: slots inherited from a base record, or an instance of a subclass), and a fifth fewer
than an `__init__` that switched the instance to its twin and back. Everything else (the
fields, defaults and factories, `__post_init__`, equality, hashing, repr, copies and pickles,
immutability after construction) stays the dataclass's. `replace` is `dataclasses.replace`
for such a record through a copier generated with it: the standard one walks the fields'
metadata on every call (about 2 µs; a scaling curve makes 26 copies).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar, cast

Record = TypeVar("Record", bound=type[Any])
Instance = TypeVar("Instance")


def quick_init(cls: Record) -> Record:
    """Build the instances of `cls`, a `dataclass(frozen=True, slots=True)`, in a generated
    `__new__` (its `__init__` is then object's) with the parameters of its `__init__`: every
    default and factory evaluated first, then the instance made as its twin, its fields
    assigned as plain slots, and its class set to `cls` (or, for a subclass's instance, made as
    itself and assigned through the slots' descriptors), then `__post_init__`. Where `cls` has a
    static `_derive`, its fields with neither init nor default are `_derive(*init fields)`, a
    tuple in field order: values read often, set as cheaply as the others. Copies and pickles
    rebuild an instance through the same `__new__` (`__getnewargs_ex__`). Raises TypeError for
    any other class, or one whose `__init__` takes what it does not build (an InitVar)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a dataclass(frozen=True, slots=True)")
    names: dict[str, Any] = {"_MISSING": dataclasses.MISSING, "_new": object.__new__}
    twin = _twin(cls)
    positional, keyword, prelude, assigned = _fields(cls, names)
    names.update({f"_set_{f}": _slot(cls, f).__set__ for f, _ in assigned})
    through_slots = ["self = _new(cls)", *(f"_set_{f}(self, {value})" for f, value in assigned)]
    body = prelude.copy()
    if twin is None:
        body += through_slots
    else:  # made as the twin, assigned as plain slots, switched to the record's class; a
        # subclass's instance (whose layout may differ) through the slots' descriptors
        names.update(_cls=cls, _twin=twin)
        body += [
            "if cls is _cls:",
            "    self = _new(_twin)",
            *(f"    self.{f} = {value}" for f, value in assigned),
            "    self.__class__ = _cls",
            "else:",
            *(f"    {line}" for line in through_slots),
        ]
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    body = [f"    {line}" for line in [*body, "return self"]]
    signature = ", ".join(["cls", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __new__({signature}):\n" + "\n".join(body) + "\n"
    # from the class's own field names, as dataclasses does; named for tracebacks
    exec(compile(source, f"<quick_init {cls.__qualname__}>", "exec"), names)
    new = names["__new__"]
    new.__qualname__ = f"{cls.__qualname__}.__new__"
    new.__module__ = cls.__module__
    new.__annotations__ = cls.__init__.__annotations__
    if _parameters(new) != _parameters(cls.__init__):  # an InitVar, or anything not built here
        raise TypeError(f"{cls.__name__}: quick_init cannot build its __init__'s parameters")
    cls.__new__ = staticmethod(new)
    del cls.__init__  # object's: it accepts the arguments __new__ took
    cls.__init_subclass__ = _subclass_hook(new)
    cls.__getnewargs_ex__ = _arguments(cls)
    cls._quick_replace = _copier(cls)
    return cls


def _subclass_hook(record_new: Any) -> Any:
    """`__init_subclass__` for a record whose `__new__` is `record_new`: a subclass's instance
    is built by it, unless the subclass has an `__init__` of its own (a dataclass subclass's,
    which sets every field itself)."""

    def __new__(cls: type[Any], /, *args: Any, **kwargs: Any) -> Any:
        if cls.__init__ is object.__init__:
            return record_new(cls, *args, **kwargs)
        return object.__new__(cls)

    def hook(sub: type[Any]) -> None:
        sub.__new__ = staticmethod(__new__)

    return classmethod(hook)


def _arguments(cls: type[Any]) -> Any:
    """`__getnewargs_ex__` for `cls`: its init fields, positional and keyword-only, which
    `__new__` rebuilds a copy or an unpickled instance from."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    positional = ", ".join(f"self.{f.name}" for f in fields if f.kw_only is not True)
    keyword = ", ".join(f"'{f.name}': self.{f.name}" for f in fields if f.kw_only is True)
    arguments = f"({positional}{',' if positional else ''}), {{{keyword}}}"
    source = f"def __getnewargs_ex__(self):\n    return {arguments}\n"
    names: dict[str, Any] = {}
    exec(compile(source, f"<quick_init {cls.__qualname__} arguments>", "exec"), names)
    return names["__getnewargs_ex__"]


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
