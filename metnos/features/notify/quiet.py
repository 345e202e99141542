"""Quiet hours (`[notify] quiet_hours`), in the household's time zone, enforced in code.

Nothing Metnos starts on its own is delivered inside them, and no model call of a proactive
path is made there (agent_loop.md "Proactivity": quiet hours that lived only in a prompt cost
a peer's users 77 % of their tokens). A message waits for `quiet_until`.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from metnos.ground.settings import Settings


def span(settings: Settings) -> tuple[time, time] | None:
    """The quiet span as (start, end) local times, or None when there are none."""
    text = settings.notify.quiet_hours
    if not text:
        return None
    start, end = (time.fromisoformat(part) for part in text.split("-"))
    return (start, end) if start != end else None


def quiet_until(settings: Settings, now: datetime | None = None) -> datetime | None:
    """When the quiet hours `now` falls in end (aware, UTC); None outside quiet hours."""
    found = span(settings)
    if found is None:
        return None
    start, end = found
    local = (now or datetime.now(UTC)).astimezone(settings.tz)
    at = local.time().replace(tzinfo=None)
    inside = (start <= at < end) if start < end else (at >= start or at < end)
    if not inside:
        return None
    ends = datetime.combine(local.date(), end, tzinfo=local.tzinfo)
    if ends <= local:  # the span crosses midnight and ends tomorrow
        ends = datetime.combine(local.date() + timedelta(days=1), end, tzinfo=local.tzinfo)
    return ends.astimezone(UTC)
