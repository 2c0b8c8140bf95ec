"""Validation against published measurements: `python -m app.validation` fits the engine's
published-runs table and writes the report. `runs` reads and places the rows, `calibrate`
fits the table (and the same with each source left out), `report` writes docs/validation.md."""
