"""Judging a measured function: by the service (POST /check with the `ops` workload), or on
a machine with no catalogued chip (`chip="local"`) by the engine itself, against the ceilings
probed here with PyTorch on the device the function's tensors live on (app/probe.py), cached
per machine (docs/formulas.md#the-local-chip).

Both answer the same fields: those of the service's /check answer that the report uses.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from app import formatting as fmt
from app.engine import Chip, Dtype, EngineError, Software, judge
from app.engine.fusion import MAX_OPS, estimate_ops
from app.engine.hardware import names_chip
from app.engine.ops import HostCosts, Op, special_evaluations
from app.engine.units import GIB, MIB
from app.local_probe import HostRates, LocalProfile, local_profile
from app.measure.measure_errors import MeasureError
from app.probe import Probe

DEFAULT_URL = "http://localhost:8000"
LOCAL = "local"
TIMEOUT_S = 60
# what the local probe copies and multiplies: on a GPU, LOCAL_GPU_COPY_BYTES and LOCAL_N^3
# products; on a CPU at most LOCAL_COPY_BYTES (app.probe.cpu_copy_bytes) and products growing
# to the plateau, at most LOCAL_CPU_N: about ten seconds on a laptop, once per machine
LOCAL_COPY_BYTES = GIB
LOCAL_GPU_COPY_BYTES = 256 * MIB
LOCAL_N = 8192
LOCAL_CPU_N = 4096
# set (to anything but 0) to probe again rather than read the cached ceilings
REPROBE_ENV = "ROOFCHECK_REPROBE"
# dtypes whose matrix peak, where the probe measured none, is taken for the fp32 one
_NARROW = (Dtype.TF32, Dtype.BF16, Dtype.FP16, Dtype.FP8, Dtype.INT8)


def default_url() -> str:
    """ROOFCHECK_URL, else the local service."""
    return os.environ.get("ROOFCHECK_URL") or DEFAULT_URL


def _memory_bytes() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 0.0


def chip_from_probe(result: Probe) -> Chip:
    """This machine as a chip: the probe's copy bandwidth and matmul rates as its peaks (and
    its vector peaks: on a CPU and on a GPU's fp32 path the same units do both), reached in
    full (sustained fractions 1). A dtype it did not measure runs at the fp32 rate."""
    rates = {Dtype(name): rate for name, rate in result.matmul_flops_per_s.items()}
    matrix = dict(rates)
    for dtype in _NARROW:
        matrix.setdefault(dtype, rates[Dtype.FP32])
    vector: dict[Dtype, float] = {d: r for d, r in rates.items() if d in (Dtype.FP32, Dtype.FP64)}
    return Chip(
        id=LOCAL,
        name=f"this machine ({result.device}, {result.backend})",
        memory_bytes=_memory_bytes(),
        memory_bandwidth=result.copy_bytes_per_s,
        matrix_peaks=matrix,
        vector_peaks=vector,
        sustained_matrix=1.0,
        sustained_memory=1.0,
    )


def host_costs(rates: HostRates | None) -> HostCosts | None:
    """A CPU's probed host rates as the engine prices them (None: a GPU's, priced as the
    catalog's chips are)."""
    if rates is None:
        return None
    return HostCosts(
        special_per_s=rates.special_per_s,
        first_touch_s_per_byte=rates.first_touch_s_per_byte,
        fresh_from_bytes=math.inf if rates.fresh_from_bytes is None else rates.fresh_from_bytes,
    )


_LOCAL: dict[str, LocalProfile] = {}


def local_ceilings(device: str = "cpu", *, reprobe: bool = False) -> LocalProfile:
    """This machine's ceilings on `device` (cpu, cuda:0, ...): from the cache of earlier runs
    (app.probe.local_profile), else probed; kept for the process. `reprobe` (or $REPROBE_ENV)
    probes again and rewrites the cache."""
    again = os.environ.get(REPROBE_ENV, "0") not in ("", "0")
    if reprobe or device not in _LOCAL:
        try:
            torch = importlib.import_module("torch")
        except ImportError as error:  # measure() needs torch first: another caller's mistake
            raise MeasureError("chip='local' probes with PyTorch: install it") from error
        _LOCAL[device] = local_profile(
            torch,
            device,
            copy_bytes=LOCAL_GPU_COPY_BYTES if device.startswith("cuda") else LOCAL_COPY_BYTES,
            n=LOCAL_N,
            cpu_n=LOCAL_CPU_N,
            reprobe=reprobe or again,
        )
    return _LOCAL[device]


def forget_local() -> None:
    """Forget the ceilings kept for this process (the cache files stay)."""
    _LOCAL.clear()


def ceilings(profile: LocalProfile) -> dict[str, Any]:
    """The ceilings a local answer was judged against, and where they came from."""
    result, host = profile.probe, profile.host
    return {
        "device": result.device,
        "backend": result.backend,
        "software": result.software,
        "date": result.date,
        "source": "cache" if profile.cached else "probe",
        "cache_file": str(profile.path),
        "copy_bytes_per_s": result.copy_bytes_per_s,
        "matmul_flops_per_s": result.matmul_flops_per_s,
        "special_per_s": None if host is None else host.special_per_s,
        "first_touch_s_per_byte": None if host is None else host.first_touch_s_per_byte,
        "fresh_from_bytes": None if host is None else host.fresh_from_bytes,
    }


def ceilings_line(answer: dict[str, Any], ops: Sequence[Op]) -> str:
    """The ceilings a local answer used, as the report prints them: the copy bandwidth, the
    matmul rates, the rates of the transcendental functions `ops` evaluate, the first touch,
    and whether they were probed now or read from the cache (with its date)."""
    c = answer["ceilings"]
    parts = [f"copy {fmt.rate(c['copy_bytes_per_s'], 'B/s')}"]
    parts += [
        f"{dtype} matmul {fmt.rate(rate, 'FLOP/s')}"
        for dtype, rate in c["matmul_flops_per_s"].items()
    ]
    used = sorted({name for op in ops for name in special_evaluations(op)})
    special = c["special_per_s"] or {}
    parts += [f"{name} {fmt.rate(special[name], '/s')}" for name in used if name in special]
    if c["fresh_from_bytes"] is not None:
        parts.append(
            f"first touch {fmt.seconds(c['first_touch_s_per_byte'] * 1e6)}/MB for outputs "
            f"from {fmt.bytes_(c['fresh_from_bytes'])}"
        )
    where = (
        f"read from the cache of {c['date']} ({c['cache_file']}; --reprobe measures again)"
        if c["source"] == "cache"
        else f"probed now, {c['date']} (cached in {c['cache_file']})"
    )
    return f"{', '.join(parts)}; {where}"


def _stale(profile: LocalProfile, verdict: str) -> list[str]:
    """The sentence of a run faster than the ceilings it was judged against: they are this
    machine's best only if probed while it was idle."""
    if verdict != "faster_than_roofline":
        return []
    when = "read from the cache" if profile.cached else "probed"
    return [
        f"This run beat the ceilings {when} ({profile.probe.date}): a probe on a busy "
        f"machine measures less than its best; probe again on an idle one (--reprobe, "
        f"reprobe=True or {REPROBE_ENV}=1)."
    ]


def local_check(
    ops: Sequence[Op],
    measured_s: float,
    stack: Software,
    device: str = "cpu",
    *,
    groups: Sequence[Sequence[int]] = (),
    reprobe: bool = False,
) -> dict[str, Any]:
    """The /check answer's fields, computed here against this machine's ceilings on
    `device` (local_ceilings), with the ceilings used and where they came from; `groups`: the
    operators run fused, as the `ops` workload's."""
    profile = local_ceilings(device, reprobe=reprobe)
    chip = chip_from_probe(profile.probe)
    try:
        estimate = estimate_ops(ops, chip, stack, groups, host=host_costs(profile.host))
        judgement = judge(estimate.roofline, measured_s)
    except EngineError as error:
        raise MeasureError(f"on {chip.name}: {error}") from error
    roof = estimate.roofline
    return {
        "chip": {"id": chip.id, "name": chip.name},
        "stack": str(stack),
        "ceilings": ceilings(profile),
        "measured_time_s": measured_s,
        "expected_time_s": roof.expected_time,
        "realistic_time_s": roof.realistic_time,
        "realistic_range_s": [roof.realistic_low, roof.realistic_high],
        "bound": str(roof.bound),
        "kernels": roof.kernels,
        "ratio": judgement.ratio,
        "verdict": str(judgement.verdict),
        "against_published": str(judgement.against_published),
        "unfused_time_s": estimate.unfused_time,
        "fused_time_s": estimate.fused_time,
        "launch_overhead_s": estimate.launch_overhead,
        "against_fusion": str(estimate.against_fusion(measured_s)),
        "advice": [
            *_stale(profile, str(judgement.verdict)),
            estimate.fusion_advice(measured_s),
            *judgement.advice,
        ],
        "ops": [
            {
                "name": cost.op.name,
                "flops": cost.work.flops,
                "bytes": cost.work.bytes,
                "expected_time_s": cost.expected_time,
                "bound": None if cost.bound is None else str(cost.bound),
            }
            for cost in estimate.ops
        ],
    }


def _detail(status: int, body: Any) -> str:
    detail = body.get("detail") if isinstance(body, dict) else body
    if isinstance(detail, list):
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', []))}: {e.get('msg')}" for e in detail
        )
    elif isinstance(detail, dict):
        hint = detail.get("suggestions")
        more = f" (did you mean {', '.join(hint)}?)" if hint else ""
        detail = f"{detail.get('message', detail)}{more}"
    return f"the service answered {status}: {detail}"


def _call(
    request: urllib.request.Request | str, url: str, answers: Collection[int] = ()
) -> dict[str, Any]:
    """The service's JSON answer (an error status in `answers` too: 412, stored but gated);
    MeasureError with its detail, or when it is unreachable."""
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        if exc.code in answers:
            raw = exc.read()
        else:
            try:
                detail = json.load(exc)
            except ValueError:
                detail = {"detail": exc.reason}
            raise MeasureError(_detail(exc.code, detail)) from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise MeasureError(f"cannot reach {url}: {exc}") from exc
    try:
        answer = json.loads(raw)
    except ValueError:  # no roofcheck service at that URL
        answer = None
    if not isinstance(answer, dict):
        raise MeasureError(f"{url} answered no JSON object: is roofcheck serving there?")
    return answer


def resolve_chip(url: str, chip: str) -> dict[str, Any]:
    """The catalog chip an id or alias names (GET /chips/{chip}): its id, name, vendor, ...;
    MeasureError with the service's suggestions when it names none."""
    name = chip.strip()
    answer: dict[str, Any] = {}
    if name.strip("."):  # a path of dots would name the list of chips, or nothing
        answer = _call(f"{url.rstrip('/')}/chips/{urllib.parse.quote(name, safe='')}", url)
    if not isinstance(answer.get("id"), str):
        raise MeasureError(f"unknown chip {chip!r}: give a catalog id or alias, or {LOCAL}")
    return answer


def device_mismatch(
    devices: Collection[str], chip: dict[str, Any], names: Mapping[str, str] | None = None
) -> str | None:
    """Why a run on `devices` (its tensors' devices: cpu, cuda:0, ...) is no run on the
    catalog `chip`, or None when it may be. The catalog's chips are accelerators, none a
    CPU: a run whose tensors all stay on the host did not run on one. A run on GPUs whose
    `names` (device -> the name PyTorch gives it) none name the chip ran on another chip; a
    device without a name (mps) may be the chip."""
    target = f"{chip['id']} ({chip['name']})"
    accelerators = sorted(device for device in devices if not device.startswith("cpu"))
    if not accelerators:
        return f"the function ran on cpu (its tensors' device), not on {target}, an accelerator"
    named = {device: names[device] for device in accelerators if names and device in names}
    if len(named) < len(accelerators) or any(
        names_chip(name, chip["id"]) for name in named.values()
    ):
        return None
    ran_on = ", ".join(f"{name} ({device})" for device, name in named.items())
    return f"the function ran on {ran_on}, not on {target}"


def check_op_count(count: int) -> None:
    """MeasureError when the service takes fewer operators than the function ran."""
    if count > MAX_OPS:
        raise MeasureError(
            f"the function ran {count} operators; the service takes at most {MAX_OPS}: "
            "measure a smaller part of it"
        )


def service_check(
    url: str, chip: str, stack: Software, workload: dict[str, Any], measured_s: float
) -> dict[str, Any]:
    """POST /check with the `ops` workload and the measured median (at most MAX_OPS: see
    check_op_count)."""
    body = {"chip": chip, "stack": str(stack), "workload": workload, "measured_time_s": measured_s}
    request = urllib.request.Request(
        f"{url.rstrip('/')}/check",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    return _call(request, url)


def store(url: str, body: dict[str, Any], token: str | None) -> dict[str, Any]:
    """POST /measurements, gated on a regression: the stored run's answer, also when the gate
    failed it (412). `token`: the write token, where the service restricts writes."""
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"{url.rstrip('/')}/measurements?fail_on=regression",
        data=json.dumps(body).encode(),
        headers=headers,
    )
    return _call(request, url, answers=(412,))
