"""What a measured function's numbers say, in sentences: the advice made concrete (which ops,
how many kernels, which copy or synchronisation on which line) and the printed report."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from app import formatting as fmt
from app.engine import Kind
from app.engine.advice_lines import host_advice
from app.engine.ops import is_view, op_work
from app.engine.verdict import HOST_BOUND, Verdict, host_bound
from app.measure.op_counts import Counts, Event
from app.measure.timing import Timing

FUSION_GAIN = 0.9  # fusion is worth a sentence when the fused floor is under this share
SLOW_FIRST_CALL = 10.0  # a first call this many times the median is worth a sentence
TOP_OPS = 3


def _pointwise(counts: Counts) -> list[str]:
    """The short names of the kernels that are neither matmuls nor attention (pointwise ops,
    norms, reductions, copies): the ones a compiler fuses."""
    special = {e.index for e in (*counts.copies, *counts.syncs)} | set(counts.opaque)
    return [
        counts.recorded[i].short
        for i, op in enumerate(counts.ops)
        if not is_view(op) and i not in special and op_work(op).kind is Kind.ELEMENTWISE
    ]


def _names(shorts: Sequence[str]) -> str:
    return ", ".join(f"{n} {name}" if n > 1 else name for name, n in Counter(shorts).items())


def _spans(indices: Sequence[int]) -> str:
    """'0-2, 4' for 0, 1, 2, 4: runs of consecutive op indices as ranges."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _at(events: Sequence[Event]) -> str:
    first = events[0]
    where = f" ({first.where})" if first.where else ""
    more = f", {len(events)} times from that line: in a loop" if len(events) > 1 else ""
    ops = "op" if len(events) == 1 else "ops"
    return f"at {ops} {_spans([e.index for e in events])}{where}{more}"


def _by_line(events: Sequence[Event]) -> list[list[Event]]:
    groups: defaultdict[tuple[str | None, str], list[Event]] = defaultdict(list)
    for event in events:
        groups[(event.where, event.what)].append(event)
    return list(groups.values())


def compiled_by(fn: object) -> str | None:
    """What compiled `fn`, or None: `torch.compile` (the wrapper it returns, around a function,
    a bound method or a module, keeps what it wraps in `_torchdynamo_orig_callable`) or
    `nn.Module.compile` (the module compiled in place keeps its compiled call in
    `_compiled_call_impl`). Read by attribute, so that no PyTorch is needed to ask."""
    if getattr(fn, "_torchdynamo_orig_callable", None) is not None:
        return "torch.compile"
    if getattr(fn, "_compiled_call_impl", None) is not None:
        return "nn.Module.compile"
    return None


def judged_stack(fn: object, stack: str | None) -> tuple[str, tuple[str, ...]]:
    """The stack `fn` is judged on, and the line that says why when it was detected: the one
    given, else `compiled` for a compiled callable (`compiled_by`), else `eager`."""
    if stack is not None:
        return stack, ()
    if (by := compiled_by(fn)) is None:
        return "eager", ()
    return "compiled", (
        f"Detected as compiled ({by}): judged on the compiled stack (give the stack eager to "
        "judge it as eager PyTorch).",
    )


def fusion_advice(counts: Counts, answer: dict[str, Any]) -> list[str]:
    """The pointwise kernels a compiler would fuse, and the floor fused; compiled already,
    what is left to look for when the time is above that floor."""
    shorts = _pointwise(counts)
    if (
        len(shorts) < 2
        or answer.get("against_fusion") == "faster_than_fused"
        or answer["fused_time_s"] > FUSION_GAIN * answer["unfused_time_s"]
    ):
        return []
    ops, kernels = f"{len(shorts)} elementwise ops ({_names(shorts)})", len(shorts)
    unfused = fmt.bytes_(counts.unfused_bytes)
    fused = (
        f"fused, the function moves {fmt.bytes_(counts.fused_bytes)} and its floor is "
        f"{fmt.seconds(answer['fused_time_s'])}"
    )
    if answer["stack"] == "compiled":
        return [
            f"Compiled, its {ops} should run fused: as {kernels} kernels they move {unfused}, "
            f"{fused}; above that floor, look for graph breaks (torch._dynamo.explain) or "
            "ops the compiler left unfused."
        ]
    return [
        f"{ops} run as {kernels} kernels, moving {unfused} in all: {fused}; compile "
        "(torch.compile) or fuse them."
    ]


def _fixed_cost(counts: Counts, answer: dict[str, Any]) -> str:
    """The fixed cost of the ops as the answer prices them (its `kernels`, each launched), when
    it outlasts the work: kernel launches on a device; on the CPU, which launches no kernels,
    the framework's dispatch of each op."""
    kernels = int(answer["kernels"])
    cost = fmt.seconds(answer["launch_overhead_s"])
    work = fmt.seconds(answer["expected_time_s"])
    if counts.on_cpu:
        return (
            f"{kernels} ops dispatched one at a time by the framework cost {cost} alone, more "
            f"than the work ({work}): overhead-bound; a CPU launches no kernels, so give each "
            "op more work (larger tensors, fewer and batched ops, values kept in tensors)."
        )
    launches = "launch takes" if kernels == 1 else "launches take"
    remedy = (
        'capture its kernels in CUDA graphs (torch.compile\'s mode="reduce-overhead")'
        if answer["stack"] == "compiled"
        else "capture it in a CUDA graph or compile it"
    )
    return (
        f"{kernels} kernel {launches} {cost} alone, more than the work ({work}): "
        f"overhead-bound; {remedy}, or give each kernel more work."
    )


def _copy_share(copies: Sequence[Event], timing: Timing, answer: dict[str, Any]) -> str:
    """What share of the median the copies take at best: their ideal times over it."""
    rows = answer.get("ops", [])
    ideal = sum(rows[e.index]["expected_time_s"] for e in copies if e.index < len(rows))
    return (
        f": at best {fmt.seconds(ideal)}, {ideal / timing.median_s:.0%} of the measured time"
        if ideal > 0
        else ""
    )


def host_line(counts: Counts, timing: Timing, answer: dict[str, Any] | None) -> list[str]:
    """The host-bound line of a run on a device whose host was busy throughout it (process
    CPU time >= HOST_BOUND of the wall time, in a run slower than its floor where judged:
    docs/formulas.md#host-bound-runs); on the CPU the CPU time counts threads, not waiting."""
    share = timing.cpu_share
    if counts.on_cpu or share < HOST_BOUND:
        return []
    if answer is not None and not host_bound(share, Verdict(answer["verdict"])):
        return []
    return [host_advice(share)]


def cpu_words(counts: Counts, timing: Timing) -> str:
    """The CPU time beside the wall time, as the report's time line says it: on a device the
    host's share of the run, on the CPU the threads busy on average."""
    cpu = f"CPU time {fmt.seconds(timing.cpu_median_s)}"
    if counts.on_cpu:
        return f"{cpu}, {timing.cpu_share:.1f} threads busy on average"
    return f"{cpu} on the host, {timing.cpu_share:.0%} of the wall time"


def advice(counts: Counts, timing: Timing, answer: dict[str, Any] | None) -> list[str]:
    """The concrete advice, most telling first (a busy host), then the service's own."""
    lines = host_line(counts, timing, answer)
    if answer is not None:
        lines += fusion_advice(counts, answer)
    for group in _by_line(counts.copies):
        total = sum(e.bytes for e in group)
        share = "" if answer is None else _copy_share(group, timing, answer)
        lines.append(f"A copy {group[0].what} of {fmt.bytes_(total)} {_at(group)}{share}.")
    for group in _by_line(counts.syncs):
        op = counts.recorded[group[0].index].short
        call = ".item() or a Python bool/float of a tensor" if op == "_local_scalar_dense" else op
        lines.append(
            f"A read of a tensor's values into Python ({call}) {_at(group)}: on the CPU no "
            "device is waited for, but each read is an op dispatched of its own; keep the "
            "values in a tensor, or read them once after the loop."
            if counts.on_cpu
            else f"A synchronisation ({call}) {_at(group)}: the host waits for the device "
            "each time; keep the value on the device, or read it once after the loop."
        )
    if answer is not None and answer["launch_overhead_s"] > answer["expected_time_s"]:
        lines.append(_fixed_cost(counts, answer))
    if timing.first_call_s > SLOW_FIRST_CALL * timing.median_s:
        lines.append(
            f"The first call took {fmt.seconds(timing.first_call_s)}, "
            f"{timing.first_call_s / timing.median_s:.0f}x the median: compilation, "
            "allocation or caching; warm up before timing (as done here)."
        )
    if not timing.converged:
        lines.append(
            f"The median is known to +-{timing.relative_ci:.1%} only, after {timing.repeats} "
            f"runs (target +-{timing.target_ci:.0%}): the machine is noisy; time it longer "
            "or on an idle machine."
        )
    syncs = {e.index for e in counts.syncs}
    if opaque := [counts.recorded[i].short for i in counts.opaque if i not in syncs]:
        names = _names(opaque)
        lines.append(
            f"{len(opaque)} ops the engine has no formula for ({names}) are counted by "
            "their tensors' bytes and PyTorch's FLOPs (0 where it counts none)."
        )
    if answer is not None:
        lines.extend(answer.get("advice", []))
    return lines


def top_ops(answer: dict[str, Any], counts: Counts) -> list[str]:
    """The operators that dominate the expected time, with their shares."""
    rows = list(enumerate(answer.get("ops", [])))
    total = sum(row["expected_time_s"] for _, row in rows) or 1.0
    rows.sort(key=lambda item: -item[1]["expected_time_s"])
    return [
        f"#{i} {row['name']} {row['expected_time_s'] / total:.0%} "
        f"({fmt.seconds(row['expected_time_s'])}, {row['bound']}-bound"
        + (f", {where}" if (where := counts.recorded[i].where) else "")
        + ")"
        for i, row in rows[:TOP_OPS]
        if row["expected_time_s"] > 0
    ]


def report(
    name: str,
    timing: Timing,
    counts: Counts,
    answer: dict[str, Any] | None,
    advice_lines: Sequence[str],
    *,
    warnings: Sequence[str] = (),
) -> str:
    """The printed report: the warnings first, under the title."""
    t = timing
    judged = "" if answer is None else f" on {answer['chip']['id']} ({answer['stack']})"
    lines = [
        f"roofcheck measure: {name}{judged}",
        *(f"  WARNING  {warning}" for warning in warnings),
        f"  time     median {fmt.seconds(t.median_s)} +-{t.relative_ci:.1%} (95% CI "
        f"{fmt.seconds(t.ci_low_s)}-{fmt.seconds(t.ci_high_s)}), min {fmt.seconds(t.min_s)}, "
        f"max {fmt.seconds(t.max_s)}; {t.repeats} runs after {t.warmup} warm-up ({t.clock}); "
        f"first call {fmt.seconds(t.first_call_s)}; {cpu_words(counts, t)}",
        f"  work     {fmt.flops(counts.engine_flops)} (PyTorch counts "
        f"{fmt.flops(counts.flops)}); {fmt.bytes_(counts.unfused_bytes)} with each op its own "
        f"kernel, {fmt.bytes_(counts.fused_bytes)} as one; "
        + (
            f"{len(counts.ops)} ops on the CPU (no kernel launches), "
            f"{len(counts.syncs)} reads of values into Python"
            if counts.on_cpu
            else f"{len(counts.ops)} ops, {counts.launches} kernel launches, "
            f"{len(counts.copies)} copies between devices, "
            f"{len(counts.syncs)} synchronisations"
        ),
    ]
    if answer is not None:
        lines += [
            f"  expect   roofline {fmt.seconds(answer['expected_time_s'])}; each op its own "
            f"kernel {fmt.seconds(answer['unfused_time_s'])}; fused "
            f"{fmt.seconds(answer['fused_time_s'])}; realistic "
            f"{fmt.seconds(answer['realistic_time_s'])}",
            f"  verdict  {answer['verdict']}: {answer['ratio']:.2f}x the roofline, "
            f"{answer['against_fusion']}",
            "  top ops  " + "; ".join(top_ops(answer, counts)),
        ]
    lines += [f"  - {line}" for line in advice_lines]
    return "\n".join(lines)
