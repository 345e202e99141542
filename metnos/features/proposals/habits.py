"""Habits in the traces, offered back as "as usual?" (SPEC §7.7, the seed's own example:
"shall I archive tonight's photos as usual?").

A habit is the same chain of tools, on the same kind of thing, asked for by one person at a
similar time of day on `[evolution] habit_min` different days among the last `habit_days`:
fs_find → fs_move into `foto/`, around 21:00, five evenings. The chain is read from the steps
that ran (`turn_step`), the kind of thing from what they reported (a category, a list, the
first folder of a path), the time from the turn, in the household's time zone.

`habit_lead_min` before its usual time, on a day it has not happened yet, the habit becomes a
proposal of origin `trace` (kind `as_usual`), carrying the person's latest words for it: the
Vaglio, the bother budget and the delivery go on from there as for every proposal. Accepting it
runs those words as a turn of that person, with every check (`metnos.features.proposals.usual`).
Nothing is offered in quiet hours, and a habit dismissed twice is not offered again: both are
kept in the silent register, with their reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from metnos.features.notify.quiet import quiet_until
from metnos.features.proposals import store
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import Draft
from metnos.ground.db.models import Turn, TurnStep
from metnos.ground.settings import Settings

KIND = "as_usual"
TITLE = "MSG_PROPOSAL_AS_USUAL"
REASON_QUIET = "MSG_PROPOSAL_SILENT_QUIET"
REASON_DISMISSED = "MSG_PROPOSAL_SILENT_DISMISSED"
DISMISSALS = 2  # dismissed this many times, a habit is not offered again
DAY_MINUTES = 24 * 60
IGNORED_CHANNELS = frozenset({"schedule"})  # a scheduled task is a habit already kept
_THING_KEYS = ("category", "list", "list_name", "account", "channel")
_PATH_KEYS = ("dst", "to", "destination", "folder", "path", "pattern")


@dataclass(frozen=True)
class Habit:
    """One person's habit: its `key` (chain and things), usual local minute of the day, the
    days it happened, and the latest words, language and conversation it was asked in."""

    key: str
    user_id: str
    minute: int
    days: tuple[date, ...]
    text: str
    lang: str
    session_id: str

    def time(self) -> str:
        return f"{self.minute // 60:02d}:{self.minute % 60:02d}"


Acting = Callable[[str], bool]  # whether an executor changes something (its manifest says)


def find_habits(db: Session, settings: Settings, now: datetime,
                acting: Acting = lambda name: True) -> list[Habit]:
    """Every person's habits in the last `habit_days` (one per key and person)."""
    evolution = settings.evolution
    since = now - timedelta(days=evolution.habit_days)
    turns = list(db.exec(select(Turn).where(
        col(Turn.created_at) >= since, col(Turn.created_at) <= now,
        Turn.status == "completed", col(Turn.channel).not_in(IGNORED_CHANNELS))))
    steps: dict[str, list[TurnStep]] = defaultdict(list)
    if turns:
        for step in db.exec(select(TurnStep).where(
                col(TurnStep.turn_id).in_([t.id for t in turns]),
                TurnStep.outcome == "done").order_by(col(TurnStep.seq))):
            steps[step.turn_id].append(step)
    groups: dict[tuple[str, str], list[Turn]] = defaultdict(list)
    for turn in turns:
        key = habit_key(steps.get(turn.id, ()), acting)
        if key:
            groups[(turn.sender, key)].append(turn)
    found = (_habit(user, key, group, settings) for (user, key), group in groups.items())
    return [habit for habit in found if habit is not None]


def habit_key(steps: Sequence[TurnStep], acting: Acting = lambda name: True) -> str:
    """The chain of tools that ran (repeats folded) and the kinds of thing they touched;
    empty for a turn where nothing ran. When some of them changed something, only those
    count: looking around first (a search, a read) one evening and not the next is the same
    habit."""
    changing = [step for step in steps if acting(step.executor)]
    chain: list[str] = []
    things: set[str] = set()
    for step in changing or steps:
        if not chain or chain[-1] != step.executor:
            chain.append(step.executor)
        things.update(_things(step.result or {}))
    if not chain:
        return ""
    return ">".join(chain) + ("|" + ",".join(sorted(things)) if things else "")


def due_now(habit: Habit, settings: Settings, now: datetime) -> bool:
    """Whether `now` is in the habit's lead time on a day it has not happened yet."""
    local = now.astimezone(settings.tz)
    until = (habit.minute - (local.hour * 60 + local.minute)) % DAY_MINUTES  # over midnight
    return local.date() not in habit.days and 0 < until <= settings.evolution.habit_lead_min


def propose_habits(db: Session, settings: Settings, now: datetime,
                   acting: Acting = lambda name: True) -> list[Proposal]:
    """The "as usual?" proposals due now, submitted (each habit once a day); those made in
    quiet hours or for a habit dismissed twice go straight to the silent register."""
    made: list[Proposal] = []
    quiet = quiet_until(settings, now) is not None
    for habit in find_habits(db, settings, now, acting):
        if not due_now(habit, settings, now):
            continue
        local_day = now.astimezone(settings.tz).date().isoformat()
        row = store.submit(db, Draft(
            kind=KIND, origin="trace", user_id=habit.user_id, title_key=TITLE,
            target=habit.key, vars={"text": habit.text, "time": habit.time()},
            payload={"habit": habit.key, "day": local_day, "text": habit.text,
                     "lang": habit.lang, "session_id": habit.session_id}))
        if row is None:
            continue
        reason = REASON_QUIET if quiet else (
            REASON_DISMISSED if dismissals(db, habit) >= DISMISSALS else None)
        if reason is not None:
            store.settle(db, row.id, "silent", {"reason": reason})
            db.refresh(row)
        made.append(row)
    return made


def dismissals(db: Session, habit: Habit) -> int:
    rows = db.exec(select(Proposal).where(Proposal.kind == KIND,
                                          Proposal.user_id == habit.user_id,
                                          Proposal.status == "dismissed"))
    return sum(1 for row in rows if (row.payload or {}).get("habit") == habit.key)


def _habit(user_id: str, key: str, turns: list[Turn], settings: Settings) -> Habit | None:
    cluster = _densest(turns, settings)
    days = {day for day, _, _ in cluster}
    if len(days) < settings.evolution.habit_min:
        return None
    minutes = sorted(minute for _, minute, _ in cluster)
    last = max((turn for _, _, turn in cluster), key=lambda t: t.created_at)
    return Habit(key=key, user_id=user_id, minute=minutes[len(minutes) // 2] % DAY_MINUTES,
                 days=tuple(sorted(days)), text=last.text, lang=last.lang,
                 session_id=last.session_id)


def _densest(turns: Sequence[Turn], settings: Settings) -> list[tuple[date, int, Turn]]:
    """The turns of the most days whose times of day fit in twice `habit_window_min`, as
    (day, minute, turn). Around midnight too: a time after it counts again a day earlier
    and 24 hours later, so 23:50 on Monday and 00:10 on Tuesday are one night's habit."""
    points: list[tuple[date, int, Turn]] = []
    for turn in turns:
        local = turn.created_at.astimezone(settings.tz)
        minute = local.hour * 60 + local.minute
        points += [(local.date(), minute, turn),
                   (local.date() - timedelta(days=1), minute + DAY_MINUTES, turn)]
    points.sort(key=lambda p: p[1])
    width = settings.evolution.habit_window_min * 2
    best: list[tuple[date, int, Turn]] = []
    best_days = 0
    start = 0
    for end in range(len(points)):
        while points[end][1] - points[start][1] > width:
            start += 1
        window = points[start:end + 1]
        days = len({day for day, _, _ in window})
        if days > best_days:
            best, best_days = list(window), days
    return best


def _things(result: Mapping[str, Any]) -> Iterable[str]:
    for name in _THING_KEYS:
        value = result.get(name)
        if isinstance(value, str) and value:
            yield f"{name}:{value[:64]}"
    for name in _PATH_KEYS:
        value = result.get(name)
        if isinstance(value, str) and "/" in value.strip("/"):
            yield f"dir:{value.strip('/').split('/', 1)[0][:64]}"
