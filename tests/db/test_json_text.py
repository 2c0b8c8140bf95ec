"""A write's JSON columns, encoded by pydantic-core: the values json.dumps writes, and a new
measurement's record holds exactly the table's columns."""

import json
import math
from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

from app.db.base import json_text
from app.db.models import MeasurementRow, NewMeasurement

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=500)
@given(JSON_VALUES)
def test_the_text_reads_back_as_the_values_json_dumps_writes(value):
    """Read back, the text is the same value, float for float (-0.0, 1e-05 and 5e-324
    included): re-encoded by json.dumps, both read the same."""
    assert json.dumps(json.loads(json_text(value))) == json.dumps(json.loads(json.dumps(value)))


def test_worked_examples():
    # compact separators, round-trip floats (0.00001 where json.dumps writes 1e-05), UTF-8
    assert json_text({"a": [1, 2.5, 1e-05], "b": "ü"}) == '{"a":[1,2.5,0.00001],"b":"ü"}'
    assert json.loads(json_text(1e-05)) == 1e-05
    # infinities and NaN as json.dumps writes them (the answers refuse them before this)
    assert json_text([math.inf, -math.inf]) == json.dumps([math.inf, -math.inf]).replace(" ", "")
    assert json_text(math.nan) == "NaN"


def test_a_new_measurement_holds_the_tables_columns():
    """NewMeasurement mirrors MeasurementRow: a column added to one and not the other fails."""
    columns = {column.key for column in MeasurementRow.__table__.columns}
    assert {field.name for field in fields(NewMeasurement)} == columns
