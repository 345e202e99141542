"""Mixed requests (SPEC §10): explain, keep the operative clause verbatim, confirm it once.

"How do I undo a change? and undo yesterday's too": the Tutor answers the explanation and asks
whether to do «undo yesterday's too», the exact substring of the request, never rephrased. The
confirmation is a row bound to the person, the conversation, the catalog version the answer
rested on and an expiry (`[tutor] confirm_ttl_s`), used once. A plain yes in the same
conversation hands the clause to the loop (or the embedded planner) as the turn's text, with
every check of a new turn: nothing is bypassed and the autonomy is the session's. A plain no
drops it; any other message drops it too and is a normal turn.

The split must be safe, or the Tutor asks for the two parts separately: exactly one operative
clause, every other clause one to explain, the clauses covering the whole request (only
separators between them), each clause clearly of its class (not merely nearer it), and an
operative clause that stands alone. The rule for the last is
deliberately conservative: the clause must say what it acts on (two words at least beside the
language's fillers) and hold no word that stands for something said before ("do it",
"fallo", "undo that"); "undo yesterday's too" and "annulla quella di ieri" pass, since the
loop reads them with the conversation's history.

An open dialogue is never replaced: with an approval card still pending in the conversation the
Tutor opens no confirmation and the loop takes the message.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from metnos.features.tutor.classify import Classification, leans, load_intents
from metnos.features.tutor.confirm_models import TutorConfirmation
from metnos.ground import i18n
from metnos.ground.db.models import utcnow
from metnos.ground.i18n import FALLBACK_LANG
from metnos.mechanisms.approvals.models import Approval
from metnos.mechanisms.audit import AuditLog
from metnos.turns.context import TurnContext

DATA = Path(__file__).with_name("data")
WORD = re.compile(r"[\w'’.\-]+")
MIN_CONTENT = 2  # an operative clause names an operation and what it acts on
# An unsafe split is the Tutor's to refuse only when a clause not clearly operative is about
# Metnos: its best section scores this much (by cosine alone). Measured on the
# compiled docs: "tell me how many", "dimmi cosa resta" after the user's own actions at most
# 0.23 (the loop's); "explain the approvals" 0.42, "explain how to delete a file" 0.54.
ABOUT_METNOS = 0.30


@dataclass(frozen=True)
class Words:
    yes: frozenset[str]
    no: frozenset[str]
    refers: frozenset[str]
    fillers: frozenset[str]


@dataclass(frozen=True)
class Split:
    explained: str  # the clauses to explain, verbatim, in order
    clause: str     # the one operative clause, verbatim


@dataclass(frozen=True)
class Unsafe:
    reason: str  # operative_clauses | observation | uncovered | uncertain | refers_back
    questions: tuple[str, ...] = ()  # the clauses not clearly operative, verbatim


@dataclass(frozen=True)
class Settled:
    """What a message did to its conversation's pending confirmation: `clause` to run as the
    turn's text, a `reply` that closes the turn, or neither (a normal turn)."""

    clause: str | None = None
    reply: str | None = None


@lru_cache(maxsize=8)
def load_words(lang: str) -> Words:
    path = DATA / lang / "confirm.toml"
    if not path.is_file():
        path = DATA / FALLBACK_LANG / "confirm.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return Words(*(frozenset(fold(w) for w in data.get(k, ()))
                   for k in ("yes", "no", "refers", "fillers")))


def fold(text: str) -> str:
    """Case, accents' composition, punctuation and spaces folded: how a yes is compared."""
    text = unicodedata.normalize("NFC", text).casefold().replace("’", "'")
    return " ".join("".join(ch if ch.isalnum() or ch == "'" else " " for ch in text).split())


def answer_kind(text: str, lang: str) -> str | None:
    """"yes", "no" or None: whether the whole message is a plain answer (the asker's
    language first, then English)."""
    said = fold(text)
    for words in (load_words(lang), load_words(FALLBACK_LANG)):
        if said in words.yes:
            return "yes"
        if said in words.no:
            return "no"
    return None


def shaped(result: Classification) -> bool:
    """The request has a part to explain and a part to do: the mixed path decides."""
    if result.label == "mixed":
        return True
    kinds = [leans(c.scores) for c in result.clauses]
    return len(kinds) > 1 and "explanation" in kinds and kinds.count("action") > 1


def split(result: Classification, text: str, lang: str) -> Split | Unsafe:
    """The explanation and the one operative clause, or why they cannot be separated."""
    kinds = [leans(c.scores) for c in result.clauses]
    asks = tuple(c.text for c in result.clauses if c.label != "action")
    if kinds.count("action") != 1:
        return Unsafe("operative_clauses", asks)
    if any(k not in ("action", "explanation") for k in kinds):
        return Unsafe("observation", asks)  # a live reading beside an action
    if not covers(text, [c.text for c in result.clauses], lang):
        return Unsafe("uncovered", asks)
    if any(c.label != k for c, k in zip(result.clauses, kinds, strict=True)):
        return Unsafe("uncertain", asks)  # a clause only leaning to its class
    clause = next(c.text for c, k in zip(result.clauses, kinds, strict=True) if k == "action")
    if clause not in text or not stands_alone(clause, lang):
        return Unsafe("refers_back", asks)
    explained = " ".join(c.text for c, k in zip(result.clauses, kinds, strict=True)
                         if k == "explanation")
    return Split(explained, clause)


def covers(text: str, clauses: list[str], lang: str) -> bool:
    """The clauses, in order, are the whole text: only separators and punctuation between."""
    separators = sorted((fold(s) for s in load_intents(lang).separators if fold(s)),
                        key=len, reverse=True)
    pos, gaps = 0, []
    for clause in clauses:
        at = text.find(clause, pos)
        if at < 0:
            return False
        gaps.append(text[pos:at])
        pos = at + len(clause)
    gaps.append(text[pos:])
    for gap in gaps:
        rest = f" {fold(gap)} "
        for sep in separators:
            rest = rest.replace(f" {sep} ", " ")
        if rest.strip():
            return False
    return True


def stands_alone(clause: str, lang: str) -> bool:
    """The conservative rule: the clause names what it acts on, and nothing in it stands
    for a part of the explanation."""
    words = load_words(lang)
    said = [w.strip(".'’-").casefold() for w in WORD.findall(clause)]
    said = [w for w in said if w]
    if any(w in words.refers for w in said):
        return False
    return len([w for w in said if w not in words.fillers]) >= MIN_CONTENT


class Confirmations:
    """The pending confirmations of one instance (blocking calls: run them in a thread)."""

    def __init__(self, engine: Engine, audit: AuditLog, ttl_s: int) -> None:
        self.engine = engine
        self.audit = audit
        self.ttl = timedelta(seconds=ttl_s)

    def open_dialogue(self, session_id: str) -> bool:
        """An approval card still waits in this conversation: it is not replaced."""
        with Session(self.engine, expire_on_commit=False) as db:
            row = db.exec(select(Approval.id).where(
                col(Approval.session_id) == session_id, col(Approval.status) == "pending",
                col(Approval.expires_at) > utcnow()).limit(1)).first()
        return row is not None

    def ask(self, ctx: TurnContext, clause: str, version: str, reply: str) -> str:
        """Store the confirmation (this conversation's earlier one is dropped) and append
        its question to the explanation."""
        now = utcnow()
        row = TutorConfirmation(id=uuid.uuid4().hex, turn_id=ctx.turn_id, user_id=ctx.user_id,
                                session_id=ctx.session_id, clause=clause, lang=ctx.lang,
                                catalog_version=version, created_at=now,
                                expires_at=now + self.ttl)
        with Session(self.engine, expire_on_commit=False) as db:
            self._close_open(db, ctx, "dropped")
            db.add(row)
            db.commit()
        self._line(ctx, "tutor.confirm_asked", "info", row, outcome="asked")
        question = i18n.get("TUTOR_MIXED_CONFIRM", ctx.lang, clause=clause)
        return f"{reply}\n\n{question}" if reply else question

    def settle(self, ctx: TurnContext, version: str | None) -> Settled:
        """Before the Tutor's plan and the loop: what this message does to a confirmation."""
        kind = answer_kind(ctx.text, ctx.lang)
        with Session(self.engine, expire_on_commit=False) as db:
            if kind is None:
                if self._close_open(db, ctx, "dropped"):
                    db.commit()
                    self.audit.append(action="tutor.confirm_dropped", decision="info",
                                      session_id=ctx.session_id, turn_id=ctx.turn_id,
                                      channel=ctx.channel, sender=ctx.sender,
                                      reason="other_message")
                return Settled()
            return self._answer(db, ctx, kind, version)

    def _answer(self, db: Session, ctx: TurnContext, kind: str, version: str | None) -> Settled:
        now = utcnow()
        mine = db.exec(select(TutorConfirmation).where(
            col(TutorConfirmation.session_id) == ctx.session_id)
            .order_by(col(TutorConfirmation.created_at).desc()).limit(1)).first()
        if mine is not None and mine.user_id != ctx.user_id:
            if mine.consumed_at is None and mine.expires_at > now:
                self._refuse(ctx, mine, "user")  # another person's yes never runs it
            return Settled()
        if mine is None or (mine.consumed_at is not None and mine.expires_at <= now):
            elsewhere = db.exec(select(TutorConfirmation).where(
                col(TutorConfirmation.user_id) == ctx.user_id,
                col(TutorConfirmation.session_id) != ctx.session_id,
                col(TutorConfirmation.consumed_at).is_(None),
                col(TutorConfirmation.expires_at) > now).limit(1)).first()
            if elsewhere is not None:
                self._refuse(ctx, elsewhere, "session")  # bound to its own conversation
            return Settled()
        if mine.consumed_at is not None:
            self._refuse(ctx, mine, "consumed")  # used once: the message is a normal turn
            return Settled()
        if mine.expires_at <= now or mine.catalog_version != version:
            why = "expired" if mine.expires_at <= now else "catalog"
            if self._consume(db, mine, why, now, check=False):
                self._refuse(ctx, mine, why)
                key = "TUTOR_MIXED_EXPIRED" if why == "expired" else "TUTOR_MIXED_CHANGED"
                return Settled(reply=i18n.get(key, ctx.lang))
            self._refuse(ctx, mine, "consumed")
            return Settled()
        outcome = "ran" if kind == "yes" else "declined"
        if not self._consume(db, mine, outcome, now, check=True, version=version):
            self._refuse(ctx, mine, "consumed")  # another answer took it first
            return Settled()
        if kind == "no":
            self._line(ctx, "tutor.confirm_declined", "info", mine, outcome="declined")
            return Settled(reply=i18n.get("TUTOR_MIXED_DECLINED", ctx.lang))
        self._line(ctx, "tutor.confirm_consumed", "allow", mine, outcome="ran")
        return Settled(clause=mine.clause)

    @staticmethod
    def _consume(db: Session, row: TutorConfirmation, outcome: str, now: object, *,
                 check: bool, version: str | None = None) -> bool:
        """Single use: only the UPDATE that finds it unconsumed (and, to run, still valid
        for this person, conversation and catalog) takes it."""
        table = TutorConfirmation
        stmt = update(table).where(col(table.id) == row.id, col(table.consumed_at).is_(None))
        if check:
            stmt = stmt.where(col(table.expires_at) > now, col(table.user_id) == row.user_id,
                              col(table.session_id) == row.session_id,
                              col(table.catalog_version) == version)
        done = db.exec(stmt.values(consumed_at=now, outcome=outcome))
        db.commit()
        return bool(done.rowcount == 1)

    @staticmethod
    def _close_open(db: Session, ctx: TurnContext, outcome: str) -> bool:
        table = TutorConfirmation
        done = db.exec(update(table).where(
            col(table.session_id) == ctx.session_id, col(table.user_id) == ctx.user_id,
            col(table.consumed_at).is_(None)).values(consumed_at=utcnow(), outcome=outcome))
        return bool(done.rowcount)

    def _refuse(self, ctx: TurnContext, row: TutorConfirmation, reason: str) -> None:
        self._line(ctx, "tutor.confirm_refused", "deny", row, reason=reason)

    def _line(self, ctx: TurnContext, action: str, decision: str, row: TutorConfirmation,
              *, outcome: str | None = None, reason: str | None = None) -> None:
        # the args digest covers the clause, the confirmation and the catalog it rests on
        self.audit.append(action=action, decision=decision, session_id=ctx.session_id,
                          turn_id=ctx.turn_id, channel=ctx.channel, sender=ctx.sender,
                          action_id=row.id, outcome=outcome, reason=reason,
                          args={"clause": row.clause, "catalog": row.catalog_version,
                                "asked_in": row.turn_id})


def separately(lang: str) -> str:
    """The reply to a request whose explanation and action cannot be separated safely."""
    return i18n.get("TUTOR_MIXED_SEPARATELY", lang)
