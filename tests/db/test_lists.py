"""GET /measurements at any size, on SQLite and PostgreSQL: paging with the `next` cursor
visits every row once, in order, whatever is stored meanwhile; bad cursors are 422s; the
total says how exact it is; the history page links to older rows."""

import base64
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, insert, select

from app.db import measurement_store
from app.db.models import MeasurementRow

MATMUL = {"kind": "matmul", "m": 64, "n": 64, "k": 64}
HTML = {"accept": "text/html"}
T0 = datetime(2026, 3, 1, tzinfo=UTC)
CHIPS = ("a100-sxm4-80gb", "h100-sxm5-80gb")
LABELS = (None, "nightly", "pr")


@pytest.fixture
def client(db_app: FastAPI) -> Iterator[TestClient]:
    with TestClient(db_app, base_url="http://localhost") as client:
        yield client
    db_app.state.database.engine.dispose()


def post(client: TestClient, **fields: object) -> int:
    body = {"chip": "a100", "workload": MATMUL, "measured_ms": 1.0, **fields}
    response = client.post("/measurements", json=body)
    assert response.status_code == 201, response.text
    identifier: int = response.json()["id"]
    return identifier


def walk(client: TestClient, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of the list `params` asks for, following `next` until it is null."""
    pages = [client.get("/measurements", params=params).json()]
    while pages[-1]["next"] is not None:
        cursor = pages[-1]["next"]
        response = client.get("/measurements", params={**params, "cursor": cursor})
        assert response.status_code == 200, response.text
        pages.append(response.json())
    return pages


def ids(pages: list[dict[str, Any]]) -> list[int]:
    return [item["id"] for page in pages for item in page["items"]]


def copies(db_app: FastAPI, rows: list[dict[str, object]]) -> list[tuple[datetime, int, str, str]]:
    """Store `rows` (column values) by hand, in place of every row, as copies of the one
    measurement stored: their (created_at, id, chip_id, label)."""
    engine = db_app.state.database.engine
    columns = [c for c in MeasurementRow.__table__.columns if c.key != "id"]
    with engine.begin() as connection:
        template = connection.execute(select(*columns).limit(1)).one()._asdict()
        connection.execute(delete(MeasurementRow))
        if rows:
            connection.execute(insert(MeasurementRow), [template | row for row in rows])
        keys = (MeasurementRow.created_at, MeasurementRow.id, MeasurementRow.chip_id)
        return [tuple(r) for r in connection.execute(select(*keys, MeasurementRow.label))]


row_strategy = st.fixed_dictionaries(
    {
        # few distinct times, so that many rows tie on created_at and the id decides
        "created_at": st.integers(0, 6).map(lambda m: T0 + timedelta(minutes=m)),
        "chip_id": st.sampled_from(CHIPS),
        "label": st.sampled_from(LABELS),
    }
)
filter_strategy = st.fixed_dictionaries(
    {},
    optional={
        "chip": st.sampled_from(CHIPS),
        "label": st.sampled_from(LABELS[1:]),
        "since": st.integers(0, 6).map(lambda m: (T0 + timedelta(minutes=m)).isoformat()),
        "until": st.integers(0, 7).map(lambda m: (T0 + timedelta(minutes=m)).isoformat()),
    },
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=st.lists(row_strategy, max_size=25), filters=filter_strategy, limit=st.integers(1, 6))
def test_paging_with_next_visits_every_row_once_in_order(db_app, client, rows, filters, limit):
    if not client.get("/measurements").json()["items"]:
        post(client)  # the template of the copies
    stored = copies(db_app, rows)
    since = datetime.fromisoformat(filters.get("since", "1970-01-01T00:00:00+00:00"))
    until = datetime.fromisoformat(filters.get("until", "9999-01-01T00:00:00+00:00"))
    expected = sorted(
        (
            (created_at, row_id)
            for created_at, row_id, chip_id, label in stored
            if filters.get("chip", chip_id) == chip_id
            and filters.get("label", label) == label
            and since <= created_at < until
        ),
        reverse=True,
    )
    pages = walk(client, {**filters, "limit": limit})
    assert ids(pages) == [row_id for _, row_id in expected]  # newest first, each once
    assert all(len(page["items"]) == limit for page in pages[:-1])
    assert len(pages) == max(1, -(-len(expected) // limit))  # no empty page after the last
    for page in pages:  # a small list is counted
        assert (page["total"], page["total_kind"]) == (len(expected), "exact")


def test_rows_stored_between_pages_are_neither_repeated_nor_skipped(client):
    older = [post(client, label="walk") for _ in range(5)]
    first = client.get("/measurements", params={"label": "walk", "limit": 2}).json()
    newer = [post(client, label="walk") for _ in range(3)]  # while a CI job pages
    rest = walk(client, {"label": "walk", "limit": 2, "cursor": first["next"]})
    assert ids([first, *rest]) == older[::-1]
    assert ids(walk(client, {"label": "walk", "limit": 3})) == (older + newer)[::-1]


def test_filters_and_an_offset_page_give_a_cursor_too(client):
    main = [post(client, branch="main") for _ in range(4)]
    post(client, branch="dev")
    by_offset = client.get("/measurements", params={"branch": "main", "limit": 2, "offset": 1})
    page = by_offset.json()
    assert ids([page]) == [main[2], main[1]] and page["offset"] == 1
    rest = walk(client, {"branch": "main", "limit": 2, "cursor": page["next"]})
    assert ids(rest) == [main[0]]
    # until and a cursor: the tighter of the two bounds applies
    newest = datetime.fromisoformat(page["items"][0]["created_at"])
    for until in (newest - timedelta(days=1), newest + timedelta(days=1)):
        params = {"branch": "main", "cursor": page["next"], "until": until.isoformat()}
        listed = ids([client.get("/measurements", params=params).json()])
        assert listed == ([] if until < newest else [main[0]])


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "x",
        "!!!!",
        "é",
        _b64("hello"),
        _b64("1:2:3"),
        _b64("0:0"),  # no row has id 0
        _b64(f"0:{2**31}"),  # beyond the id column
        _b64("-1:5"),  # before 1970
        _b64("1000000000000000000000:5"),  # past year 9999
        _b64("01:5"),  # another spelling of 1:5
        _b64("1:5") + "=",
        _b64(" 1:5"),
        "A" * 65,  # longer than any cursor
    ],
)
def test_a_malformed_or_tampered_cursor_is_a_422_naming_it(client, cursor):
    response = client.get("/measurements", params={"cursor": cursor})
    assert response.status_code == 422, response.text
    assert [error["loc"] for error in response.json()["detail"]] == [["query", "cursor"]]
    page = client.get("/history", params={"cursor": cursor})
    assert page.status_code == 422 and 'role="alert">cursor: ' in page.text


def test_a_cursor_with_an_offset_is_a_422(client):
    post(client)
    post(client)
    cursor = client.get("/measurements", params={"limit": 1}).json()["next"]
    for offset in (0, 1):
        response = client.get("/measurements", params={"cursor": cursor, "offset": offset})
        assert response.status_code == 422, response.text
        (error,) = response.json()["detail"]
        assert error["loc"] == ["query", "cursor"] and "offset" in error["msg"]


def test_a_total_beyond_the_cap_says_it_is_estimated_or_a_lower_bound(client, monkeypatch):
    stored = [post(client, label="a" if i % 2 else "b") for i in range(7)]
    monkeypatch.setattr(measurement_store, "COUNT_CAP", 3)

    def total(**params: object) -> tuple[int, str]:
        page = client.get("/measurements", params=params).json()
        return page["total"], page["total_kind"]

    assert total() == (7, "estimate")  # the span of ids
    assert total(label="b") == (3, "more_than")
    assert total(label="a") == (3, "exact")  # 3 rows: counted
    assert total(label="none such") == (0, "exact")
    monkeypatch.setattr(measurement_store, "COUNT_CAP", 6)
    assert total() == (7, "estimate")
    monkeypatch.setattr(measurement_store, "COUNT_CAP", 7)
    assert total() == (7, "exact")
    # ids skipped (a row deleted by hand): the estimate is an upper bound, never called exact
    monkeypatch.setattr(measurement_store, "COUNT_CAP", 3)
    with client.app.state.database.engine.begin() as connection:
        connection.execute(delete(MeasurementRow).where(MeasurementRow.id == stored[3]))
    assert total() == (7, "estimate")


def test_an_empty_list_is_exactly_empty(client):
    page = client.get("/measurements").json()
    assert (page["total"], page["total_kind"], page["next"], page["items"]) == (
        0,
        "exact",
        None,
        [],
    )


def _links(text: str) -> dict[str, str]:
    """rel -> href of the history page's paging links."""
    found = re.findall(r'<a href="([^"]+)" rel="(\w+)"', text)
    return {rel: href.replace("&amp;", "&") for href, rel in found}


def _listed(text: str) -> list[int]:
    return [int(i) for i in re.findall(r'<a href="/measurements/(\d+)">', text)]


def test_the_history_page_links_to_older_rows_and_back(client, monkeypatch):
    stored = [post(client, label="page") for _ in range(5)]
    page = client.get("/measurements", params={"label": "page", "limit": 2}, headers=HTML)
    assert page.status_code == 200 and "5 measurements; showing 2" in page.text
    assert set(_links(page.text)) == {"next"}  # no link to the newest: this is it
    seen = _listed(page.text)
    while "next" in (links := _links(page.text)):
        assert links["next"].startswith("/history?label=page&limit=2&cursor=")
        page = client.get(links["next"])
        assert _links(page.text)["first"] == "/history?label=page&limit=2"
        seen += _listed(page.text)
    assert seen == stored[::-1]
    monkeypatch.setattr(measurement_store, "COUNT_CAP", 3)
    assert "About 5 measurements" in client.get("/history", params={"limit": 2}).text
    assert "More than 3 measurements" in client.get("/history", params={"label": "page"}).text
