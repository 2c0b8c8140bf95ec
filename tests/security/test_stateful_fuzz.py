"""Schemathesis's stateful run, on SQLite and on PostgreSQL: sequences of calls where a later
call takes what an earlier one answered (the id of a stored measurement read back, rejudged,
listed by its workload key; an empirical profile stored, read on its chip, deleted), the links
between operations inferred by schemathesis from the schema. Every response is held to the
checks of tests/security/test_schema_fuzz.py. The suite runs a few scenarios; the longer run
behind SECURITY.md's figures sets `ROOFCHECK_FUZZ_STATEFUL_EXAMPLES` (scripts/fuzz-long)."""

import os
from typing import Any

from hypothesis import HealthCheck, settings

# api_schema: the app on each backend as the schema fuzzing builds it (a fixture, used by name)
from tests.security.test_schema_fuzz import (
    CHECKS,
    TOKEN,
    WITH_TOKENS,
    api_schema,  # noqa: F401
)

SCENARIOS = int(os.environ.get("ROOFCHECK_FUZZ_STATEFUL_EXAMPLES") or 5)
STEPS = 10  # calls per scenario at most


def test_sequences_of_calls_against_the_schema(api_schema: Any) -> None:  # noqa: F811
    calls = 0
    linked = 0  # calls that took a value from an earlier answer

    class Workflow(api_schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": {"Authorization": f"Bearer {TOKEN}"}} if WITH_TOKENS else {}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            nonlocal calls
            calls += 1
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

        def step(self, input: Any) -> Any:
            nonlocal linked
            linked += input.transition is not None and input.is_applied
            return super().step(input)

    Workflow.run(
        settings=settings(
            max_examples=SCENARIOS,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    assert calls > 0
    # the count a longer run reports (pytest -s)
    print(f"\nschemathesis stateful (write tokens: {WITH_TOKENS}): {calls} calls, {linked} linked")
