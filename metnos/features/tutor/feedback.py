"""Feedback on the Tutor's answers (SPEC §10, issue 14 Build 8): 👍/👎 in the web chat and
Telegram, for the person who asked only.

When the Tutor answers, `offer` keeps what a rating needs server-side, keyed by the turn
(`tutor_answer`, for `PENDING_TTL`): the asker, the question's vector (never its text), the
sections the answer rests on with their content hashes, the catalog version. The reply
carries one activity item `{"feedback": <turn id>}` that the surfaces turn into buttons.

`rate` judges a press against that row: only the asker, once, before the expiry; any other
press is refused with an audit line. 👍 associates the question's vector with the primary
section (as it was: its content hash); 👎 removes this person's associations of that answer's
sections with questions near this one and records a typed gap:

- `wrong_section`: the cited section is about something else;
- `insufficient`: it is about the question but does not answer it;
- `outdated`: it says something that is no longer true of Metnos;
- `not_about_metnos`: the question was not one for the Tutor.

`boosted` (a hook of `Tutor.plan`) moves the sections this person associated with a near
question (cosine >= `NEAR`) to the front of what retrieval found, never adding one and never
for anyone else. `feedback_report.check` (`metnos tutor feedback-check`, the catalog upkeep)
drops the associations whose section is gone or changed; `boosted` also skips them at use.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from metnos.features.tutor.catalog import (
    Catalog,
    Hit,
    ModelInfo,
    section_hash,
)
from metnos.features.tutor.embedder import EmbedderUnavailable, default_embedder
from metnos.features.tutor.feedback_models import (
    GAP_CAUSES,
    RATINGS,
    TutorAnswer,
    TutorAssociation,
    TutorGap,
)
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.errors import MetnosError
from metnos.mechanisms.audit import AuditLog
from metnos.turns.context import TurnContext

if TYPE_CHECKING:
    from metnos.features.tutor.precheck import Plan, Tutor

log = logging.getLogger(__name__)

# Two questions are "near" when their cosine (USE v3 multilingual) is at least this. Measured
# on it/en pairs (tests/tutor/test_feedback.py): paraphrases 0.79-0.93 (a terse rewording
# 0.67-0.75), other topics 0.19-0.58, "the approvals page" vs "the audit page" 0.74. A
# wrong boost reorders the wrong section first, a missed one only leaves retrieval as it was:
# the threshold sits above the nearest different topic.
NEAR = 0.78
PENDING_TTL = timedelta(days=7)  # how long an answer can be rated
ACTION = "tutor.feedback"

__all__ = ["GAP_CAUSES", "NEAR", "FeedbackRefused", "Rated", "bind", "boosted", "boosts",
           "may_rate", "offer", "rate"]


class FeedbackRefused(MetnosError, PermissionError):
    """A rating that may not count: unknown, another's, expired, already rated, invalid."""

    def __init__(self, key: str, status: int, reason: str | None = None) -> None:
        super().__init__(key)
        self.status = status
        self.reason = reason or key  # the audit's reason: what the caller is not told


@dataclass(frozen=True)
class Rated:
    rating: str
    cause: str | None
    associated: bool = False  # 👍: a new association was stored
    removed: int = 0  # 👎: this person's associations it removed


# ---- binding: which database a Tutor's feedback lives in (set by the runtime) ----

_ENGINES: weakref.WeakKeyDictionary[Tutor, Engine] = weakref.WeakKeyDictionary()
_ENGINES_LOCK = threading.Lock()


def bind(tutor: Tutor, engine: Engine) -> None:
    """Feedback for `tutor`'s answers is kept in `engine`'s database; unbound, none is."""
    with _ENGINES_LOCK:
        _ENGINES[tutor] = engine


def _engine(tutor: Tutor) -> Engine | None:
    with _ENGINES_LOCK:
        return _ENGINES.get(tutor)


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").reshape(-1).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


@lru_cache(maxsize=64)
def _encode(text: str) -> bytes:
    return to_blob(default_embedder().encode([text])[0])


def question_vector(catalog: Catalog, text: str) -> np.ndarray | None:
    """`text`'s vector by the catalog's own model (cached: the pre-check, the boost and the
    offer read the same question); None when the catalog cannot embed."""
    if not catalog.semantic:
        return None
    try:
        if ModelInfo.of(default_embedder()).identity() != catalog.model.identity():
            return None
        return from_blob(_encode(text))
    except EmbedderUnavailable:
        return None


def cosines(rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1) * (float(np.linalg.norm(vector)) or 1.0)
    return np.asarray((rows @ vector) / np.where(norms == 0, 1.0, norms))


# ---- the answer: offered for rating ----

async def offer(tutor: Tutor, ctx: TurnContext, plan: Plan, version: str,
                outcome: str = "") -> None:
    """Keep what a rating of this answer needs and put its buttons' item in the reply's
    activity: an answer that rests on sections, not one that says the Tutor is unavailable.
    Optional: a failure here leaves the answer unchanged (logged)."""
    engine = _engine(tutor)
    if engine is None or not plan.hits or not version or outcome.startswith("unavailable"):
        return
    try:
        await asyncio.to_thread(in_session, engine, _offer, tutor, ctx, plan, version)
    except Exception:  # the answer stands without its buttons
        log.exception("tutor.feedback_offer_failed turn_id=%s", ctx.turn_id)
        return
    ctx.activity.append({"executor": "tutor", "status": "done", "text": "",
                         "action_id": None, "undo": False, "approval_id": None,
                         "feedback": ctx.turn_id})


def _offer(db: Session, tutor: Tutor, ctx: TurnContext, plan: Plan, version: str) -> None:
    catalog = tutor.catalog()
    vector = question_vector(catalog, ctx.text) if catalog is not None else None
    sections = [[h.section.id, h.section.lang, section_hash(h.section)] for h in plan.hits]
    now = utcnow()
    row = TutorAnswer(turn_id=ctx.turn_id, user_id=ctx.user_id, session_id=ctx.session_id,
                      channel=ctx.channel, lang=ctx.lang,
                      vector=to_blob(vector) if vector is not None else None,
                      sections=sections, catalog_version=version, created_at=now,
                      expires_at=now + PENDING_TTL)
    db.merge(row)


# ---- the rating ----

def rate(engine: Engine, audit: AuditLog, turn_id: str, *, user_id: str, rating: str,
         cause: str | None = None, channel: str = "web",
         session_id: str | None = None) -> Rated:
    """`user_id`'s rating of the answer of turn `turn_id` (single use; with `session_id`,
    only from that conversation). One audit line either way; FeedbackRefused when refused
    (unknown and another's answer read alike to the caller: nothing is revealed)."""
    fields: dict[str, Any] = {"sender": user_id, "channel": channel, "action": ACTION,
                              "turn_id": turn_id[:64]}
    try:
        with db_session(engine) as db:
            done = _rate(db, turn_id, user_id, rating, cause, session_id)
    except FeedbackRefused as exc:
        audit.append(**fields, decision="deny", reason=exc.reason, outcome="refused")
        raise
    audit.append(**fields, decision="info", outcome=rating, reason=cause,
                 args={"associated": done.associated, "removed": done.removed})
    return done


def may_rate(engine: Engine, audit: AuditLog, turn_id: str, *, user_id: str,
             channel: str, session_id: str | None = None) -> None:
    """Whether `user_id` may still rate that answer (before a surface offers the causes of
    a 👎); FeedbackRefused, with an audit line, when not."""
    try:
        with db_session(engine) as db:
            _pending(db, turn_id, user_id, session_id, lock=False)
    except FeedbackRefused as exc:
        audit.append(sender=user_id, channel=channel, action=ACTION, turn_id=turn_id[:64],
                     decision="deny", reason=exc.reason, outcome="refused")
        raise


def _pending(db: Session, turn_id: str, user_id: str, session_id: str | None,
             lock: bool = True) -> TutorAnswer:
    query = select(TutorAnswer).where(col(TutorAnswer.turn_id) == turn_id)
    row: TutorAnswer | None = db.exec(query.with_for_update() if lock else query).first()
    if row is None:
        raise FeedbackRefused("ERR_TUTOR_FEEDBACK_UNKNOWN", 404)
    if row.user_id != user_id or (session_id is not None and row.session_id != session_id):
        raise FeedbackRefused("ERR_TUTOR_FEEDBACK_UNKNOWN", 404, "ERR_TUTOR_FEEDBACK_NOT_YOURS")
    if row.rating is not None:
        raise FeedbackRefused("ERR_TUTOR_FEEDBACK_ALREADY", 409)
    if row.expires_at <= utcnow():
        raise FeedbackRefused("ERR_TUTOR_FEEDBACK_EXPIRED", 410)
    return row


def _rate(db: Session, turn_id: str, user_id: str, rating: str, cause: str | None,
          session_id: str | None) -> Rated:
    if rating not in RATINGS or (rating == "down") != (cause is not None) or (
            cause is not None and cause not in GAP_CAUSES):
        raise FeedbackRefused("ERR_TUTOR_FEEDBACK_INVALID", 422)
    row = _pending(db, turn_id, user_id, session_id)
    row.rating, row.cause, row.rated_at = rating, cause, utcnow()
    db.add(row)
    vector = from_blob(row.vector) if row.vector else None
    if rating == "up":
        if row.vector is None or not row.sections:
            return Rated(rating, None)
        section_id, lang, digest = row.sections[0]
        db.add(TutorAssociation(user_id=user_id, turn_id=turn_id, vector=row.vector,
                                section_id=section_id, lang=lang, content_hash=digest,
                                catalog_version=row.catalog_version))
        return Rated(rating, None, associated=True)
    removed = _forget(db, user_id, vector, {(s[0], s[1]) for s in row.sections})
    db.add(TutorGap(user_id=user_id, cause=str(cause),
                    sections=[f"{s[0]}@{s[1]}" for s in row.sections], vector=row.vector,
                    lang=row.lang, catalog_version=row.catalog_version))
    return Rated(rating, cause, removed=removed)


def _forget(db: Session, user_id: str, vector: np.ndarray | None,
            sections: set[tuple[str, str]]) -> int:
    """Delete `user_id`'s associations of `sections` with a question near `vector` (all of
    them for those sections when the answer had no vector)."""
    rows = [r for r in db.exec(select(TutorAssociation)
                               .where(col(TutorAssociation.user_id) == user_id)).all()
            if (r.section_id, r.lang) in sections]
    if vector is not None and rows:
        near = cosines(np.stack([from_blob(r.vector) for r in rows]), vector) >= NEAR
        rows = [r for r, n in zip(rows, near, strict=True) if n]
    for r in rows:
        db.delete(r)
    return len(rows)


# ---- use: this person's boosts ----

def boosts(db: Session, user_id: str, vector: np.ndarray) -> dict[tuple[str, str],
                                                                  tuple[float, str]]:
    """(section id, lang) → (the best cosine of `user_id`'s associations with a question
    near `vector`, the content hash it was associated at). Only `user_id`'s own rows."""
    rows = db.exec(select(TutorAssociation)
                   .where(col(TutorAssociation.user_id) == user_id)).all()
    if not rows:
        return {}
    scores = cosines(np.stack([from_blob(r.vector) for r in rows]), vector)
    out: dict[tuple[str, str], tuple[float, str]] = {}
    for row, score in zip(rows, scores, strict=True):
        key = (row.section_id, row.lang)
        if score >= NEAR and score > out.get(key, (-1.0, ""))[0]:
            out[key] = (float(score), row.content_hash)
    return out


def boosted(tutor: Tutor, ctx: TurnContext, hits: list[Hit]) -> list[Hit]:
    """`hits` with the sections this person associated with a near question first (the
    best association first), each unchanged since; the others keep their order. Optional:
    any failure leaves `hits` as they were."""
    engine = _engine(tutor)
    if engine is None or not hits:
        return hits
    try:
        catalog = tutor.catalog()
        vector = question_vector(catalog, ctx.text) if catalog is not None else None
        if vector is None:
            return hits
        found = in_session(engine, boosts, ctx.user_id, vector)
    except Exception:
        log.exception("tutor.feedback_boost_failed turn_id=%s", ctx.turn_id)
        return hits
    lifted = {}
    for n, hit in enumerate(hits):
        got = found.get((hit.section.id, hit.section.lang))
        if got is not None and got[1] == section_hash(hit.section):  # a changed one: never
            lifted[n] = got[0]
    if not lifted:
        return hits
    first = sorted(lifted, key=lambda n: (-lifted[n], n))
    return [hits[n] for n in first] + [h for n, h in enumerate(hits) if n not in lifted]
