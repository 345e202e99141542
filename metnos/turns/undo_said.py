"""Undo by saying it (SPEC §5): "annulla", "undo that", "take that back" undo the
conversation's last undoable change; "conferma", "confirm" keep it for good.

The words are the lexicon layer's (`lexicon/<lang>/undo.toml`: verbs, objects, whole
sentences, polite words around them; a third language is one more file, no code). The
embedded planner's path (`turns/pipeline.py`) matches them before any plan; with a model,
the built-in `undo_last` tool (`metnos.turns.undo_tool`) runs the same `undo_last`.

The action undone is the newest change of this session made by this sender (never another
person's, never another session's) that is still undoable; the undo itself goes through
`run_undo`, the Undo button's own path, so the same checks hold (already undone, a reminder
already sent, a copy cleared from the trash, a later change in the way). Saying it again
undoes the change before, or says plainly that nothing is left. The reply speaks of the
person's things, never of ids; the undo's own Undo button (undo the undo) carries the undo's
real action id, only when that undo has a before-record of its own.
"""

from __future__ import annotations

import json
import re
import tomllib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmodel import col, select

from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import Turn, TurnStep, utcnow
from metnos.ground.i18n.formatting import date as i18n_date
from metnos.ground.i18n.lexicon import lexicon_key
from metnos.ground.reversibility import valid_action_id
from metnos.ground.system_lang import Lang
from metnos.mechanisms.undo import PURGED_MARKER, UNDONE_MARKER, UndoError, UndoReport

if TYPE_CHECKING:
    from metnos.turns.context import TurnContext
    from metnos.turns.service import TurnService

LEXICON = "undo"
EXECUTOR = "undo"  # the step an undo said in the chat leaves in the trace
_FOLD_DROP = re.compile(r"[^\w\s]")
MAX_LOOKBACK = 200  # steps of the session looked at, newest first
# refusals said in plain words (the keys' own texts name the action's id)
_PLAIN = {"ERR_UNDO_MANIFEST_INVALID": "MSG_UNDO_SAID_DAMAGED",
          "ERR_UNDO_NOT_FOUND": "MSG_UNDO_SAID_NOTHING",
          "ERR_REMOTE_UNDO_UNAVAILABLE": "MSG_UNDO_SAID_REMOTE",
          "ERR_UNDO_NOTHING_RECORDED": "MSG_UNDO_SAID_FAILED"}


def fold(text: str) -> str:
    """Lower case, no accents, apostrophes and punctuation as spaces, single spaces."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(_FOLD_DROP.sub(" ", text.replace("’", "'")).split())


@dataclass(frozen=True)
class Words:
    undo: frozenset[str] = frozenset()
    confirm: frozenset[str] = frozenset()
    polite: tuple[str, ...] = ()


def words(lang: str, root: Path | None = None) -> Words:
    key = lexicon_key(LEXICON, lang, root)
    return _words(key) if key is not None else Words()


@lru_cache(maxsize=32)
def _words(key: tuple[str, int]) -> Words:
    data = tomllib.loads(Path(key[0]).read_text(encoding="utf-8"))
    verbs = [fold(v) for v in data.get("verbs", [])]
    objects = ["", *(fold(o) for o in data.get("objects", []))]
    undo = {f"{v} {o}".strip() for v in verbs for o in objects}
    undo.update(fold(s) for s in data.get("sentences", []))
    polite = sorted((fold(p) for p in data.get("polite", [])), key=len, reverse=True)
    return Words(frozenset(u for u in undo if u), frozenset(fold(c) for c in
                 data.get("confirm", [])), tuple(p for p in polite if p))


def said(text: str, langs: Sequence[Lang], root: Path | None = None
         ) -> tuple[str, Lang] | None:
    """("undo" | "confirm", the language) when `text` is one of the lexicon's sentences in
    one of `langs` (the session's first), else None."""
    folded = fold(text)
    if len(folded) > 80:  # a sentence of its own, not a request to undo
        return None
    for lang in dict.fromkeys(langs):
        found = words(lang, root)
        bare = _strip(folded, found.polite)
        if bare in found.undo:
            return "undo", lang
        if bare in found.confirm:
            return "confirm", lang
    return None


def _strip(text: str, polite: tuple[str, ...]) -> str:
    """`text` without polite words at its start or end (repeatedly)."""
    changed = True
    while changed and text:
        changed = False
        for word in polite:
            if text.startswith(word + " ") or text == word:
                text, changed = text[len(word):].strip(), True
            elif text.endswith(" " + word):
                text, changed = text[:-len(word)].strip(), True
    return text


# -- which action --------------------------------------------------------------------------
def candidates(service: TurnService, session_id: str, sender: str) -> list[tuple[str, str]]:
    """(action id, executor) of this session's steps by `sender` that changed something and
    are not undone yet, newest first."""
    with db_session(service.engine) as db:
        rows = db.exec(
            select(TurnStep.action_id, TurnStep.executor)
            .join(Turn, col(Turn.id) == col(TurnStep.turn_id))
            .where(col(Turn.session_id) == session_id, col(Turn.sender) == sender,
                   col(TurnStep.outcome) == "done", col(TurnStep.action_id).is_not(None))
            .order_by(col(Turn.created_at).desc(), col(TurnStep.seq).desc())
            .limit(MAX_LOOKBACK)).all()
    state = service.settings.state_dir / "before"
    found = []
    for action_id, executor in rows:
        if not_undoable(service, executor) or not valid_action_id(action_id):
            continue
        folder = state / str(action_id)
        if not folder.is_dir() or (folder / UNDONE_MARKER).exists() or \
                (folder / PURGED_MARKER).exists():
            continue
        if _changes_nothing(folder) and not _claimed(service, str(action_id)):
            continue  # a read, or a command with no paths: nothing an undo could put back
        found.append((str(action_id), executor))
    return found


def not_undoable(service: TurnService, executor: str) -> bool:
    """A step never undone itself: an undo, or a host tool's (`wish`, `undo_last`)."""
    return executor == EXECUTOR or executor in service.hooks.host_tools


def _changes_nothing(folder: Path) -> bool:
    try:
        doc = json.loads((folder / "manifest.json").read_bytes())
        return not doc["manifest"]["paths"] and not doc["manifest"].get("mail")
    except (OSError, ValueError, KeyError, TypeError):
        return False  # a damaged or cleared record: the undo itself says why, plainly


def _claimed(service: TurnService, action_id: str) -> bool:
    """Whether an effect's own record (a scheduled task, a reminder) was set by `action_id`
    (undone by its own undoer)."""
    return any(claim(action_id) for claim in service.hooks.claims)


# -- doing it ------------------------------------------------------------------------------
@dataclass
class Said:
    """What an undo said in the chat did: the reply and, when it can be undone in turn, the
    undo's action id (its Undo button)."""

    reply: str
    status: str = "done"  # done | failed | nothing
    undo_id: str | None = None
    action_id: str | None = None
    vars: dict[str, Any] = field(default_factory=dict)


def undo_last(service: TurnService, ctx: TurnContext) -> Said:
    """Undo the newest undoable change of this session by this sender (blocking)."""
    from metnos.turns.undo_run import run_undo  # the Undo button's path, its checks

    for action_id, _ in candidates(service, ctx.session_id, ctx.sender):
        try:
            report = run_undo(service, action_id, sender=ctx.sender, channel=ctx.channel)
        except UndoError as exc:
            if exc.key == "ERR_UNDO_ALREADY_DONE":  # undone meanwhile: the one before
                continue
            return Said(refusal(exc, ctx.lang), "failed", action_id=action_id)
        redo = report.undo_id if report.redo else None
        return Said(told(report, ctx.lang), report.outcome, redo, action_id)
    return Said(i18n.get("MSG_UNDO_SAID_NOTHING", ctx.lang), "nothing")


def refusal(exc: UndoError, lang: str) -> str:
    key = _PLAIN.get(exc.key)
    if exc.key == "ERR_UNDO_PURGED" and "when" in exc.vars:  # the date in the turn's language
        when = datetime.fromisoformat(str(exc.vars["when"]))
        return i18n.get(exc.key, lang, date=i18n_date(when, lang))
    if key is not None:
        return i18n.get(key, lang)
    return i18n.get("MSG_UNDO_SAID_REFUSED", lang, reason=i18n.get(exc.key, lang, **exc.vars))


def told(report: UndoReport, lang: str) -> str:
    """The undo in plain words: what is back, what went to the trash, what did not work."""
    if not report.items:  # a reminder, a scheduled task: their own line, without the head
        lines = report.message(lang).split("\n")[1:]
        return "\n".join(lines) or i18n.get("MSG_UNDO_SAID_DONE", lang)
    renamed = report.executor in ("fs_move", "photo_rename")
    lines = []
    for item in report.items:
        if item.status == "moved_back" and renamed:
            lines.append(i18n.get("MSG_UNDO_SAID_NAME_BACK", lang, path=item.path))
        elif item.status in ("moved_back", "restored"):
            lines.append(i18n.get("MSG_UNDO_SAID_BACK", lang, path=item.path))
        elif item.status == "trashed":
            lines.append(i18n.get("MSG_UNDO_SAID_TRASHED", lang, path=item.path))
        elif item.status == "failed":
            reason = i18n.get(item.key or "ERR_UNDO_FAILED", lang, **item.vars)
            lines.append(i18n.get("MSG_UNDO_SAID_ITEM_FAILED", lang, path=item.path,
                                  reason=reason))
    if not lines:
        lines.append(i18n.get("MSG_UNDO_SAID_DONE", lang))
    if report.outcome != "done":
        lines.insert(0, i18n.get("MSG_UNDO_SAID_PARTLY", lang))
    return "\n".join(lines)


def activity(result: Said) -> dict[str, Any]:
    """The undo as an activity item: its own Undo button when it can be undone in turn."""
    return {"executor": EXECUTOR, "status": "done" if result.status == "done" else "failed",
            "text": result.reply, "action_id": result.undo_id,
            "undo": result.undo_id is not None, "approval_id": None}


def record(service: TurnService, ctx: TurnContext, result: Said, seq: int,
           audit_seq: int | None = None, call_id: str = "", think: int = 0) -> None:
    """The undo's step in the trace: it carries the undo's id (an Undo button on Telegram
    finds whose turn it was), and is never itself a change "annulla" would undo."""
    now = utcnow()
    service.record.record_step(ctx, TurnStep(
        turn_id=ctx.turn_id, seq=seq, executor=EXECUTOR, args_digest="", decision="allow",
        outcome="done" if result.status == "done" else "failed", audit_seq=audit_seq,
        think=think, call_id=call_id, action_id=result.undo_id, started_at=now,
        finished_at=now))


def answer(service: TurnService, ctx: TurnContext, what: str) -> str:
    """The turn's reply to an undo or a confirm said in the chat (blocking): done, its step
    and its activity item recorded."""
    if what == "confirm":
        from metnos.turns.trash import confirm_last

        return confirm_last(service, ctx)
    result = undo_last(service, ctx)
    if result.status != "nothing":
        record(service, ctx, result, seq=1)
        ctx.activity.append(activity(result))
    return result.reply
