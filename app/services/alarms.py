"""The regression gate's alarms: raised when a flagged run is stored, decided by a run posted
to confirm a suspected one, marked false by a writer, and counted per workload
(docs/formulas.md, "Confirming, and false alarms"). A stored measurement is never altered:
each of these writes the alarm beside it."""

from __future__ import annotations

from functools import partial

from sqlalchemy.orm import Session, sessionmaker

from app.catalog.names import UnknownName
from app.db import alarm_store
from app.db import measurement_store as store
from app.db.base import utc_now
from app.db.models import GateAlarmRow, MeasurementRow
from app.db.session import write_together
from app.engine import InvalidInput
from app.schemas.comparison_bodies import Alarm, Comparison, GateRecord

LATEST_ALARMS = 20  # the alarms a workload's record lists (all are counted)


class NoAlarm(Exception):
    """A stored run that raised no alarm, so that there is none to mark (a conflict)."""

    def __init__(self, measurement_id: int) -> None:
        super().__init__(f"measurement {measurement_id} raised no alarm when stored")
        self.message = str(self)


def confirmable(session: Session, row: MeasurementRow, suspected_id: int) -> None:
    """Refuse (InvalidInput on `confirms`) a confirmation of a run that is not an open
    suspected alarm of `row`'s workload."""
    alarm = alarm_store.of_run(session, suspected_id)
    suspected = store.get(session, suspected_id)
    if suspected is None or suspected.id >= row.id:
        raise InvalidInput("confirms", f"no earlier stored measurement {suspected_id}")
    if suspected.workload_key != row.workload_key:
        raise InvalidInput("confirms", f"measurement {suspected_id} is of another workload or chip")
    if alarm is None or alarm.raised != "suspected" or alarm.decided is not None:
        raise InvalidInput(
            "confirms", f"measurement {suspected_id} has no open suspected regression to confirm"
        )


def with_confirmation(compared: Comparison, suspected_id: int | None) -> Comparison:
    """`compared` of a run posted to confirm `suspected_id` (if any), saying what it decided:
    a regression confirms, neither regression nor suspicion clears, still suspected is open."""
    if suspected_id is None:
        return compared
    outcome = "confirmed" if compared.regression else "open" if compared.suspected else "cleared"
    return compared.model_copy(update={"confirms": suspected_id, "confirmation": outcome})


def record_answer(session: Session, row: MeasurementRow, compared: Comparison) -> None:
    """In the transaction storing `row`: decide the alarm it confirms, or raise one on it
    when the gate flagged it."""
    if compared.confirms is not None:
        if compared.confirmation in ("confirmed", "cleared"):
            alarm = alarm_store.of_run(session, compared.confirms)
            assert alarm is not None  # checked by `confirmable` in this transaction
            alarm.decided, alarm.decided_by = compared.confirmation, row.id
            session.flush()
        return
    if compared.regression or compared.suspected:
        alarm_store.add(
            session,
            GateAlarmRow(
                measurement_id=row.id,
                workload_key=row.workload_key,
                raised="regression" if compared.regression else "suspected",
                repeats_needed=compared.repeats_needed,
            ),
        )


def alarm_out(alarm: GateAlarmRow) -> Alarm:
    """An alarm as answered."""
    return Alarm(
        measurement_id=alarm.measurement_id,
        raised="regression" if alarm.raised == "regression" else "suspected",
        repeats_needed=alarm.repeats_needed,
        decided={"confirmed": "confirmed", "cleared": "cleared"}.get(alarm.decided or ""),
        decided_by=alarm.decided_by,
        marked_false=alarm.marked_false_at is not None,
        marked_false_at=alarm.marked_false_at,
        marked_false_by=alarm.marked_false_by,
        note=alarm.marked_false_note,
    )


def gate_record(session: Session, workload_key: str) -> GateRecord:
    """The gate's record on one workload."""
    counted = alarm_store.counts(session, workload_key)
    return GateRecord(
        raised=counted.raised,
        regressions=counted.regressions,
        suspected=counted.suspected,
        confirmed=counted.confirmed,
        cleared=counted.cleared,
        open=counted.suspected - counted.confirmed - counted.cleared,
        marked_false=counted.marked_false,
        latest=[
            alarm_out(a) for a in alarm_store.latest(session, workload_key, limit=LATEST_ALARMS)
        ],
    )


def _marked(measurement_id: int, writer: str | None, note: str | None, session: Session) -> Alarm:
    alarm = alarm_store.of_run(session, measurement_id)
    if alarm is None:
        if store.get(session, measurement_id) is None:
            raise UnknownName("measurement", str(measurement_id), [])
        raise NoAlarm(measurement_id)
    if alarm.marked_false_at is None:  # marked once: a second mark keeps the first
        alarm.marked_false_at = utc_now()
        alarm.marked_false_by = writer
        alarm.marked_false_note = note
        session.flush()
    return alarm_out(alarm)


def mark_false(
    sessions: sessionmaker[Session], measurement_id: int, writer: str | None, note: str | None
) -> Alarm:
    """Mark the alarm of a stored run false (the run itself untouched); 404 for no such run,
    409 for a run that raised none."""
    return write_together(sessions, partial(_marked, measurement_id, writer, note))
