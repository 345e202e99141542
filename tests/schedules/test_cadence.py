"""Recurring times in Italian and English, as cron expressions (metnos.features.schedules.cadence):
the everyday forms the owner writes, cron itself, and what is refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from metnos.features.schedules.cadence import CadenceError, next_times, parse


@pytest.mark.parametrize(("text", "lang", "cron"), [
    ("every Monday at 8", "en", "0 8 * * 1"),
    ("ogni lunedì alle 8", "it", "0 8 * * 1"),
    ("every day at 7:30", "en", "30 7 * * *"),
    ("tutti i giorni alle 7:30", "it", "30 7 * * *"),
    ("every weekday at 18", "en", "0 18 * * 1-5"),
    ("ogni giorno feriale alle 18", "it", "0 18 * * 1-5"),
    ("every Monday and Friday at 6 pm", "en", "0 18 * * 1,5"),
    ("il sabato e la domenica alle 10.15", "it", "15 10 * * 6,0"),
    ("every Sunday at noon", "en", "0 12 * * 0"),
    ("ogni lunedì", "it", "0 9 * * 1"),  # no time: the reminders' default hour
    ("every weekday at midnight", "en", "0 0 * * 1-5"),
    ("every Monday at 8", "it", "0 8 * * 1"),  # an English form in an Italian session
    ("0 8 * * 1", "it", "0 8 * * 1"),
    ("  */15   9-17 * * 1-5 ", "en", "*/15 9-17 * * 1-5"),
    ("Mondays at 8am", "en", "0 8 * * 1"),  # a weekday in the plural is every such day
    ("on Saturdays and Sundays at 10", "en", "0 10 * * 6,0"),
    ("i sabati e le domeniche alle 9", "it", "0 9 * * 6,0"),
])
def test_everyday_forms_and_cron(text: str, lang: str, cron: str) -> None:
    assert parse(text, lang).cron == cron


@pytest.mark.parametrize("text", [
    "in 2 minutes", "tra 10 minuti", "tomorrow at 9", "every day in 2 minutes",
    "every blue moon", "ogni lunedì alle 25", "0 25 * * *", "* * * *", "call grandma",
])
def test_what_is_not_a_recurring_time_is_refused(text: str) -> None:
    with pytest.raises(CadenceError):
        parse(text, "it" if " alle " in text or "tra " in text else "en")


def test_next_times_are_in_the_tasks_zone() -> None:
    after = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)  # a Wednesday
    first, second = next_times("0 8 * * 1", "America/New_York", after, 2)
    assert (first.isoformat(), second.isoformat()) == (
        "2026-12-07T08:00:00-05:00", "2026-12-14T08:00:00-05:00")
