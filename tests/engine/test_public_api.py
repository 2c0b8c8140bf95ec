"""The engine's public API is pinned, and the engine imports nothing but the standard library."""

import ast
import sys
from pathlib import Path

import app.engine

ENGINE = Path(app.engine.__file__).parent


def test_public_api_is_unique_and_complete():
    assert len(set(app.engine.__all__)) == len(app.engine.__all__)
    for name in app.engine.__all__:
        assert hasattr(app.engine, name), name


def test_the_engine_imports_only_the_standard_library_and_itself():
    allowed = set(sys.stdlib_module_names) | {"app"}
    modules = list(ENGINE.rglob("*.py"))
    assert ENGINE / "training" / "step.py" in modules  # subpackages are read too
    for module in modules:
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in allowed, f"{module.name} imports {root}"
            if roots == ["app"] and isinstance(node, ast.ImportFrom):
                assert (node.module or "").startswith("app.engine"), node.module
