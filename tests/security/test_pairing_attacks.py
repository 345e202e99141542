"""Attacks on DM pairing (SPEC §4, security notes §3 and D1): an unknown sender must never
get a turn, a second code, a slot beyond the cap, or a pairing the owner did not approve by
that request's own code; every refusal leaves exactly one audit line."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlmodel import Session, select

from metnos.features.pairing import (
    ALPHABET,
    PairingCodeExpired,
    PairingCodeUnknown,
    PairingError,
    PairingLocked,
    PairingRequest,
    admit,
    approve,
    find_paired,
    list_paired,
    revoke,
)
from metnos.mechanisms.audit import AuditLog
from tests.pairing.support import (
    T0,
    TTL,
    admit_as,
    audit,
    audit_lines,
    pairing_client,
    policy,
)
from tests.support.home import MakeHome

__all__ = ["audit"]  # the fixture, imported for this module

P = policy()
attack = pytest.mark.attack


@attack
def test_unpaired_sender_gets_a_code_once_and_nothing_runs(db_session: Session,
                                                           audit: AuditLog) -> None:
    first = admit_as(db_session, "666", audit=audit)
    assert first.status == "code_sent" and first.user_id is None
    # the attacker keeps writing, including its own code and an "approve" command
    for i in range(20):
        later = admit_as(db_session, "666", now=T0 + timedelta(minutes=i), audit=audit)
        assert (later.status, later.user_id, later.code, later.message()) == (
            "ignored", None, None, None)
    assert find_paired(db_session, "telegram", "666") is None
    lines = audit_lines(audit)
    assert len(lines) == 21  # one per message: one code, 20 refusals
    assert [ln["decision"] for ln in lines] == ["ask"] + ["deny"] * 20


@attack
def test_fourth_pending_request_is_ignored(db_session: Session, audit: AuditLog) -> None:
    for sender in ("a", "b", "c"):
        assert admit_as(db_session, sender).status == "code_sent"
    fourth = admit_as(db_session, "d", audit=audit)
    assert (fourth.status, fourth.code, fourth.message_key) == ("ignored", None, None)
    assert [(ln["sender"], ln["reason"]) for ln in audit_lines(audit)] == [
        ("d", "ERR_PAIRING_TOO_MANY_PENDING")]
    rows = db_session.exec(select(PairingRequest).where(PairingRequest.sender_id == "d")).all()
    assert rows == []


@attack
def test_expired_code_cannot_be_approved(db_session: Session, audit: AuditLog) -> None:
    code = admit_as(db_session, "666").code
    assert code
    with pytest.raises(PairingCodeExpired):
        approve(db_session, code, approver="owner", settings=P, now=T0 + TTL, audit=audit)
    assert find_paired(db_session, "telegram", "666") is None
    assert admit_as(db_session, "666", now=T0 + TTL).status == "code_sent"  # a NEW code, not this
    with pytest.raises(PairingCodeExpired):
        approve(db_session, code, approver="owner", settings=P, now=T0 + TTL, audit=audit)
    assert [ln["reason"] for ln in audit_lines(audit)] == ["ERR_PAIRING_CODE_EXPIRED"] * 2


@attack
def test_brute_force_locks_out(db_session: Session, audit: AuditLog) -> None:
    right = admit_as(db_session, "666").code
    assert right
    refused = 0
    for i in range(40):  # random guesses, then the right code
        guess = "".join(secrets.choice(ALPHABET) for _ in range(8)) if i < 39 else right
        with pytest.raises(PairingError) as err:
            approve(db_session, guess, approver="owner", settings=P,
                    now=T0 + timedelta(seconds=i), audit=audit)
        refused += 1
        assert isinstance(err.value, PairingLocked) == (i >= 5)
    assert refused == 40 and list_paired(db_session) == []
    reasons = [ln["reason"] for ln in audit_lines(audit)]
    assert reasons == ["ERR_PAIRING_CODE_UNKNOWN"] * 5 + ["ERR_PAIRING_LOCKED"] * 35


@attack
def test_revoked_sender_is_no_longer_paired(db_session: Session) -> None:
    code = admit_as(db_session, "42").code
    assert code
    approve(db_session, code, approver="owner", settings=P, now=T0)
    assert revoke(db_session, channel="telegram", sender_id="42")
    after = admit_as(db_session, "42", now=T0 + timedelta(seconds=1))
    assert after.status == "code_sent" and after.user_id is None
    with pytest.raises(PairingCodeUnknown):  # the old code does not bring it back
        approve(db_session, code, approver="owner", settings=P, now=T0 + timedelta(seconds=2))
    assert admit_as(db_session, "42", now=T0 + timedelta(seconds=3)).status == "ignored"


@attack
def test_a_code_pairs_only_its_own_request(db_session: Session) -> None:
    tg = admit_as(db_session, "42", channel="telegram").code
    web = admit_as(db_session, "42", channel="web").code
    assert tg and web and tg != web
    paired = approve(db_session, tg, approver="owner", settings=P, now=T0)
    assert (paired.channel, paired.sender_id) == ("telegram", "42")
    assert find_paired(db_session, "web", "42") is None
    assert admit_as(db_session, "42", channel="web").status == "ignored"
    assert admit_as(db_session, "42", channel="telegram").status == "paired"


@attack
def test_a_replayed_code_pairs_nobody_else(db_session: Session) -> None:
    code = admit_as(db_session, "42").code
    admit_as(db_session, "666")
    assert code
    approve(db_session, code, approver="owner", settings=P, now=T0)
    with pytest.raises(PairingCodeUnknown):
        approve(db_session, code, approver="owner", settings=P, now=T0)
    assert [p.sender_id for p in list_paired(db_session)] == ["42"]


@attack
def test_a_sender_named_owner_is_not_the_owner(db_session: Session) -> None:
    real = admit_as(db_session, "42").code
    fake = admit_as(db_session, "owner").code
    assert real and fake
    approve(db_session, real, approver="owner", settings=P, now=T0)
    impostor = approve(db_session, fake, approver="owner", settings=P, now=T0)
    assert (impostor.role, impostor.user_id) == ("member", "telegram:owner")
    assert admit_as(db_session, "owner").user_id == "telegram:owner"


@attack
def test_every_refusal_leaves_exactly_one_audit_line(db_session: Session,
                                                     audit: AuditLog) -> None:
    def refused(call: Callable[[], object]) -> None:
        before = len(audit_lines(audit))
        try:
            result = call()
        except PairingError:
            result = None
        assert result is None or getattr(result, "status", "") == "ignored" or result is False
        assert len(audit_lines(audit)) == before + 1

    code = admit_as(db_session, "a", audit=audit).code
    assert code
    admit_as(db_session, "b", audit=audit)
    admit_as(db_session, "c", audit=audit)
    refused(lambda: admit_as(db_session, "a", audit=audit))  # already pending
    refused(lambda: admit_as(db_session, "d", audit=audit))  # cap
    refused(lambda: approve(db_session, "AAAAAAAA", approver="owner", settings=P, now=T0,
                            audit=audit))  # unknown
    refused(lambda: approve(db_session, code, approver="owner", settings=P, now=T0 + TTL,
                            audit=audit))  # expired
    refused(lambda: revoke(db_session, channel="telegram", sender_id="z", audit=audit))
    for _ in range(3):
        refused(lambda: approve(db_session, "BBBBBBBB", approver="owner", settings=P, now=T0,
                                audit=audit))
    refused(lambda: approve(db_session, "CCCCCCCC", approver="owner", settings=P, now=T0,
                            audit=audit))  # locked
    lines = audit_lines(audit)
    assert all(ln["action"] == "pairing" for ln in lines)
    assert code not in audit.log_path.read_text()


@attack
async def test_approving_without_the_owner_token_pairs_nobody(make_home: MakeHome) -> None:
    from metnos.ground.db.engine import database_url, make_engine
    from metnos.ground.db.engine import session as db_session

    home = make_home()
    engine = make_engine(database_url(home.settings))
    async with pairing_client(home, token="guess") as client:
        with db_session(engine) as db:
            code = admit(db, channel="telegram", sender_id="666",
                         settings=home.settings.policy).code
        for body in ({"code": code}, {"code": code, "approver": "owner"}):
            resp = await client.post("/api/pairing/approve", json=body)
            assert resp.status_code == 401
        resp = await client.post("/api/pairing/approve", json={"code": code},
                                 headers={"Authorization": ""})
        assert resp.status_code == 401
    with db_session(engine) as db:
        assert list_paired(db) == []
    engine.dispose()
    # pairing state lives in the database only: nothing in the workspace an executor sees
    for path in home.workspace.rglob("*"):
        if path.is_file() and ".audit" not in path.parts:
            text = path.read_text(errors="replace")
            assert "666" not in text and (code or "-") not in text, path
    assert not [p for p in home.path.rglob("*pairing*")]
