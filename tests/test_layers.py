"""The layers of app/, read from its imports: the engine at the bottom, then the catalogs,
database, bodies and use cases, with the two HTTP adapters (app/api, app/web) on top, side by
side, neither importing the other, and neither reaching the database but through the use
cases; every package and top-level module has its place. And no module so long that a reader
cannot take it in."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"
MAX_LINES = 400


def _package(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:2]) if len(parts) > 2 else ".".join(parts)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("app"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("app"))
    return found


def _layer_imports() -> dict[str, set[str]]:
    """Each package of app/ (app.api, app.web, ...) and the app packages its modules import."""
    graph: dict[str, set[str]] = {}
    for path in APP.rglob("*.py"):
        targets = {".".join(name.split(".")[:2]) for name in _imports(path)} - {"app"}
        graph.setdefault(_package(path), set()).update(targets)
    return graph


# what each package or top-level module of app/ may import (besides itself), bottom up
ALLOWED = {
    "app.engine": set(),
    # what the stored columns hold, shared by the tables and the bodies
    "app.columns": set(),
    "app.settings": set(),
    "app.formatting": {"app.engine"},
    "app.catalog": {"app.engine"},
    "app.db": {"app.settings", "app.catalog", "app.engine", "app.columns"},
    "app.schemas": {"app.engine", "app.columns", "app.formatting"},
    "app.services": {"app.engine", "app.catalog", "app.db", "app.schemas", "app.settings"}
    | {"app.columns", "app.formatting"},
    # the request dependencies, shared by both adapters: the database's sessions among them
    "app.http": {"app.services", "app.db", "app.engine", "app.columns"},
    "app.security": {"app.columns"},
    "app.api": {"app.http", "app.services", "app.schemas", "app.engine", "app.catalog"}
    | {"app.columns", "app.security"},
    "app.web": {"app.http", "app.services", "app.schemas", "app.engine", "app.catalog"}
    | {"app.columns", "app.security", "app.formatting"},
    # the client that measures a PyTorch function: the engine, and the probe for chip=local
    "app.probe": {"app.engine", "app.formatting"},
    "app.local_probe": {"app.engine", "app.probe"},
    "app.measure": {"app.engine", "app.probe", "app.local_probe", "app.formatting"},
    # the validation report: the use cases against published runs, its charts' escaping
    "app.validation": {"app.engine", "app.catalog", "app.services", "app.settings", "app.web"},
    "app.cli": {"app.engine", "app.formatting", "app.measure", "app.probe", "app.validation"},
    # the service, assembled from every layer, and its start-up check
    "app.main": {"app.api", "app.web", "app.http", "app.security", "app.services", "app.db"}
    | {"app.catalog", "app.settings"},
    "app.prestart": {"app.main"},
}


def test_every_package_and_module_has_its_place():
    assert set(_layer_imports()) - {"app.__init__"} == set(ALLOWED)


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer):
    unexpected = _layer_imports()[layer] - ALLOWED[layer] - {layer}
    assert not unexpected, f"{layer} imports {sorted(unexpected)}"


def test_neither_http_adapter_imports_the_other():
    graph = _layer_imports()
    assert "app.web" not in graph["app.api"]
    assert "app.api" not in graph["app.web"]


def test_the_use_cases_bodies_and_tables_know_no_http():
    for package in ("services", "schemas", "engine", "db", "columns.py", "settings.py"):
        for path in [APP / package] if package.endswith(".py") else (APP / package).rglob("*.py"):
            text = path.read_text()
            for framework in ("fastapi", "starlette"):
                assert f"import {framework}" not in text and f"from {framework}" not in text, (
                    f"{path} imports {framework}"
                )


def test_no_module_is_longer_than_a_reader_takes_in():
    long = {
        str(path.relative_to(APP.parent)): lines
        for path in APP.rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"


def test_module_names_are_unique_so_a_traceback_says_which():
    names: dict[str, list[str]] = {}
    for path in APP.rglob("*.py"):
        if path.name != "__init__.py":
            names.setdefault(path.stem, []).append(str(path.relative_to(APP.parent)))
    repeated = {name: paths for name, paths in names.items() if len(paths) > 1}
    assert not repeated, repeated


def test_the_service_and_the_cli_import_no_torch():
    """PyTorch is the optional `measure` extra: the service never imports it, and the CLI
    only when measuring."""
    code = (
        "import sys, app.main, app.cli, app.measure; "
        "print(sorted({'torch', 'numpy'} & set(sys.modules)))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=APP.parent
    )
    assert found.stdout.strip() == "[]"
