"""The recent changes that can still be undone, with short handles (`metnos undo --list`).

A handle is the first `HANDLE_CHARS` characters of the action's id; `resolve`
(`metnos.turns.undo_run`) takes any unique prefix of at least `MIN_PREFIX` characters (as git
does), so nobody types 32 of them.
Each change is told as its reply told it (the activity item's plain words, without the
terminal hint), with when it happened in the household's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlmodel import col, select

from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import Turn, TurnStep
from metnos.ground.i18n.formatting import spoken_time
from metnos.ground.reversibility import valid_action_id
from metnos.mechanisms.undo import PURGED_MARKER, UNDONE_MARKER
from metnos.turns.actions import HANDLE_CHARS, item_text
from metnos.turns.undo_said import not_undoable

if TYPE_CHECKING:
    from metnos.turns.service import TurnService

LOOKBACK = 500


@dataclass
class Change:
    action_id: str
    handle: str
    text: str
    when: str
    sender: str


def recent(service: TurnService, lang: str, limit: int = 10,
           now: datetime | None = None) -> list[Change]:
    """The newest changes still undoable (not undone, copies not cleared), newest first."""
    state = service.settings.state_dir / "before"
    with db_session(service.engine) as db:
        rows = db.exec(
            select(TurnStep, Turn)
            .join(Turn, col(Turn.id) == col(TurnStep.turn_id))
            .where(col(TurnStep.outcome) == "done", col(TurnStep.action_id).is_not(None))
            .order_by(col(Turn.created_at).desc(), col(TurnStep.seq).desc())
            .limit(LOOKBACK)).all()
    now = now or datetime.now(UTC)
    found: list[Change] = []
    for step, turn in rows:
        aid, executor, sender = str(step.action_id), step.executor, turn.sender
        activity, finished, created = turn.activity, step.finished_at, turn.created_at
        if not_undoable(service, executor) or not valid_action_id(aid):
            continue
        folder = state / aid
        if not folder.is_dir() or (folder / UNDONE_MARKER).exists() or \
                (folder / PURGED_MARKER).exists():
            continue
        item = _item(activity, aid)
        if item is None:  # its reply offered no Undo (a read): not a change
            continue
        when = finished or created
        found.append(Change(aid, aid[:HANDLE_CHARS], item_text(item),
                            spoken_time(when if when.tzinfo else when.replace(tzinfo=UTC),
                                        lang, service.settings.tz, now), str(sender)))
        if len(found) >= limit:
            break
    return found


def _item(activity: Any, action_id: str) -> dict[str, Any] | None:
    for item in activity or []:
        if isinstance(item, dict) and item.get("action_id") == action_id and item.get("undo"):
            return item
    return None


def as_dict(change: Change) -> dict[str, Any]:
    return {"action_id": change.action_id, "handle": change.handle, "text": change.text,
            "when": change.when, "sender": change.sender}


def nothing(lang: str) -> str:
    return i18n.get("MSG_UNDO_LIST_EMPTY", lang)
