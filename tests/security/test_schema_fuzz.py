"""Schemathesis against the app's own OpenAPI schema: no 500, no answer that breaks the schema,
no NaN or infinity in JSON, on every endpoint (a bounded number of examples each)."""

import json
import math
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import CheckContext
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app.main import create_app
from app.settings import Settings


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Any:
    database = Path(tmp_path_factory.mktemp("fuzz")) / "roofcheck.db"
    app = create_app(Settings(database_url=f"sqlite:///{database}"))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


EXAMPLES = 50  # per endpoint: the whole run stays well under a minute
# schema-valid input may still be refused with a 422 naming the field: a check's domain
# rules (tensor parallelism dividing the heads, a model fitting the chip) are not in a schema


def _finite(node: Any) -> bool:
    if isinstance(node, float):
        return math.isfinite(node)
    if isinstance(node, dict):
        return all(_finite(value) for value in node.values())
    if isinstance(node, list):
        return all(_finite(value) for value in node)
    return True


@schemathesis.check
def strict_json(ctx: CheckContext, response: Any, case: Any) -> None:
    """Valid JSON (Python's parser accepts NaN; strict JSON does not) with finite numbers."""
    if "json" not in response.headers.get("content-type", [""])[0]:
        return
    body = json.loads(response.text, parse_constant=lambda name: pytest.fail(f"JSON {name}"))
    assert _finite(body), "a non-finite number in JSON"


def test_every_endpoint_against_its_own_schema(api_schema: Any) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        def call(case: Any) -> None:
            case.call_and_validate(
                additional_checks=[strict_json], excluded_checks=[positive_data_acceptance]
            )

        call()
