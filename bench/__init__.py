"""Benchmarks: `python -m bench.load` (HTTP and engine), `python -m bench.data_scale` (1M rows)."""
