"""What counts as a habit (`metnos.features.proposals.habits`), on turns and steps stored in the
real database: the changing steps make the chain (a search some evenings and not others is the
same habit), the kind of thing splits habits, a night habit spans midnight, each person's habits
are their own, too few days make none; and when one is due."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from metnos.features.proposals import habits
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.models import ChatSession, Turn, TurnStep
from metnos.ground.settings import Settings
from tests.support.home import MakeHome

BASE = datetime(2026, 11, 1, tzinfo=UTC)  # the home's zone is UTC below
NOW = BASE + timedelta(days=12)
READING = {"fs_find", "fs_read"}


def acting(name: str) -> bool:
    return name not in READING


@pytest.fixture
def home_db(make_home: MakeHome) -> Iterator[tuple[Settings, Engine]]:
    home = make_home(lang="en", METNOS_TIMEZONE="UTC")
    engine = make_engine(database_url(home.settings))
    yield home.settings, engine
    engine.dispose()


def turn(engine: Engine, user: str, at: datetime, *steps: tuple[str, dict[str, Any]],
         text: str = "file tonight's photos") -> None:
    with Session(engine) as db:
        chat = ChatSession(user_id=user, channel="web")
        db.add(chat)
        db.flush()
        row = Turn(session_id=chat.id, channel="web", sender=user, text=text, lang="en",
                   status="completed", created_at=at)
        db.add(row)
        db.flush()
        for seq, (executor, result) in enumerate(steps, 1):
            db.add(TurnStep(turn_id=row.id, seq=seq, executor=executor, args_digest="-",
                            decision="allow", outcome="done", result=result))
        db.commit()


def found(settings: Settings, engine: Engine, now: datetime = NOW) -> list[habits.Habit]:
    with Session(engine) as db:
        return habits.find_habits(db, settings, now, acting)


MOVE = ("fs_move", {"src": "inbox/a.jpg", "dst": "foto/2026/a.jpg"})
FIND = ("fs_find", {"files": ["inbox/a.jpg"]})


def test_looking_around_first_or_not_is_the_same_habit(
        home_db: tuple[Settings, Engine]) -> None:
    settings, engine = home_db
    for day, minutes in enumerate([-10, 5, 0, 12, -3]):
        steps = (FIND, MOVE) if day % 2 else (MOVE,)
        turn(engine, "owner", BASE + timedelta(days=day + 5, hours=21, minutes=minutes), *steps)
    [habit] = found(settings, engine)
    assert (habit.key, habit.user_id, habit.time(), len(habit.days)) == (
        "fs_move|dir:foto", "owner", "21:00", 5)
    due = NOW.replace(hour=20, minute=45)
    assert habits.due_now(habit, settings, due)
    assert not habits.due_now(habit, settings, due.replace(hour=20, minute=15))  # too early
    assert not habits.due_now(habit, settings, due.replace(hour=21, minute=5))  # its time passed
    assert not habits.due_now(habit, settings, BASE + timedelta(days=9, hours=20, minutes=45))


def test_another_folder_another_person_or_too_few_days_is_not_that_habit(
        home_db: tuple[Settings, Engine]) -> None:
    settings, engine = home_db
    other = ("fs_move", {"src": "inbox/a.pdf", "dst": "bollette/a.pdf"})
    for day in range(4):
        turn(engine, "owner", BASE + timedelta(days=day + 5, hours=21), MOVE)
        turn(engine, "telegram:77", BASE + timedelta(days=day + 5, hours=21), MOVE)
    turn(engine, "owner", BASE + timedelta(days=9, hours=21), other)
    assert found(settings, engine) == []  # four days each: one short
    turn(engine, "telegram:77", BASE + timedelta(days=10, hours=21, minutes=20), MOVE)
    [habit] = found(settings, engine)
    assert habit.user_id == "telegram:77"  # offered to the one who has it


def test_a_night_habit_spans_midnight_and_is_due_before_it(
        home_db: tuple[Settings, Engine]) -> None:
    settings, engine = home_db
    for day in range(5):
        at = BASE + timedelta(days=day + 5, hours=23, minutes=50) if day % 2 else \
            BASE + timedelta(days=day + 6, minutes=10)
        turn(engine, "owner", at, ("lists", {"list": "spesa", "action": "show"}))
    [habit] = found(settings, engine)
    assert (habit.key, habit.time()) == ("lists|list:spesa", "00:10")
    assert habits.due_now(habit, settings, NOW.replace(hour=23, minute=50))
    assert not habits.due_now(habit, settings, NOW.replace(hour=0, minute=20))
