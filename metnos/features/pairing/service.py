"""DM pairing (SPEC §4): who may talk to Metnos on a multi-user channel.

A channel calls `admit` for every incoming message BEFORE anything is processed and opens a
turn only when the answer is `paired`. An unknown sender gets one 8-character code (sent once
per request, valid `pairing_code_ttl_s`), at most `pairing_max_pending` open requests per
channel; the owner approves it by code from the CLI or the web UI (`approve`), the first
approval ever makes that sender the owner. Wrong codes lock approvals out for a while.

Strangers could fill the pending slots and keep a family member out for a code's lifetime: the
owner lists the pending requests and drops one or all of them (`drop`, audited); a dropped
sender gets no new code for `DROPPED_QUIET` (its messages are ignored, audited), so the slot
it held stays free. One sender holds at most one pending request per channel (a unique
partial index, under the channel's advisory lock).

Every decision leaves exactly one audit line (`action="pairing"`) when an audit log is
given; the code itself never reaches the audit log, a log line or the database (only its
SHA-256 digest is stored). Concurrent callers are serialised with PostgreSQL advisory locks
held until the helper's single commit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import func
from sqlmodel import Session, select, update

from metnos.features.pairing.codes import code_digest, new_code, normalise_code, well_formed
from metnos.features.pairing.models import PairedSender, PairingAttempt, PairingRequest
from metnos.ground import i18n
from metnos.ground.db.models import utcnow
from metnos.ground.errors import MetnosError
from metnos.ground.settings import PolicySettings
from metnos.mechanisms.audit import AuditLog
from metnos.mechanisms.policy.approver import OWNER_USER_ID as APPROVER_OWNER

ACTION = "pairing"
OWNER_USER_ID = APPROVER_OWNER  # the same user as the holder of the API owner token
_MAX_ID_CHARS = 256
_FAILED = ("unknown", "expired")
_CHANNEL = re.compile(r"[a-z][a-z0-9_-]{0,31}")
DEVICE_CHANNEL = "device"  # a browser over the overlay (`metnos.features.pairing.devices`)
DROPPED_QUIET = timedelta(days=1)  # a dropped sender's messages are ignored this long

AdmissionStatus = Literal["paired", "code_sent", "ignored"]


class PairingError(MetnosError, PermissionError):
    key = "ERR_PAIRING_CODE_UNKNOWN"


class PairingCodeUnknown(PairingError):
    key = "ERR_PAIRING_CODE_UNKNOWN"


class PairingCodeExpired(PairingError):
    key = "ERR_PAIRING_CODE_EXPIRED"


class PairingLocked(PairingError):
    key = "ERR_PAIRING_LOCKED"


class PairingPersonUnknown(PairingError):
    key = "ERR_PAIRING_PERSON_UNKNOWN"


@dataclass(frozen=True)
class Admission:
    """What a channel does with one incoming message.

    `paired`: process it as `user_id`. `code_sent`: send `message(lang)` (it holds `code`)
    once, process nothing. `ignored`: say nothing, process nothing.
    """

    status: AdmissionStatus
    user_id: str | None = None
    role: str | None = None
    code: str | None = field(default=None, repr=False)
    message_key: str | None = None
    message_vars: dict[str, Any] = field(default_factory=dict, repr=False)
    request_id: str | None = None  # `code_sent`: the new request (the owner may drop it)

    def message(self, lang: str | None = None) -> str | None:
        """What the channel should say to the sender, or None (say nothing)."""
        return i18n.get(self.message_key, lang, **self.message_vars) if self.message_key else None


# -- the channel side -----------------------------------------------------------------------
def admit(db: Session, *, channel: str, sender_id: str, now: datetime | None = None,
          settings: PolicySettings, audit: AuditLog | None = None) -> Admission:
    """The decision for one incoming message of `sender_id` on `channel` (commits)."""
    _check_ids(channel, sender_id)
    now = now or utcnow()
    paired = find_paired(db, channel, sender_id)
    if paired is not None:
        return Admission("paired", user_id=paired.user_id, role=paired.role)
    _lock(db, f"pairing:channel:{channel}")
    _expire_stale(db, channel, now)
    if _pending_of(db, channel, sender_id) is not None:
        return _ignore(db, audit, channel, sender_id, "ERR_PAIRING_ALREADY_PENDING")
    if _dropped_lately(db, channel, sender_id, now):
        return _ignore(db, audit, channel, sender_id, "ERR_PAIRING_DROPPED")
    if _pending_count(db, channel) >= settings.pairing_max_pending:
        return _ignore(db, audit, channel, sender_id, "ERR_PAIRING_TOO_MANY_PENDING")
    return _issue(db, audit, channel, sender_id, now, settings)


def find_paired(db: Session, channel: str, sender_id: str) -> PairedSender | None:
    """The sender's active (not revoked) pairing, if any."""
    query = select(PairedSender).where(
        PairedSender.channel == channel, PairedSender.sender_id == sender_id,
        PairedSender.revoked_at.is_(None))  # type: ignore[union-attr]
    return db.exec(query).first()


def paired_user(db: Session, channel: str, user_id: str) -> PairedSender | None:
    """The paired (not revoked) sender of `user_id` on `channel`, the latest approved."""
    query = (select(PairedSender).where(
        PairedSender.channel == channel, PairedSender.user_id == user_id,
        PairedSender.revoked_at.is_(None))  # type: ignore[union-attr]
             .order_by(PairedSender.approved_at.desc()))  # type: ignore[attr-defined]
    return db.exec(query).first()


def _issue(db: Session, audit: AuditLog | None, channel: str, sender_id: str, now: datetime,
           settings: PolicySettings) -> Admission:
    code = _unused_code(db)
    request = PairingRequest(channel=channel, sender_id=sender_id, code_digest=code_digest(code),
                             created_at=now,
                             expires_at=now + timedelta(seconds=settings.pairing_code_ttl_s))
    db.add(request)
    db.commit()
    _audit(audit, sender=sender_id, channel=channel, decision="ask",
           reason="MSG_PAIRING_CODE_SENT", outcome="code_sent", action_id=request.id)
    minutes = math.ceil(settings.pairing_code_ttl_s / 60)
    return Admission("code_sent", code=code, message_key="MSG_PAIRING_CODE_SENT",
                     message_vars={"code": code, "minutes": minutes}, request_id=request.id)


def _unused_code(db: Session) -> str:
    for _ in range(8):
        code = new_code()
        query = select(PairingRequest.id).where(PairingRequest.code_digest == code_digest(code))
        if db.exec(query).first() is None:
            return code
    raise MetnosError("ERR_INTERNAL_UNEXPECTED")  # 31**8 codes: never in practice


def _ignore(db: Session, audit: AuditLog | None, channel: str, sender_id: str,
            reason: str) -> Admission:
    db.commit()  # the stale requests expired on the way, and the lock released
    _audit(audit, sender=sender_id, channel=channel, decision="deny", reason=reason,
           outcome="ignored")
    return Admission("ignored")


# -- the owner side -------------------------------------------------------------------------
def approve(db: Session, code: str, *, approver: str, now: datetime | None = None,
            settings: PolicySettings, audit: AuditLog | None = None,
            person: str | None = None) -> PairedSender:
    """Pair the sender whose pending request holds `code` (case-insensitive, trimmed).

    `person` says whose it is: `owner`, or the user id of a person already paired (a phone's
    browser joining that member's Telegram, say); None: a new member (on Telegram, the first
    approval ever is the owner's own; a device is never made the owner unless named so).

    Raises PairingLocked after `pairing_max_failures` wrong codes within `pairing_lockout_s`
    (even for a right code), PairingCodeUnknown / PairingCodeExpired for a wrong one.
    """
    now = now or utcnow()
    _lock(db, "pairing:approve")
    until = _locked_until(db, now, settings)
    if until is not None:
        minutes = max(1, math.ceil((until - now).total_seconds() / 60))
        _refuse(db, audit, approver, None, "locked", now)
        raise PairingLocked(minutes=minutes)
    request = _request_by_code(db, normalise_code(code))
    if request is None or request.status == "approved":
        _refuse(db, audit, approver, None, "unknown", now)
        raise PairingCodeUnknown()
    if request.status == "expired" or request.expires_at <= now:
        request.status, request.resolved_at = "expired", request.resolved_at or now
        db.add(request)
        _refuse(db, audit, approver, request.channel, "expired", now)
        raise PairingCodeExpired()
    if person is not None and not _known_person(db, person):
        db.commit()  # not a guess at a code: no failed attempt, the lock released
        _audit(audit, sender=approver, channel=request.channel, decision="deny",
               reason=PairingPersonUnknown.key, outcome="person_unknown")
        raise PairingPersonUnknown(person=person[:64])
    paired = _pair(db, request, approver, now, person)
    db.add(PairingAttempt(approver=approver, outcome="ok", at=now))
    db.commit()
    _audit(audit, sender=approver, channel=paired.channel, decision="allow",
           reason="MSG_PAIRING_APPROVED", action_id=request.id,
           outcome=f"approved {paired.channel}:{paired.sender_id} as {paired.role}")
    return paired


def _request_by_code(db: Session, code: str) -> PairingRequest | None:
    if not well_formed(code):
        return None
    query = select(PairingRequest).where(PairingRequest.code_digest == code_digest(code))
    return db.exec(query.with_for_update()).first()


def _pair(db: Session, request: PairingRequest, approver: str, now: datetime,
          person: str | None = None) -> PairedSender:
    """The first approval ever makes the owner (never a device's); a revoked sender paired
    again keeps its role; `person` given: that person's, whatever it was."""
    query = select(PairedSender).where(PairedSender.channel == request.channel,
                                       PairedSender.sender_id == request.sender_id)
    paired = db.exec(query.with_for_update()).first()
    if paired is None:
        owner = db.exec(select(PairedSender.id).where(
            PairedSender.role == "owner", PairedSender.channel != DEVICE_CHANNEL)).first()
        first = owner is None and request.channel != DEVICE_CHANNEL
        role = "owner" if first else "member"
        user_id = OWNER_USER_ID if role == "owner" else f"{request.channel}:{request.sender_id}"
        paired = PairedSender(channel=request.channel, sender_id=request.sender_id,
                              user_id=user_id, role=role, approved_by=approver, approved_at=now)
    if person is not None:
        paired.user_id = person
        paired.role = "owner" if person == OWNER_USER_ID else "member"
    paired.revoked_at, paired.approved_by, paired.approved_at = None, approver, now
    request.status, request.resolved_at = "approved", now
    db.add(paired)
    db.add(request)
    return paired


def _known_person(db: Session, person: str) -> bool:
    """`owner`, or the user id of someone paired now (a member of the household)."""
    if person == OWNER_USER_ID:
        return True
    query = select(PairedSender.id).where(PairedSender.user_id == person,
                                          PairedSender.revoked_at.is_(None))  # type: ignore[union-attr]
    return db.exec(query).first() is not None


def _locked_until(db: Session, now: datetime, settings: PolicySettings) -> datetime | None:
    """When the lock-out ends, or None: the window holds `pairing_max_failures` wrong codes."""
    window = timedelta(seconds=settings.pairing_lockout_s)
    query = (select(PairingAttempt.at)
             .where(PairingAttempt.outcome.in_(_FAILED),  # type: ignore[attr-defined]
                    PairingAttempt.at > now - window, PairingAttempt.at <= now)
             .order_by(PairingAttempt.at.desc())  # type: ignore[attr-defined]
             .limit(settings.pairing_max_failures))
    failures = list(db.exec(query))
    if len(failures) < settings.pairing_max_failures:
        return None
    return failures[-1] + window


def _refuse(db: Session, audit: AuditLog | None, approver: str, channel: str | None,
            outcome: str, now: datetime) -> None:
    db.add(PairingAttempt(approver=approver, outcome=outcome, at=now))
    db.commit()
    reason = {"locked": PairingLocked, "unknown": PairingCodeUnknown,
              "expired": PairingCodeExpired}[outcome].key
    _audit(audit, sender=approver, channel=channel, decision="deny", reason=reason,
           outcome=outcome)


def revoke(db: Session, *, channel: str, sender_id: str, audit: AuditLog | None = None,
           revoker: str = OWNER_USER_ID, now: datetime | None = None) -> bool:
    """Unpair a sender; False when it was not paired. Its next message starts over."""
    paired = find_paired(db, channel, sender_id)
    if paired is None:
        _audit(audit, sender=revoker, channel=channel, decision="deny",
               reason="ERR_PAIRING_NOT_PAIRED", outcome="not_paired")
        return False
    paired.revoked_at = now or utcnow()
    db.add(paired)
    db.commit()
    _audit(audit, sender=revoker, channel=channel, decision="allow",
           reason="MSG_PAIRING_REVOKED", outcome=f"revoked {channel}:{sender_id}")
    return True


def drop(db: Session, *, channel: str | None = None, sender_id: str | None = None,
         audit: AuditLog | None = None, dropper: str = OWNER_USER_ID,
         now: datetime | None = None) -> list[PairingRequest]:
    """Drop pending requests: the one of `channel`/`sender_id`, or every one when both are
    None. One audit line per request dropped (one `deny` line when there was none); the
    dropped senders get no new code for `DROPPED_QUIET`."""
    now = now or utcnow()
    found = [r for r in list_pending(db, now)
             if channel is None or (r.channel == channel and r.sender_id == sender_id)]
    for request in found:
        request.status, request.resolved_at, request.dropped_by = "expired", now, dropper
        db.add(request)
    db.commit()
    for request in found:
        _audit(audit, sender=dropper, channel=request.channel, decision="allow",
               reason="MSG_PAIRING_DROPPED_COUNT", action_id=request.id,
               outcome=f"dropped {request.channel}:{request.sender_id}")
    if not found:
        _audit(audit, sender=dropper, channel=channel or "-", decision="deny",
               reason="ERR_PAIRING_NOT_PENDING", outcome="not_pending")
    return found


def pending_request(db: Session, request_id: str,
                    now: datetime | None = None) -> PairingRequest | None:
    """The open, unexpired request `request_id`, or None."""
    request = db.get(PairingRequest, request_id)
    if request is None or request.status != "pending" or request.expires_at <= (now or utcnow()):
        return None
    return request


def list_pending(db: Session, now: datetime | None = None) -> list[PairingRequest]:
    """Open, unexpired requests, oldest first (their codes are not stored, so not shown)."""
    now = now or utcnow()
    query = (select(PairingRequest)
             .where(PairingRequest.status == "pending", PairingRequest.expires_at > now)
             .order_by(PairingRequest.created_at))  # type: ignore[arg-type]
    return list(db.exec(query))


def list_paired(db: Session) -> list[PairedSender]:
    """Active pairings, oldest first."""
    query = (select(PairedSender).where(PairedSender.revoked_at.is_(None))  # type: ignore[union-attr]
             .order_by(PairedSender.approved_at))  # type: ignore[arg-type]
    return list(db.exec(query))


# -- private --------------------------------------------------------------------------------
def _pending_of(db: Session, channel: str, sender_id: str) -> PairingRequest | None:
    query = select(PairingRequest).where(
        PairingRequest.channel == channel, PairingRequest.sender_id == sender_id,
        PairingRequest.status == "pending")
    return db.exec(query).first()


def _dropped_lately(db: Session, channel: str, sender_id: str, now: datetime) -> bool:
    query = select(PairingRequest.id).where(
        PairingRequest.channel == channel, PairingRequest.sender_id == sender_id,
        PairingRequest.dropped_by.is_not(None),  # type: ignore[union-attr]
        PairingRequest.resolved_at > now - DROPPED_QUIET)  # type: ignore[operator]
    return db.exec(query).first() is not None


def _pending_count(db: Session, channel: str) -> int:
    query = select(func.count()).select_from(PairingRequest).where(
        PairingRequest.channel == channel, PairingRequest.status == "pending")
    return int(db.exec(query).one())


def _expire_stale(db: Session, channel: str, now: datetime) -> None:
    """Mark the channel's requests past their expiry as `expired` (so they free their slot)."""
    db.exec(update(PairingRequest)
            .where(PairingRequest.channel == channel,  # type: ignore[arg-type]
                   PairingRequest.status == "pending",  # type: ignore[arg-type]
                   PairingRequest.expires_at <= now)  # type: ignore[arg-type]
            .values(status="expired", resolved_at=now))


def _lock(db: Session, key: str) -> None:
    """A PostgreSQL advisory lock on `key` until the transaction ends (the helper's commit)."""
    if db.get_bind().dialect.name == "postgresql":
        db.exec(select(func.pg_advisory_xact_lock(func.hashtext(key))))


def _check_ids(channel: str, sender_id: str) -> None:
    """A channel is one of our names (no `:`, so `channel:sender` user ids cannot collide)."""
    if not _CHANNEL.fullmatch(channel):
        raise ValueError(f"pairing: invalid channel {channel[:40]!r}")
    if not sender_id or len(sender_id) > _MAX_ID_CHARS or not sender_id.isprintable():
        raise ValueError(f"pairing: invalid sender_id {sender_id[:40]!r}")


def _audit(audit: AuditLog | None, **fields: Any) -> None:
    if audit is not None:
        audit.append(action=ACTION, **fields)
