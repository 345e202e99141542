"""Observation probes without a database: the scheduler's states from signals, staleness,
partial signals, the time and size bounds, the owner-only scope, and the services probe's
output holding no endpoint, PID or path."""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import datetime, timedelta

import pytest

from metnos.features.tutor.observation import MAX_BYTES, observe
from metnos.features.tutor.probes import (
    Asker,
    ProbeContext,
    ProbeRefused,
    ProbeRegistry,
    Reading,
    SchedulerSignals,
    default_probes,
)
from tests.tutor.support import NOW, OWNER

MEMBER = Asker("member-2", is_owner=False)


def _scheduler(signals: SchedulerSignals, asker: Asker = OWNER,
               now: datetime = NOW) -> tuple[str, str, str | None]:
    ctx = ProbeContext(asker=asker, now=now, scheduler=lambda: signals)
    obs = default_probes().run("scheduler", ctx)
    return str(obs.facts["state"]), obs.status, obs.cause


def test_scheduler_healthy_even_with_failed_runs_and_quiet() -> None:
    beat = NOW - timedelta(seconds=10)
    assert _scheduler(SchedulerSignals(True, beat, runs={"completed": 4, "failed": 3})) == (
        "running", "ok", None)  # failed tasks do not stop the scheduler
    assert _scheduler(SchedulerSignals(True, beat, runs={})) == (
        "running", "ok", None)  # no runs for a while proves nothing


def test_scheduler_stopped_when_the_runner_is_silent() -> None:
    beat = NOW - timedelta(minutes=10)
    assert _scheduler(SchedulerSignals(True, beat, runs={"completed": 1})) == (
        "stopped", "ok", "runner_heartbeat_missing")


def test_scheduler_degraded_and_failed() -> None:
    beat = NOW - timedelta(seconds=5)
    assert _scheduler(SchedulerSignals(True, beat, runs={"late": 2})) == (
        "degraded", "ok", "runs_late")
    assert _scheduler(SchedulerSignals(True, beat, runs={"crashed": 1, "late": 1})) == (
        "degraded", "ok", "runs_crashed")
    assert _scheduler(SchedulerSignals(False, beat)) == ("failed", "ok", "server_unreachable")


def test_scheduler_partial_is_not_healthy() -> None:
    ctx = ProbeContext(asker=OWNER, now=NOW, scheduler=lambda: SchedulerSignals(True, None))
    obs = default_probes().run("scheduler", ctx)
    assert (obs.facts["state"], obs.status, obs.cause) == ("running", "partial", None)
    assert not obs.healthy
    none = default_probes().run("scheduler", ProbeContext(asker=OWNER, now=NOW))
    assert none.status == "unavailable" and not none.healthy


def test_observation_goes_stale_after_expiry() -> None:
    ctx = ProbeContext(asker=OWNER, now=NOW,
                       scheduler=lambda: SchedulerSignals(True, NOW - timedelta(seconds=1)))
    obs = default_probes().run("scheduler", ctx)
    assert obs.healthy and obs.expires_at == NOW + timedelta(seconds=30)
    assert obs.as_of(NOW + timedelta(seconds=29)).status == "ok"
    later = obs.as_of(obs.expires_at)
    assert later.status == "stale" and not later.healthy
    assert later.facts["state"] == "running"  # what was seen, now marked stale


def test_a_hanging_probe_is_unavailable_within_the_bound() -> None:
    release = threading.Event()
    probes = ProbeRegistry()

    def hang(ctx: ProbeContext) -> Reading:
        release.wait(10)
        return Reading({"x": 1})

    probes.register_probe("hang", hang, scope="self", covers={"x"})
    started = time.monotonic()
    obs = probes.run("hang", ProbeContext(asker=MEMBER, now=NOW), timeout_s=0.3)
    elapsed = time.monotonic() - started
    release.set()
    assert obs.status == "unavailable" and obs.cause == "timeout" and obs.facts == {}
    assert 0.3 <= elapsed < 1.0


def test_a_probe_that_raises_is_unavailable() -> None:
    probes = ProbeRegistry()

    def broken(ctx: ProbeContext) -> Reading:
        raise OSError("/var/lib/secret refused")

    probes.register_probe("broken", broken, scope="self", covers={"x"})
    obs = probes.run("broken", ProbeContext(asker=MEMBER, now=NOW))
    assert obs.status == "unavailable" and "secret" not in obs.to_json()


def test_owner_only_probe_refused_to_another_user() -> None:
    ran: list[str] = []
    probes = ProbeRegistry()
    probes.register_probe("secret", lambda ctx: ran.append("x") or Reading({}),  # type: ignore[func-returns-value]
                          scope="owner", covers={"x"})
    with pytest.raises(ProbeRefused):
        probes.run("secret", ProbeContext(asker=MEMBER, now=NOW))
    assert ran == []  # refused before it ran
    with pytest.raises(ProbeRefused):
        probes.run("missing", ProbeContext(asker=OWNER, now=NOW))
    probes.run("secret", ProbeContext(asker=OWNER, now=NOW))
    assert ran == ["x"]
    defaults = default_probes()
    assert [p.name for p in defaults.visible(MEMBER)] == ["scheduled_tasks"]
    assert {p.name for p in defaults.visible(OWNER)} == {
        "executors", "services", "scheduler", "scheduled_tasks"}


def test_services_probe_says_up_or_down_only() -> None:
    seen = {"database": True, "prefect_server": True, "gateway": True,
            "deployment_runner": False, "telegram_poller": True,
            "metnos-prefect.service": True}  # a unit name the probe must not repeat
    obs = default_probes().run("services", ProbeContext(asker=OWNER, now=NOW,
                                                        services=lambda: seen))
    assert obs.status == "ok"
    assert obs.facts == {"database": "up", "prefect_server": "up", "gateway": "up",
                         "deployment_runner": "down", "telegram_poller": "up"}
    facts = json.dumps(obs.facts)
    assert not re.search(r"\d{2,}|/|:\d|\.service|pid", facts, re.IGNORECASE)
    partial = default_probes().run("services", ProbeContext(
        asker=OWNER, now=NOW, services=lambda: {"database": True}))
    assert partial.status == "partial" and partial.facts["gateway"] is None
    with pytest.raises(ProbeRefused):
        default_probes().run("services", ProbeContext(asker=MEMBER, now=NOW,
                                                      services=lambda: seen))


def test_observation_size_and_safe_values() -> None:
    obs = observe("big", {"a": "x" * 70, "many": list(range(500)), "obj": object(),
                          "m": {str(i): "y" * 70 for i in range(40)}},
                  now=NOW, ttl_s=10, source_version="t/1")
    assert len(obs.to_json().encode()) <= MAX_BYTES
    assert obs.status == "partial" and "obj" not in obs.facts and "m" not in obs.facts
    assert len(obs.facts["many"]) == 40  # type: ignore[arg-type]
    small = observe("small", {"n": 1, "when": NOW}, now=NOW, ttl_s=10, source_version="t/1")
    assert small.status == "ok" and small.facts == {"n": 1, "when": NOW.isoformat()}
