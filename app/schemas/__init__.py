"""The bodies the use cases take and answer (pydantic models), shared by the JSON API, the web
pages and the CLI: requests (`requests`, `queries`), calculation answers (`answers`),
measurements (`measurement_bodies`) and the catalogs (`catalog_bodies`)."""
