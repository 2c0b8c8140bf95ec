"""Running a function once under PyTorch's dispatch: every aten operator it runs, with its
tensors (shape, dtype, device, id), PyTorch's FLOPs and the user's source line.

Imported only when measuring: it needs PyTorch (the `measure` extra). Tensors are named by
identity (t0, t1, ...: an in-place operator writes the tensor it reads; a view is a new one),
held weakly so that a freed tensor's name is never reused for another.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any

import torch
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry
from torch.utils.weak import WeakIdKeyDictionary

from app.measure.op_counts import ALLOCATIONS, RecordedOp, TensorInfo
from app.measure.timing import Clock

_SKIPPED = (os.path.dirname(torch.__file__), os.path.dirname(__file__))


def user_line(skipped: Sequence[str] = _SKIPPED) -> str | None:
    """'script.py:12 in fn': the innermost frame of the measured call outside PyTorch and this
    package. Frames outside the call (`record`'s and its callers: roofcheck's command line,
    the user's call of `measure`) are not the op's source: None where the call runs
    PyTorch's code alone (a module made of PyTorch's layers)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not record.__code__:
        path = frame.f_code.co_filename
        if not path.startswith(tuple(skipped)) and not path.startswith("<frozen"):
            shown = os.path.relpath(path)
            shown = path if shown.startswith("..") else shown
            return f"{shown}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


class Modules:
    """The nn.Modules running while it is active, innermost last (PyTorch's global forward
    hooks), each said by its path in the measured module and its class: 'module 0 (Linear)'
    for the first layer of an nn.Sequential measured; 'a Linear module' for the measured
    module itself, or one it does not hold."""

    def __init__(self, fn: object) -> None:
        # a compiled module (torch.compile's wrapper) is named by the module it wraps
        root = getattr(fn, "_orig_mod", fn)
        named = root.named_modules() if isinstance(root, torch.nn.Module) else []
        self._paths = {id(module): path for path, module in named}
        self._running: list[torch.nn.Module] = []
        self._hooks: list[Any] = []

    def innermost(self) -> str | None:
        """The module running now, or None outside any."""
        if not self._running:
            return None
        module = self._running[-1]
        path, kind = self._paths.get(id(module), ""), type(module).__name__
        return f"module {path} ({kind})" if path else f"a {kind} module"

    def __enter__(self) -> Modules:
        def enter(module: torch.nn.Module, _inputs: object) -> None:
            self._running.append(module)

        def leave(module: torch.nn.Module, _inputs: object, _output: object) -> None:
            self._running.pop()

        self._hooks = [
            register_module_forward_pre_hook(enter),
            register_module_forward_hook(leave, always_call=True),
        ]
        return self

    def __exit__(self, *_exc: object) -> None:
        for hook in self._hooks:
            hook.remove()


class Recorder(TorchDispatchMode):  # type: ignore[misc]
    """Records every aten operator dispatched while it is active (allocations left out)."""

    def __init__(self, modules: Modules) -> None:
        super().__init__()
        self.modules = modules
        self.ops: list[RecordedOp] = []
        self._names: Any = WeakIdKeyDictionary()
        self._next = 0

    def _info(self, tensor: Any) -> TensorInfo:
        name = self._names.get(tensor)
        if name is None:
            name = f"t{self._next}"
            self._next += 1
            self._names[tensor] = name
        return TensorInfo(
            shape=tuple(int(d) for d in tensor.shape),
            dtype=str(tensor.dtype).removeprefix("torch."),
            device=str(tensor.device),
            id=name,
            nbytes=int(tensor.numel()) * int(tensor.element_size()),
        )

    def _tensors(self, tree: Any) -> tuple[TensorInfo, ...]:
        return tuple(self._info(t) for t in tree_leaves(tree) if isinstance(t, torch.Tensor))

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        inputs = self._tensors((args, kwargs))
        out = func(*args, **kwargs)
        record = RecordedOp(func.name(), inputs, self._tensors(out))
        if record.short in ALLOCATIONS or not any(
            t.nbytes for t in (*record.inputs, *record.outputs)
        ):
            return out
        flops = _pytorch_flops(func, args, kwargs, out)
        where = user_line() or self.modules.innermost()
        causal = _argument(func, args, kwargs, "is_causal") is True
        self.ops.append(
            RecordedOp(record.name, record.inputs, record.outputs, flops, where, causal)
        )
        return out


def _argument(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> object:
    """The value the operator `func` was called with for its schema's argument `name`
    (positional, keyword or default); None where its schema has no such argument."""
    for index, argument in enumerate(func._schema.arguments):
        if argument.name == name:
            if index < len(args):
                return args[index]
            return kwargs.get(name, argument.default_value)
    return None


def _pytorch_flops(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: object
) -> float | None:
    """PyTorch's FLOP count of one operator call (FlopCounterMode's formula for it); None where
    it has none, or where its formula fails on the call: PyTorch 2.11's attention formula
    asserts that the key has as many heads as the query, which a grouped-query attention
    (enable_gqa) does not (seen on an H200), and the engine counts that operator itself."""
    formula = flop_registry.get(func._overloadpacket)
    if formula is None:
        return None
    try:
        return float(formula(*args, **kwargs, out_val=out))
    except (AssertionError, RuntimeError, TypeError, ValueError):
        return None


def record(fn: Callable[..., object], args: Sequence[object]) -> tuple[list[RecordedOp], float]:
    """Run `fn(*args)` once: its operators, and PyTorch's FLOP count of them (the sum of
    FlopCounterMode's formulas over the operators that have one)."""
    modules = Modules(fn)
    recorder = Recorder(modules)
    # with every torch.compile directive ignored: a compiled callable run under a dispatch
    # mode falls back to eager for good, and every call timed after the recording would time
    # the eager function, not the compiled one
    with torch.compiler.set_stance("force_eager"), modules, recorder:
        fn(*args)
    return recorder.ops, sum(op.flops or 0.0 for op in recorder.ops)


def devices(args: Sequence[object], ops: Sequence[RecordedOp]) -> set[str]:
    """The devices of the function's tensors: its arguments' and its operators' (cpu,
    cuda:0, ...)."""
    tensors = [t for t in tree_leaves(list(args)) if isinstance(t, torch.Tensor)]
    found = {str(t.device) for t in tensors}
    return found | {t.device for op in ops for t in (*op.inputs, *op.outputs)}


def device_names(devices: Collection[str]) -> dict[str, str]:
    """The name PyTorch gives each CUDA (or ROCm) device among `devices` ("NVIDIA H200")."""
    return {
        device: str(torch.cuda.get_device_name(torch.device(device)))
        for device in devices
        if device.startswith("cuda")
    }


def cuda_events_clock() -> Clock:
    """One call timed with CUDA events on the current stream, waiting for its end."""
    cuda = torch.cuda

    def clock(call: Callable[[], object]) -> float:
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return clock


def synchronize() -> None:
    """Wait for the device (no-op without CUDA)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
