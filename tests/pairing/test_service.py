"""DM pairing on a real PostgreSQL: codes, the once-only rule, the cap, expiry, owner,
lock-out, revocation, listing, and one audit line per decision."""

from __future__ import annotations

import hashlib
import threading
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from metnos.features.pairing import (
    ALPHABET,
    PairedSender,
    PairingAttempt,
    PairingCodeExpired,
    PairingCodeUnknown,
    PairingLocked,
    PairingRequest,
    admit,
    approve,
    find_paired,
    list_paired,
    list_pending,
    revoke,
)
from metnos.features.pairing.codes import new_code
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms.audit import AuditLog
from tests.pairing.support import T0, TTL, admit_as, audit_lines, policy

P = policy()


def _code(db: Session, sender: str, channel: str = "telegram", now: datetime = T0) -> str:
    adm = admit_as(db, sender, channel, now)
    assert adm.status == "code_sent" and adm.code, adm
    return adm.code


def test_codes_are_8_unambiguous_characters() -> None:
    assert len(ALPHABET) == 31 and not set("0O1IL") & set(ALPHABET)
    codes = {new_code() for _ in range(2000)}
    assert len(codes) == 2000  # 31**8 codes: a repeat here would mean a broken generator
    assert all(len(c) == 8 and set(c) <= set(ALPHABET) for c in codes)
    used = set("".join(codes))
    assert used == set(ALPHABET)  # every character is drawn, none other


def test_unknown_sender_gets_one_code_then_silence(db_session: Session) -> None:
    first = admit(db_session, channel="telegram", sender_id="42", settings=P, now=T0)
    assert first.status == "code_sent" and first.user_id is None
    assert first.message_key == "MSG_PAIRING_CODE_SENT"
    assert first.code and first.code in (first.message("en") or "")
    assert first.code in (first.message("it") or "") and "60" in (first.message("it") or "")
    assert first.code not in repr(first)  # the code does not leak through logs of the object
    for later in (T0 + timedelta(seconds=1), T0 + TTL - timedelta(seconds=1)):
        again = admit(db_session, channel="telegram", sender_id="42", settings=P, now=later)
        assert (again.status, again.code, again.message_key, again.message()) == (
            "ignored", None, None, None)


def test_only_a_digest_of_the_code_is_stored(db_session: Session) -> None:
    code = _code(db_session, "42")
    row = db_session.exec(select(PairingRequest)).one()
    assert row.code_digest == hashlib.sha256(code.encode()).hexdigest()
    assert code not in repr(row.model_dump())


def test_first_approval_makes_the_owner_later_ones_members(db_session: Session) -> None:
    first, second = _code(db_session, "42"), _code(db_session, "77")
    owner = approve(db_session, first, approver="owner", settings=P, now=T0)
    assert (owner.role, owner.user_id, owner.channel, owner.sender_id) == (
        "owner", "owner", "telegram", "42")
    member = approve(db_session, second, approver="owner", settings=P, now=T0)
    assert (member.role, member.user_id) == ("member", "telegram:77")
    adm = admit(db_session, channel="telegram", sender_id="42", settings=P, now=T0)
    assert (adm.status, adm.user_id, adm.role, adm.message_key) == (
        "paired", "owner", "owner", None)
    adm = admit(db_session, channel="telegram", sender_id="77", settings=P, now=T0)
    assert (adm.status, adm.user_id, adm.role) == ("paired", "telegram:77", "member")


def test_code_is_case_insensitive_and_trimmed(db_session: Session) -> None:
    code = _code(db_session, "42")
    paired = approve(db_session, f"  {code.lower()}\n", approver="owner", settings=P, now=T0)
    assert paired.sender_id == "42"


def test_a_used_code_is_unknown(db_session: Session) -> None:
    code = _code(db_session, "42")
    approve(db_session, code, approver="owner", settings=P, now=T0)
    with pytest.raises(PairingCodeUnknown) as err:
        approve(db_session, code, approver="owner", settings=P, now=T0)
    assert err.value.key == "ERR_PAIRING_CODE_UNKNOWN"
    assert "pending" in i18n.message(err.value, "en")


def test_expired_code_is_refused_and_the_next_message_gets_a_new_one(db_session: Session) -> None:
    old = _code(db_session, "42")
    late = T0 + TTL
    with pytest.raises(PairingCodeExpired) as err:
        approve(db_session, old, approver="owner", settings=P, now=late)
    assert i18n.message(err.value, "it").startswith("Quel codice di abbinamento è scaduto")
    new = _code(db_session, "42", now=late)
    assert new != old
    with pytest.raises(PairingCodeExpired):  # the old one stays dead
        approve(db_session, old, approver="owner", settings=P, now=late)
    assert approve(db_session, new, approver="owner", settings=P, now=late).sender_id == "42"


def test_at_most_three_pending_per_channel(db_session: Session) -> None:
    codes = [_code(db_session, s) for s in ("a", "b", "c")]
    assert admit(db_session, channel="telegram", sender_id="d", settings=P,
                 now=T0).status == "ignored"
    _code(db_session, "d", channel="web")  # the cap is per channel
    approve(db_session, codes[0], approver="owner", settings=P, now=T0)  # frees a slot
    later = T0 + timedelta(minutes=1)
    d_code = _code(db_session, "d", now=later)
    assert admit(db_session, channel="telegram", sender_id="e", settings=P,
                 now=later).status == "ignored"
    # b and c expire an hour after T0: their slots free up, d's (a minute younger) not yet
    assert _code(db_session, "e", now=T0 + TTL)
    assert _code(db_session, "f", now=T0 + TTL)
    assert admit(db_session, channel="telegram", sender_id="g", settings=P,
                 now=T0 + TTL).status == "ignored"
    assert approve(db_session, d_code, approver="owner", settings=P, now=T0 + TTL).sender_id == "d"


def test_lock_out_after_repeated_wrong_codes(db_session: Session) -> None:
    right = _code(db_session, "42")
    for i in range(5):
        with pytest.raises(PairingCodeUnknown):
            approve(db_session, "ZZZZZZZ" + ALPHABET[i], approver="owner", settings=P,
                    now=T0 + timedelta(seconds=i))
    with pytest.raises(PairingLocked) as err:  # even the right code
        approve(db_session, right, approver="owner", settings=P, now=T0 + timedelta(seconds=10))
    assert err.value.vars == {"minutes": 15}
    assert "15" in i18n.message(err.value, "en")
    assert find_paired(db_session, "telegram", "42") is None
    # the lock lasts until the first of those failures leaves the 15-minute window
    with pytest.raises(PairingLocked):
        approve(db_session, right, approver="owner", settings=P,
                now=T0 + timedelta(seconds=899))
    paired = approve(db_session, right, approver="owner", settings=P,
                     now=T0 + timedelta(seconds=900))
    assert paired.sender_id == "42"
    outcomes = [a.outcome for a in db_session.exec(select(PairingAttempt).order_by(
        PairingAttempt.at))]  # type: ignore[arg-type]
    assert outcomes == ["unknown"] * 5 + ["locked", "locked", "ok"]


def test_malformed_and_expired_codes_count_as_failures(db_session: Session) -> None:
    stale = _code(db_session, "42")
    late = T0 + TTL
    for bad in ("", "short", "O0O0O0O0", "x" * 64, stale, stale):
        with pytest.raises((PairingCodeUnknown, PairingCodeExpired)):
            approve(db_session, bad, approver="owner", settings=policy(pairing_max_failures=6),
                    now=late)
    with pytest.raises(PairingLocked):
        approve(db_session, "anything", approver="owner", settings=policy(pairing_max_failures=6),
                now=late)


def test_revoke_unpairs_and_a_new_approval_restores_the_same_user(db_session: Session) -> None:
    approve(db_session, _code(db_session, "42"), approver="owner", settings=P, now=T0)
    assert revoke(db_session, channel="telegram", sender_id="42") is True
    assert revoke(db_session, channel="telegram", sender_id="42") is False
    assert list_paired(db_session) == []
    code = _code(db_session, "42", now=T0 + timedelta(minutes=5))  # starts over
    again = approve(db_session, code, approver="owner", settings=P, now=T0 + timedelta(minutes=5))
    assert (again.role, again.user_id, again.revoked_at) == ("owner", "owner", None)
    assert len(db_session.exec(select(PairedSender)).all()) == 1


def test_lists(db_session: Session) -> None:
    now = T0 + timedelta(minutes=1)
    approve(db_session, _code(db_session, "1"), approver="owner", settings=P, now=T0)
    _code(db_session, "2")
    _code(db_session, "3", channel="web", now=now)
    ours = ("telegram", "web")  # the concurrency test below commits on other channels
    pending = [r for r in list_pending(db_session, now=now) if r.channel in ours]
    assert [(r.channel, r.sender_id) for r in pending] == [("telegram", "2"), ("web", "3")]
    later = list_pending(db_session, now=T0 + TTL)
    assert [r.sender_id for r in later if r.channel in ours] == ["3"]
    assert [(p.sender_id, p.role) for p in list_paired(db_session)] == [("1", "owner")]


def test_bad_identifiers_are_a_programming_error(db_session: Session) -> None:
    for channel, sender in (("", "1"), ("telegram", ""), ("telegram", "a\nb"),
                            ("telegram", "x" * 300), ("tele:gram", "1"), ("Telegram", "1")):
        with pytest.raises(ValueError):
            admit(db_session, channel=channel, sender_id=sender, settings=P)


def test_each_decision_leaves_one_audit_line_without_the_code(db_session: Session,
                                                               audit: AuditLog) -> None:
    def message(sender: str) -> str | None:
        return admit(db_session, channel="telegram", sender_id=sender, now=T0, settings=P,
                     audit=audit).code

    def approved(code: str) -> None:
        approve(db_session, code, approver="owner", now=T0, settings=P, audit=audit)

    code = message("42")
    message("42")
    for s in ("b", "c", "d"):
        message(s)
    with pytest.raises(PairingCodeUnknown):
        approved("ABCDEFGH")
    assert code
    approved(code)
    message("42")  # paired: no pairing line, the turn it opens is audited
    revoke(db_session, channel="telegram", sender_id="42", audit=audit)
    revoke(db_session, channel="telegram", sender_id="nobody", audit=audit)
    lines = audit_lines(audit)
    assert [(ln["sender"], ln["channel"], ln["decision"], ln["reason"], ln["outcome"])
            for ln in lines] == [
        ("42", "telegram", "ask", "MSG_PAIRING_CODE_SENT", "code_sent"),
        ("42", "telegram", "deny", "ERR_PAIRING_ALREADY_PENDING", "ignored"),
        ("b", "telegram", "ask", "MSG_PAIRING_CODE_SENT", "code_sent"),
        ("c", "telegram", "ask", "MSG_PAIRING_CODE_SENT", "code_sent"),
        ("d", "telegram", "deny", "ERR_PAIRING_TOO_MANY_PENDING", "ignored"),
        ("owner", None, "deny", "ERR_PAIRING_CODE_UNKNOWN", "unknown"),
        ("owner", "telegram", "allow", "MSG_PAIRING_APPROVED", "approved telegram:42 as owner"),
        ("owner", "telegram", "allow", "MSG_PAIRING_REVOKED", "revoked telegram:42"),
        ("owner", "telegram", "deny", "ERR_PAIRING_NOT_PAIRED", "not_paired"),
    ]
    assert all(ln["action"] == "pairing" for ln in lines)
    assert lines[0]["action_id"] == lines[6]["action_id"]  # the request, from code to approval
    assert code not in audit.log_path.read_text()
    for ln in lines:
        assert i18n.get(ln["reason"], "en") != ln["reason"], ln["reason"]  # a real message


def test_concurrent_messages_respect_the_cap_and_the_once_rule(db_engine: Engine) -> None:
    """Real concurrent sessions (committed): the advisory lock serialises each channel."""
    results: list[str] = []

    def send(channel: str, sender: str) -> None:
        with db_session(db_engine) as db:
            results.append(admit(db, channel=channel, sender_id=sender, settings=P).status)

    threads = [threading.Thread(target=send, args=("race-a", f"s{i}")) for i in range(12)]
    threads += [threading.Thread(target=send, args=("race-b", "same")) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(["code_sent"] * 4 + ["ignored"] * 16)
    with db_session(db_engine) as db:
        pending = list_pending(db)
        assert sorted(r.channel for r in pending) == ["race-a"] * 3 + ["race-b"]
