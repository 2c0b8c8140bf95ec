"""quick_init builds a frozen, slotted dataclass exactly as its generated __init__ does, and
records.replace copies one exactly as dataclasses.replace does."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from dataclasses import InitVar, dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import app.engine
from app.engine.records import quick_init, replace
from app.engine.training.layout import layout
from app.engine.training.options import Parallelism
from tests.engine.models import GPT2, LLAMA_8B, MIXTRAL

KEYWORD, ONLY = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY


def _features(decorate: Any) -> type[Any]:
    """One class with every kind of field quick_init builds, decorated or not."""

    @decorate
    @dataclass(frozen=True, slots=True)
    class Features:
        name: str
        count: int = 3
        tags: tuple[str, ...] = field(default_factory=tuple)
        derived: int = field(init=False, default=0)
        late: int = field(init=False)  # set by __post_init__
        scale: float = field(default=1.0, kw_only=True)

        def __post_init__(self) -> None:
            object.__setattr__(self, "late", self.count * 2)

    return Features


Quick, Plain = _features(quick_init), _features(lambda cls: cls)


@given(
    st.text(max_size=5),
    st.integers(-5, 5),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=2), max_size=3),
)
def test_same_fields_equality_and_repr_as_the_dataclass(name, count, scale, tags):
    tags = tuple(tags)
    quick, plain = Quick(name, count, tags, scale=scale), Plain(name, count, tags, scale=scale)
    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert repr(quick).split("(", 1)[1] == repr(plain).split("(", 1)[1]
    assert quick == Quick(name, count, tags, scale=scale) and quick != Quick(f"{name}!")
    assert hash(quick) == hash(Quick(name, count, tags, scale=scale))
    assert quick.late == 2 * count and quick.derived == 0  # __post_init__ ran, init=False set


def test_defaults_factories_and_errors_as_the_dataclass():
    calls: list[int] = []

    def empty() -> list[int]:
        calls.append(1)
        return []

    @quick_init
    @dataclass(frozen=True, slots=True)
    class Fresh:
        items: list[int] = field(default_factory=empty)

    assert Fresh().items is not Fresh().items and len(calls) == 2 and Fresh([1]).items == [1]
    assert Quick("a").tags == ()
    assert dataclasses.astuple(Quick("a")) == dataclasses.astuple(Plain("a"))
    assert dataclasses.replace(Quick("a", 1), count=4).late == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        Quick("a").count = 2
    for args, kwargs in (((), {}), (("a", 1, [], 2.0), {}), (("a",), {"other": 1})):
        with pytest.raises(TypeError):
            Quick(*args, **kwargs)
    parameters = [inspect.signature(c).parameters.values() for c in (Quick, Plain)]
    assert [[(p.name, p.kind, p.annotation) for p in each] for each in parameters] == [
        [
            ("name", KEYWORD, "str"),
            ("count", KEYWORD, "int"),
            ("tags", KEYWORD, "tuple[str, ...]"),
            ("scale", ONLY, "float"),
        ]
    ] * 2


def test_refuses_what_it_cannot_build():
    @dataclass(slots=True)
    class Mutable:
        x: int

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        x: int
        seed: InitVar[int] = 0

    for cls in (Mutable, WithInitVar):
        with pytest.raises(TypeError):
            quick_init(cls)


def test_every_frozen_engine_record_uses_it():
    """So no engine record is left on the slower generated __init__."""
    records = [
        value
        for info in pkgutil.walk_packages(app.engine.__path__, "app.engine.")
        for value in vars(importlib.import_module(info.name)).values()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and value.__dataclass_params__.frozen  # type: ignore[attr-defined]
        and value.__module__.startswith("app.engine")
    ]
    assert len(records) > 40
    slow = [r.__name__ for r in records if "quick_init" not in r.__new__.__code__.co_filename]
    assert slow == []
    assert all(r.__init__ is object.__init__ for r in records)  # none built twice


def _outcome(copy: Any, record: Any, changes: dict[str, Any]) -> Any:
    """A copy's fields, or the class of the error it raised."""
    try:
        return dataclasses.astuple(copy(record, **changes))
    except (TypeError, ValueError) as error:
        return type(error)


@given(
    st.integers(-5, 5),
    st.dictionaries(
        st.sampled_from(["name", "count", "tags", "scale", "derived", "late", "other"]),
        st.integers(-5, 5),
        max_size=4,
    ),
)
def test_replace_copies_as_dataclasses_replace(count, changes):
    # the same fields, __post_init__ run again on the copy (late follows count), and the same
    # error for a field set by __post_init__ or a name the class lacks
    for cls in (Quick, Plain):
        record = cls("a", count, ("t",), scale=0.5)
        assert _outcome(replace, record, changes) == _outcome(dataclasses.replace, record, changes)
    copy = replace(Quick("a", count), count=count + 1)
    assert type(copy) is Quick and copy.late == 2 * (count + 1)


def test_replace_copies_a_subclass_as_itself():
    # a subclass of a record, not itself built by quick_init, is copied by dataclasses.replace,
    # never as an instance of its base
    @dataclass(frozen=True, slots=True)
    class Derived(Quick):  # type: ignore[misc,valid-type]
        extra: int = 7

    copy = replace(Derived("a", 1, extra=9), count=2)
    assert type(copy) is Derived and (copy.count, copy.extra, copy.late) == (2, 9, 4)


@pytest.mark.parametrize("arch", [LLAMA_8B, MIXTRAL, GPT2])
def test_an_architecture_hashes_as_its_fields_do_computed_once(arch):
    """The hash an architecture keeps (it keys the engine's caches) is that of its compared
    fields, equal for equal architectures, and a copy with a change computes its own."""
    fields = tuple(getattr(arch, f.name) for f in dataclasses.fields(arch) if f.compare)
    twin = dataclasses.replace(arch)
    assert twin == arch and twin is not arch
    assert hash(arch) == hash(twin) == hash(fields)
    assert arch._hash == hash(fields)  # kept for the next lookup
    deeper = replace(arch, layers=arch.layers + 1)
    assert deeper != arch and hash(deeper) == hash((fields[0], arch.layers + 1, *fields[2:]))
    assert {arch: 1}[twin] == 1
    assert "_hash" not in repr(arch)


@given(st.text(max_size=5), st.integers(-5, 5), st.floats(allow_nan=False))
def test_copied_and_pickled_as_the_dataclass(name, count, scale):
    """Copies and pickles rebuild a record through its `__new__`, with its init fields: the
    same fields (derived and post-init ones recomputed) and class as the dataclass's own."""
    for cls in (Quick, Plain):
        record = cls(name, count, (name,), scale=scale)
        for twin in (copy.copy(record), copy.deepcopy(record)):
            assert type(twin) is cls and twin == record and twin is not record
            assert dataclasses.astuple(twin) == dataclasses.astuple(record)


def test_engine_records_pickle():
    """An engine record with derived fields (a layout) and one with nested records (an
    architecture) come back from a pickle equal, their derived fields computed again."""
    # 64 sequences over dp 4: 16 a replica, 8 micro-batches of 2; (pp-1)/(m+pp-1) = 3/11
    lay = layout(LLAMA_8B, 2, 64, Parallelism(dp=4, pp=4, micro_batch=2))
    for record in (lay, MIXTRAL):
        back = pickle.loads(pickle.dumps(record))
        assert back == record and type(back) is type(record)
    assert pickle.loads(pickle.dumps(lay)).bubble_fraction == lay.bubble_fraction == 3 / 11


def test_built_as_its_twin_and_always_left_as_itself():
    """The instance is made as a plain twin class while its fields are assigned, then set to
    the record's class:
    what comes out is of the record's class and as frozen; a subclass's instance keeps its
    own class, and a record whose slots are partly inherited (no twin fits its layout) is
    built through the descriptors, the same fields either way."""

    class Sub(Quick):  # type: ignore[misc,valid-type]
        __slots__ = ()

    class Loose(Quick):  # type: ignore[misc,valid-type]  # has a __dict__: another layout
        pass

    @quick_init
    @dataclass(frozen=True, slots=True)
    class Extended(Quick):  # type: ignore[misc,valid-type]
        extra: int = 7

    for cls in (Quick, Sub, Loose, Extended):
        record = cls("a", 2, ("t",), scale=0.5)
        assert type(record) is cls
        assert (record.name, record.count, record.tags, record.scale, record.late) == (
            "a", 2, ("t",), 0.5, 4
        )  # fmt: skip
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.count = 3
    assert Quick.__new__.__globals__["_twin"] is not None
    assert "_twin" not in Extended.__new__.__globals__  # its base's slots: no twin
    assert Extended("a").extra == 7 and replace(Extended("a"), extra=1).extra == 1


def test_derived_fields_are_set_from_derive_at_construction_and_at_every_copy():
    @quick_init
    @dataclass(frozen=True, slots=True)
    class Box:
        width: int
        height: int = 2
        area: int = field(init=False, repr=False, compare=False)
        half: float = field(init=False, repr=False, compare=False)

        @staticmethod
        def _derive(width: int, height: int) -> tuple[int, float]:
            return width * height, width * height / 2

    box = Box(3)
    assert (box.area, box.half) == (6, 3.0)
    assert (replace(box, height=5).area, dataclasses.replace(box, width=4).half) == (15, 4.0)
    assert box == Box(3) and repr(box).endswith("Box(width=3, height=2)")
