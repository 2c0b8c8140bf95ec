"""Persistence: SQLAlchemy 2 models, sessions, migrations and queries (no HTTP here)."""
