"""Reversible evolution on the real database: every move kind is undone byte-for-byte (the
memory tables' dump), a move a later one depends on is refused until that one is undone, and
every move and refusal is a line of a verifiable audit chain."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, text

from metnos.features.mnestoma import moves
from metnos.features.mnestoma.lifecycle import decay, move_executor
from metnos.features.mnestoma.models import EvolutionMove
from metnos.features.mnestoma.moves import Actor, EvolutionError, RowChange
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine
from metnos.mechanisms.audit import AuditLog, open_audit_log, read_tail, verify_instance
from tests.support.home import Home, MakeHome

OLD = datetime(2026, 3, 1, 9, 30, 0, 0, tzinfo=UTC)  # no microseconds: isoformat must keep them


@pytest.fixture
def home(make_home: MakeHome) -> Home:
    return make_home(lang="en")


@pytest.fixture
def engine(home: Home) -> Iterator[Engine]:
    engine = make_engine(database_url(home.settings))
    seed(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def audit(home: Home) -> Iterator[AuditLog]:
    with open_audit_log(home.settings) as log:
        yield log


def seed(engine: Engine, clock: int = 120) -> None:
    """A small memory: the use clock, three executors, four mnests, one proto-mnest."""
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO use_clock (id, clock, ager_clock, ager_cycles) "
                          "VALUES (1, :c, 100, 2)"), {"c": clock})
        for name, last, state in [("fs_read", 118, "active"), ("pdf_ext", 117, "active"),
                                  ("old_tool", 3, "quarantined")]:
            conn.execute(text(
                "INSERT INTO executor_use VALUES (:n, 7, 2, :l, :s, 40, :t)"),
                {"n": name, "l": last, "s": state, "t": OLD})
        for src, dst, weight, clock_ in [("fs_read", "pdf_ext", 4.25, 118),
                                         ("pdf_ext", "archive", 0.1, 10),
                                         ("fs_read", "old_tool", 2.0, 3),
                                         ("old_tool", "archive", 0.0, 3)]:
            conn.execute(text("INSERT INTO mnest VALUES (:s, :d, :w, :c, :t, :t)"),
                         {"s": src, "d": dst, "w": weight, "c": clock_, "t": OLD})
        conn.execute(text(
            "INSERT INTO proto_mnest (id, src, want, have_kind, want_kind, why, source, count, "
            "first_clock, last_clock, status, created_at, updated_at) VALUES ('p1', 'pdf_ext', "
            "'ocr', 'pdf', 'text', 'no text layer', 'executor', 5, 20, 117, 'open', :t, :t)"),
            {"t": OLD})


def owner(audit: AuditLog) -> Actor:
    return Actor(audit, sender="owner", channel="test")


def fuse(engine: Engine, actor: Actor) -> EvolutionMove:
    """A fusion as the introvert step would make it: a new mnest, one removed, one changed."""
    return moves.apply(engine, "fuse", "fs_read+old_tool", "they overlap", [
        RowChange("mnest", ("fs_read", "archive"), {"weight": 2.0, "clock": 120}),
        RowChange("mnest", ("fs_read", "old_tool"), None),
        RowChange("executor_use", ("old_tool",), {"state": "archived", "state_clock": 120}),
    ], actor)


MOVES: dict[str, Any] = {
    "quarantine": lambda e, a: move_executor(e, "pdf_ext", "quarantine", a, "idle"),
    "release": lambda e, a: move_executor(e, "old_tool", "release", a, "wanted"),
    "archive": lambda e, a: move_executor(e, "old_tool", "archive", a, "not needed"),
    "archive_unseen": lambda e, a: move_executor(e, "never_seen", "archive", a, "no"),
    "decay": lambda e, a: decay(e, upto=70, amount=1.0, actor=a, motivation=lambda n: f"{n}"),
    "fuse": fuse,
    "compose": lambda e, a: moves.apply(e, "compose", "p1", "closed by fs_read→pdf_ext", [
        RowChange("proto_mnest", ("p1",), {"status": "composed",
                                            "updated_at": datetime.now(UTC)})], a),
}


@pytest.mark.parametrize("kind", sorted(MOVES))
def test_undo_restores_the_memory_byte_for_byte(kind: str, engine: Engine,
                                                audit: AuditLog) -> None:
    actor = owner(audit)
    before = moves.dump(engine)
    move = MOVES[kind](engine, actor)
    assert move is not None and moves.dump(engine) != before
    back = moves.undo(engine, move.id, actor)
    assert moves.dump(engine) == before
    assert back.undoes == move.id and back.kind == moves.OPPOSITE.get(move.kind, "undo")
    assert moves.history(engine)[1].undone_by == back.id
    lines = [r for r in read_tail(audit.log_path, 10) if r["action"].startswith("evolution.")]
    assert [(r["action"], r["action_id"], r["decision"]) for r in lines] == [
        (f"evolution.{move.kind}", move.id, "allow"), (f"evolution.{back.kind}", back.id, "allow")]
    assert moves.history(engine)[0].audit_seq == lines[1]["seq"]


def test_the_dump_keeps_every_column_and_microsecond(engine: Engine) -> None:
    dump = moves.dump(engine).decode()
    assert '"created_at":"2026-03-01T09:30:00.000000+00:00"' in dump
    assert dump.splitlines()[0] == "# mnest" and '"weight":4.25' in dump
    assert moves.dump(engine) == dump.encode()


def test_decay_floors_at_zero_and_its_undo_keeps_a_later_reinforcement(
        engine: Engine, audit: AuditLog) -> None:
    move = MOVES["decay"](engine, owner(audit))
    assert move.motivation == "2" and move.target == "2 mnests"  # not 0-weight, not recent
    weights = _weights(engine)
    assert weights[("pdf_ext", "archive")] == 0.0 and weights[("fs_read", "old_tool")] == 1.0
    assert weights[("old_tool", "archive")] == 0.0 and weights[("fs_read", "pdf_ext")] == 4.25
    with engine.begin() as conn:  # a hand-off reinforces one of them after the decay
        conn.execute(text("UPDATE mnest SET weight = weight + 1, clock = 125 "
                          "WHERE src = 'fs_read' AND dst = 'old_tool'"))
    moves.undo(engine, move.id, owner(audit))
    weights = _weights(engine)
    assert weights[("fs_read", "old_tool")] == 3.0 and weights[("pdf_ext", "archive")] == 0.1


def test_a_move_a_later_one_depends_on_is_undone_only_after_it(
        engine: Engine, audit: AuditLog, home: Home) -> None:
    actor = owner(audit)
    before = moves.dump(engine)
    quarantine = move_executor(engine, "pdf_ext", "quarantine", actor, "idle")
    archive = move_executor(engine, "pdf_ext", "archive", actor, "gone")
    with pytest.raises(EvolutionError) as refused:
        moves.undo(engine, quarantine.id, actor)
    assert refused.value.key == "ERR_EVOLUTION_UNDO_LATER"
    assert refused.value.vars["later_id"] == archive.id
    assert "Take that one back first" in i18n.message(refused.value, "en")
    assert moves.states(engine)["pdf_ext"] == "archived"
    restore = moves.undo(engine, archive.id, actor)
    assert restore.kind == "restore" and moves.states(engine)["pdf_ext"] == "quarantined"
    moves.undo(engine, quarantine.id, actor)
    assert moves.dump(engine) == before
    with pytest.raises(EvolutionError) as again:
        moves.undo(engine, quarantine.id, actor)
    assert again.value.key == "ERR_EVOLUTION_ALREADY_UNDONE"
    with pytest.raises(EvolutionError) as missing:
        moves.undo(engine, "no-such-move", actor)
    assert missing.value.key == "ERR_EVOLUTION_MOVE_NOT_FOUND"
    denied = [r for r in read_tail(audit.log_path, 20) if r["decision"] == "deny"]
    assert [r["reason"] for r in denied] == ["ERR_EVOLUTION_UNDO_LATER",
                                             "ERR_EVOLUTION_ALREADY_UNDONE",
                                             "ERR_EVOLUTION_MOVE_NOT_FOUND"]
    audit.close()
    report = verify_instance(home.settings)
    assert report.ok and report.lines == 7  # two moves, two undos, three refusals


def test_an_undone_later_move_no_longer_blocks_and_an_undo_can_be_undone(
        engine: Engine, audit: AuditLog) -> None:
    actor = owner(audit)
    decayed = MOVES["decay"](engine, actor)
    fused = fuse(engine, actor)  # touches fs_read→old_tool, which the decay touched too
    with pytest.raises(EvolutionError):
        moves.undo(engine, decayed.id, actor)
    defused = moves.undo(engine, fused.id, actor)
    after_defuse = moves.dump(engine)
    again = moves.undo(engine, defused.id, actor)  # fuse again, exactly
    assert again.kind == "fuse" and moves.states(engine)["old_tool"] == "archived"
    with pytest.raises(EvolutionError):  # the fusion is in effect again
        moves.undo(engine, decayed.id, actor)
    moves.undo(engine, again.id, actor)
    assert moves.dump(engine) == after_defuse
    moves.undo(engine, decayed.id, actor)


def test_a_state_move_from_the_wrong_state_is_refused_and_audited(
        engine: Engine, audit: AuditLog) -> None:
    before = moves.dump(engine)
    with pytest.raises(EvolutionError) as refused:
        move_executor(engine, "fs_read", "restore", owner(audit), "why not")
    assert refused.value.key == "ERR_EVOLUTION_STATE_ACTIVE"
    assert "fs_read is in use" in i18n.message(refused.value, "en")
    assert "fs_read è in uso" in i18n.message(refused.value, "it")
    assert moves.dump(engine) == before and moves.history(engine) == []
    line = read_tail(audit.log_path, 1)[0]
    assert (line["action"], line["decision"], line["reason"]) == (
        "evolution.restore", "deny", "ERR_EVOLUTION_STATE_ACTIVE")


def test_states_is_one_map_of_the_lifecycle(engine: Engine, audit: AuditLog) -> None:
    move_executor(engine, "old_tool", "archive", owner(audit), "no")
    assert moves.states(engine) == {"fs_read": "active", "pdf_ext": "active",
                                    "old_tool": "archived"}


def _weights(engine: Engine) -> dict[tuple[str, str], float]:
    with engine.connect() as conn:
        return {(s, d): w for s, d, w in conn.execute(text("SELECT src, dst, weight FROM mnest"))}
