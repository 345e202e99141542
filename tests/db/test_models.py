"""The tables and the helpers the gateway uses, on a real database (rolled back per test)."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.models import BeforeManifest, ChatSession, Turn, TurnStep


def _chat(db: Session, user: str = "owner") -> ChatSession:
    return models.get_or_create_session(db, None, user_id=user, channel="cli", lang="it",
                                        autonomy="ReadOnly")


def _turn(db: Session, text: str = "x", **fields: str) -> Turn:
    """A running turn in a new CLI session of the owner."""
    return models.record_turn_start(db, session_id=_chat(db).id, channel="cli", sender="owner",
                                    text=text, lang="it", **fields)



def test_session_is_created_reused_and_never_shared(db_session: Session) -> None:
    chat = _chat(db_session)
    assert chat.autonomy == "ReadOnly" and chat.interaction_language == "it"
    first_update = chat.updated_at
    again = models.get_or_create_session(db_session, chat.id, user_id="owner", channel="cli",
                                         lang="en")
    assert again.id == chat.id
    assert again.interaction_language == "it"  # the session's language is sticky
    assert again.updated_at >= first_update
    stranger = models.get_or_create_session(db_session, chat.id, user_id="someone-else",
                                            channel="telegram", lang="en")
    assert stranger.id != chat.id and stranger.user_id == "someone-else"
    named = models.get_or_create_session(db_session, "telegram:42", user_id="owner",
                                         channel="telegram", lang="en")
    assert named.id == "telegram:42"
    assert db_session.get(ChatSession, "telegram:42") is not None


def test_turn_round_trip(db_session: Session) -> None:
    turn = _turn(db_session, "leggi note.md")
    assert turn.status == "running" and turn.finished_at is None
    models.finish_turn(db_session, turn.id, status="awaiting_approval", timings={"plan": 12.5})
    paused = models.get_turn(db_session, turn.id)
    assert paused is not None and paused.status == "awaiting_approval"
    assert paused.finished_at is None
    models.finish_turn(db_session, turn.id, status="completed", reply="fatto",
                       timings={"run": 30.0}, flow_run_id="fr-1")
    db_session.expire_all()
    done = models.get_turn(db_session, turn.id)
    assert done is not None
    assert (done.status, done.reply, done.flow_run_id) == ("completed", "fatto", "fr-1")
    assert done.timings == {"plan": 12.5, "run": 30.0}
    assert done.finished_at is not None and done.finished_at.utcoffset() == timedelta(0)
    assert done.created_at.tzinfo is not None
    assert done.finished_at >= done.created_at
    assert done.created_at.astimezone(UTC) == done.created_at
    assert models.get_turn(db_session, "no-such-turn") is None


def test_finish_turn_errors(db_session: Session) -> None:
    with pytest.raises(models.TurnNotFound) as info:
        models.finish_turn(db_session, "missing", status="failed")
    assert isinstance(info.value, LookupError)
    assert "missing" in i18n.message(info.value, "en")
    turn = _turn(db_session, turn_id="t-fixed")
    assert turn.id == "t-fixed"
    with pytest.raises(ValueError):
        models.finish_turn(db_session, turn.id, status="done")
    failed = models.finish_turn(db_session, turn.id, status="failed",
                                error_key="ERR_LLM_UNAVAILABLE")
    assert failed.error_key == "ERR_LLM_UNAVAILABLE" and failed.finished_at is not None


def test_the_database_enforces_status_and_foreign_keys(db_session: Session) -> None:
    chat = _chat(db_session)
    db_session.add(Turn(session_id=chat.id, channel="cli", sender="o", text="x", lang="it",
                        status="bogus"))
    with pytest.raises(IntegrityError, match="turn_status_valid"):
        db_session.flush()
    db_session.rollback()
    db_session.add(Turn(session_id="no-such-session", channel="cli", sender="o", text="x",
                        lang="it"))
    with pytest.raises(IntegrityError):
        db_session.flush()
    db_session.rollback()


def test_steps_in_order_and_unique(db_session: Session) -> None:
    turn = _turn(db_session)
    for seq, executor in ((2, "fs_write"), (1, "fs_read")):
        models.record_step(db_session, turn_id=turn.id, seq=seq, executor=executor,
                           args_digest=f"sha256:{seq}", decision="allow", outcome="ok",
                           audit_seq=10 + seq)
    steps = models.turn_steps(db_session, turn.id)
    assert [(s.seq, s.executor, s.audit_seq) for s in steps] == [(1, "fs_read", 11),
                                                                  (2, "fs_write", 12)]
    db_session.add(TurnStep(turn_id=turn.id, seq=1, executor="fs_read", args_digest="d",
                            decision="allow"))
    with pytest.raises(IntegrityError, match="turn_step_seq_unique"):
        db_session.flush()
    db_session.rollback()


def test_before_manifest_round_trip(db_session: Session) -> None:
    turn = _turn(db_session)
    manifest = {"files": [{"path": "note.md", "sha256": "ab", "existed": True}], "v": 1}
    models.record_before_manifest(db_session, action_id="act-1", turn_id=turn.id,
                                  executor="fs_write", manifest=manifest, signature="sig")
    db_session.expire_all()
    stored = db_session.get(BeforeManifest, "act-1")
    assert stored is not None
    assert (stored.manifest, stored.signature, stored.turn_id) == (manifest, "sig", turn.id)
    assert stored.created_at.tzinfo is not None
