"""The production Dockerfile and compose.yaml parse and name what they must.

Docker cannot run here; README "Several workers, Docker" says how to run them.
"""

import json
import shlex

import yaml
from fastapi.testclient import TestClient

from app.settings import ROOT, Settings


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    pairs = [line.split(maxsplit=1) for line in lines if line and not line.startswith("#")]
    return [(pair[0].upper(), pair[1]) for pair in pairs]


def _only(instruction: str) -> str:
    found = [args for name, args in _instructions() if name == instruction]
    assert len(found) == 1, f"one {instruction} expected, found {found}"
    return found[0]


def test_the_image_is_slim_and_its_sources_exist():
    assert _only("FROM").split()[0].startswith("python:3.11-slim")
    copied = [shlex.split(args)[:-1] for name, args in _instructions() if name == "COPY"]
    assert copied
    for sources in copied:
        for source in sources:
            assert (ROOT / source).exists(), source


def test_it_runs_as_a_user_that_is_not_root_after_installing():
    names = [name for name, _ in _instructions()]
    user = _only("USER")
    assert user not in {"root", "0"}
    last_run = max(i for i, name in enumerate(names) if name == "RUN")
    assert names.index("USER") > last_run
    assert f"useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin {user}" in (
        _only("RUN")
    )


def test_it_checks_its_health_on_the_health_endpoint(client: TestClient):
    check = _only("HEALTHCHECK")
    assert "--interval=" in check
    command = json.loads(check.split("CMD", 1)[1])
    assert "http://127.0.0.1:8000/health" in command[-1]
    assert client.get("/health").status_code == 200


def test_it_migrates_before_starting_the_workers_with_the_database_from_the_environment():
    command = json.loads(_only("CMD"))
    assert command[:2] == ["sh", "-c"]
    prestart, _, serve = command[2].partition("&&")
    assert prestart.split() == ["python", "-m", "app.prestart"]
    assert serve.split()[:3] == ["exec", "uvicorn", "app.main:app"]
    env = " ".join(args for name, args in _instructions() if name == "ENV")
    assert "DATABASE_URL=sqlite:////data/roofcheck.db" in env  # overridden by the environment
    assert "WEB_CONCURRENCY=2" in env  # uvicorn's worker count
    assert "postgresql://" not in env  # no database address or password baked in


def test_compose_runs_the_app_against_its_postgresql():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    db, app = compose["services"]["db"], compose["services"]["app"]
    assert db["image"].startswith("postgres:")
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert any(volume.startswith("pgdata:") for volume in db["volumes"])
    assert app["build"] == "."
    assert app["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert "8000:8000" in app["ports"]
    url = app["environment"]["DATABASE_URL"]
    user, password = db["environment"]["POSTGRES_USER"], db["environment"]["POSTGRES_PASSWORD"]
    assert url == f"postgresql://{user}:{password}@db:5432/{db['environment']['POSTGRES_DB']}"
    assert Settings(database_url=url).database_url.startswith("postgresql+psycopg://")
