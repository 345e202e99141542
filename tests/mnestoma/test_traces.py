"""Traces: Louvain communities of the planted mnestoma, deterministic, one generation each."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from metnos.features.mnestoma import traces
from metnos.ground.db.engine import in_session
from tests.mnestoma.traces_fixture import BRIDGE, INVOICES, PHOTOS, ZERO, engine_of, plant
from tests.support.home import MakeHome


def test_two_planted_habits_are_two_traces_and_a_lone_executor_its_own(
        make_home: MakeHome) -> None:
    home = make_home(lang="en")
    with engine_of(home.settings) as engine:
        plant(engine, {**INVOICES, **PHOTOS, **BRIDGE, **ZERO}, used=["lists"])
        found = traces.detect(engine, home.settings, seed=0)
        again = traces.detect(engine, home.settings, seed=0)
        newest = in_session(engine, traces.current)

    groups = [set(t.members) for t in found]
    assert groups == [{"fs_read", "pdf_ext", "archive", "notify"}, {"fs_find", "fs_move"},
                      {"lists"}]
    invoices = found[0]
    assert invoices.label == "pdf_ext · archive · fs_read"  # heaviest by weighted degree
    assert invoices.weight == 34.0  # its internal hand-offs, both ways and loops
    assert found[2].weight == 0.0 and found[2].label == "lists"
    assert 0.2 < invoices.modularity < 1 and len({t.modularity for t in found}) == 1
    assert {t.generation for t in found} == {1} and {t.generation for t in again} == {2}
    assert [t.members for t in again] == [t.members for t in found]  # the seed fixes it
    assert [t.id for t in newest] == [t.id for t in again]

    lines = [json.loads(line) for line in
             (home.settings.audit_dir / "audit.jsonl").read_text().splitlines()]
    detections = [line for line in lines if line["action"] == traces.AUDIT_ACTION]
    assert len(detections) == 2 and {d["outcome"] for d in detections} == {"done"}


def test_due_before_any_detection_then_weekly(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    with engine_of(home.settings) as engine:
        assert in_session(engine, traces.current) == []
        # an empty mnestoma: nothing stored, so the detection stays due
        assert traces.detect(engine, home.settings) == []
        assert in_session(engine, traces.due, home.settings, datetime.now(UTC)) is True
        plant(engine, PHOTOS)
        second = traces.detect(engine, home.settings)
        when = second[0].detected_at
        assert in_session(engine, traces.due, home.settings, when + timedelta(days=6)) is False
        assert in_session(engine, traces.due, home.settings, when + timedelta(days=7)) is True
    assert [t.generation for t in second] == [1]
