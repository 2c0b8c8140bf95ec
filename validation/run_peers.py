"""Run peer calculators on the transformer rows of measurements.csv; write peers.csv.

Run in a separate environment that has the peers (never a dependency of roofcheck):
    python3 -m venv .venv-peers && .venv-peers/bin/pip install llm-analysis
    .venv-peers/bin/python validation/run_peers.py
llm-analysis runs offline from its bundled model and GPU configs, with its default
efficiencies. LLM-Viewer is not in the package lists available here and is not run.
Rows a peer cannot express are left out.
"""

from __future__ import annotations

import csv
import json
import logging
from importlib.metadata import version
from pathlib import Path

from llm_analysis.analysis import infer  # type: ignore[import-not-found]

HERE = Path(__file__).resolve().parent
MODELS = {"llama-2-7b": "NousResearch_Llama-2-7b-hf"}
GPUS = {"a100-sxm4-80gb": "a100-sxm-80gb", "h100-sxm5-80gb": "h100-sxm-80gb"}
DTYPES = {"bf16": "w16a16e16", "fp16": "w16a16e16", "fp8": "w8a8e16"}


def main() -> None:
    """Predict every transformer generate row llm-analysis can express."""
    out = []
    for row in csv.DictReader((HERE / "measurements.csv").open(encoding="utf-8")):
        params = json.loads(row["params"])
        if row["workload"] != "transformer" or params["phase"] != "generate":
            continue
        if params["model"] not in MODELS or row["chip"] not in GPUS:
            continue
        result = infer(
            model_name=MODELS[params["model"]],
            gpu_name=GPUS[row["chip"]],
            dtype_name=DTYPES[params["dtype"]],
            log_level="ERROR",
            batch_size_per_gpu=params["batch"],
            tp_size=params.get("tp", 1),
            seq_len=params["seq_len"],
            num_tokens_to_generate=params["gen_len"],
        )
        out.append(
            {
                "id": row["id"],
                "peer": "llm-analysis",
                "peer_version": version("llm-analysis"),
                "predicted_s": result["total_latency"],
            }
        )
    with (HERE / "peers.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["id", "peer", "peer_version", "predicted_s"])
        writer.writeheader()
        writer.writerows(out)
    logging.getLogger(__name__).info("wrote %d peer predictions", len(out))


if __name__ == "__main__":
    main()
