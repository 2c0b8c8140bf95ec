"""The layers of app/, read from its imports: the engine at the bottom, then the catalogs,
database, bodies and use cases, with the two HTTP adapters (app/api, app/web) on top, side by
side, neither importing the other. And no module so long that a reader cannot take it in."""

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


# what each layer may import (besides itself); the top-level modules (main, cli, settings, ...)
# assemble the layers and are not listed
ALLOWED = {
    "app.engine": set(),
    "app.catalog": {"app.engine"},
    "app.db": {"app.settings", "app.catalog", "app.engine"},
    "app.schemas": {"app.engine", "app.db"},
    "app.services": {"app.engine", "app.catalog", "app.db", "app.schemas", "app.settings"},
    "app.http": {"app.services", "app.db", "app.engine"},
    "app.api": {"app.http", "app.services", "app.schemas", "app.engine", "app.catalog"}
    | {"app.db", "app.security"},
    "app.web": {"app.http", "app.services", "app.schemas", "app.engine", "app.catalog"}
    | {"app.db", "app.security", "app.formatting"},
    # the client that measures a PyTorch function: the engine, and the probe for chip=local
    "app.measure": {"app.engine", "app.probe", "app.formatting"},
}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer):
    graph = _layer_imports()
    if layer not in graph:
        pytest.skip(f"{layer} is a module, not a package")
    unexpected = graph[layer] - ALLOWED[layer] - {layer, "app.formatting"}
    assert not unexpected, f"{layer} imports {sorted(unexpected)}"


def test_neither_http_adapter_imports_the_other():
    graph = _layer_imports()
    assert "app.web" not in graph["app.api"]
    assert "app.api" not in graph["app.web"]


def test_the_use_cases_and_bodies_know_no_http():
    for package in ("services", "schemas", "engine"):
        for path in (APP / package).rglob("*.py"):
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
