"""Large traces made from the recorded ones, for the bounds (issue 36): the H100 run of
gpu_cos.json repeated step after step (each copy's times shifted past the last, its External
ids and correlations renumbered), and a trace of many small cpu_op events."""

from __future__ import annotations

import json
from pathlib import Path

TRACES = Path(__file__).resolve().parent


def repeated_gpu_trace(at_least_bytes: int) -> bytes:
    """gpu_cos.json with its events repeated until the JSON is at least `at_least_bytes`."""
    recorded = json.loads((TRACES / "gpu_cos.json").read_text())
    events = recorded["traceEvents"]
    step = json.dumps(events).encode()
    copies = max(1, at_least_bytes // len(step) + 1)
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(
        e["ts"] for e in events if "ts" in e
    )
    repeated = []
    for copy in range(copies):
        for event in events:
            shifted = dict(event)
            if "ts" in shifted:
                shifted["ts"] = event["ts"] + copy * span
            args = event.get("args")
            if isinstance(args, dict) and "External id" in args:
                shifted["args"] = {**args, "External id": args["External id"] + copy * 10**6}
            repeated.append(shifted)
    return json.dumps({**recorded, "traceEvents": repeated}).encode()


def many_small_events(count: int) -> bytes:
    """`count` cpu_op events of aten::cos on 1,000 fp32 elements, one after another."""
    args = '{"Input Dims":[[1000]],"Input type":["float"]}'
    event = '{"cat":"cpu_op","name":"aten::cos","ts":%d,"dur":1,"args":' + args + "}"
    return ('{"traceEvents":[' + ",".join(event % i for i in range(count)) + "]}").encode()
