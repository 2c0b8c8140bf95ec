"""What the service does at start-up, before its first request."""

import os
import subprocess
import sys

from app.settings import ROOT


def test_the_service_builds_its_openapi_schema_before_serving(tmp_path):
    # `uvicorn app.main:app` builds the schema at start-up: built by FastAPI's /openapi.json
    # route on the first request, it would hold the event loop (every other request) for
    # about a second on an idle machine
    database = f"sqlite:///{tmp_path / 'start.db'}"
    probe = "import app.main as m; print(m.app.openapi_schema is not None)"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=os.environ | {"DATABASE_URL": database},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "True"
