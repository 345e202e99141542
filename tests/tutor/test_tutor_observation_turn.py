"""The Tutor's observation answers in real turns (SPEC §10; issue 14, Build 5): over HTTP
through the gateway app and the Prefect turn flow, the owner asks in Italian and English why
the scheduler looks stopped and hears the observed state: stopped (with its cause), degraded,
running (the premise corrected), and a stale snapshot said to be stale with its time. A
paired member asking the same over Telegram never hears the scheduler's state (an owner-only
probe). The scheduler's signals are the third-party edge: a plain callable returning fixed
`SchedulerSignals` (tests/flows/test_scheduler_signals.py reads the real ones)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from metnos.faces.channels.telegram import TelegramConfig
from metnos.faces.channels.telegram.bot import start_telegram
from metnos.features.tutor.embedder import default_embedder
from metnos.features.tutor.probes import Asker, SchedulerSignals, default_probes
from metnos.features.tutor.views import (
    Marker,
    admit,
    load_views,
    render,
    requested_facts,
    visible_views,
)
from metnos.ground import i18n
from metnos.testing.telegram_server import FakeTelegram
from tests.support.home import GATEWAY_BASE, Home, MakeHome
from tests.support.tutor_catalog import install_catalog
from tests.telegram.support import TOKEN, pair, shown_texts, until
from tests.tutor.test_tutor_turn import _ask, _tutor_lines

QUESTION = {"it": "Perché lo scheduler sembra fermo?",
            "en": "Why does the scheduler look stopped?"}


class Signals:
    """The scheduler's signals as the gateway's snapshot would hold them: set by the test."""

    def __init__(self) -> None:
        self.value = SchedulerSignals()

    def __call__(self) -> SchedulerSignals:
        return self.value

    def seen(self, silent: timedelta, runs: dict[str, int], at: datetime | None = None) -> str:
        """Signals taken `at` (now): the runner's last beat `silent` before; `at` in ISO."""
        at = at or datetime.now(UTC)
        self.value = SchedulerSignals(True, at - silent, 60.0, runs, at, deployments=8)
        return at.isoformat(timespec="seconds")


@asynccontextmanager
async def observed_gateway(home: Home, signals: Signals) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway app with the Prefect turn flow and `signals` as the scheduler's source."""
    from flows.turn import resume_approval, run_turn
    from metnos.faces.gateway.app import create_app
    from metnos.faces.wiring import Edges

    app = create_app(home.settings, runner=run_turn, resumer=resume_approval,
                     edges=Edges(signals=signals))
    async with LifespanManager(app, startup_timeout=60, shutdown_timeout=60) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url=GATEWAY_BASE,
                                     headers=home.auth(), timeout=120) as client:
            client.app = app  # type: ignore[attr-defined]
            yield client


def _said(key: str, lang: str, **values: str) -> str:
    return render(Marker(key, values), lang)


def _answered(home: Home, turn_id: str) -> dict[str, Any]:
    lines = [r for r in _tutor_lines(home) if r["action"] == "tutor.answered"
             and r["turn_id"] == turn_id]
    assert len(lines) == 1, _tutor_lines(home)
    return lines[0]


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_scheduler_observed_stopped_degraded_running_and_stale(
        make_home: MakeHome, prefect_api: str, compiled_catalog: Path, lang: str) -> None:
    home = make_home(lang=lang)
    install_catalog(compiled_catalog, home.path)
    signals = Signals()
    question = QUESTION[lang]
    async with observed_gateway(home, signals) as client:
        # the runner has been silent for ten minutes: stopped, and the cause is said
        at = signals.seen(timedelta(minutes=10), {"completed": 3})
        body = await _ask(client, question)
        reply = body["reply"]
        assert body["status"] == "completed"
        assert _said("TUTOR_SCHEDULER_IS", lang, state_key="TUTOR_SCHEDULER_STOPPED",
                     time=at) in reply, (reply, _tutor_lines(home))
        assert _said("TUTOR_OBSERVED_CAUSE", lang,
                     cause_key="TUTOR_CAUSE_RUNNER_HEARTBEAT_MISSING") in reply, reply
        assert _answered(home, body["turn_id"])["outcome"] == "answered"

        # alive, but a recent run crashed: degraded, so "looks stopped" is corrected
        at = signals.seen(timedelta(seconds=5), {"completed": 3, "crashed": 1})
        reply = (await _ask(client, question))["reply"]
        assert _said("TUTOR_PREMISE_SCHEDULER", lang, state_key="TUTOR_SCHEDULER_DEGRADED",
                     assumed_key="TUTOR_SCHEDULER_STOPPED", time=at) in reply, reply
        assert _said("TUTOR_OBSERVED_CAUSE", lang,
                     cause_key="TUTOR_CAUSE_RUNS_CRASHED") in reply, reply

        # healthy (failed runs do not stop a scheduler): running, the premise corrected
        at = signals.seen(timedelta(seconds=5), {"completed": 3, "failed": 2})
        reply = (await _ask(client, question))["reply"]
        assert _said("TUTOR_PREMISE_SCHEDULER", lang, state_key="TUTOR_SCHEDULER_RUNNING",
                     assumed_key="TUTOR_SCHEDULER_STOPPED", time=at) in reply, reply
        assert i18n.get("TUTOR_OBSERVED_CAUSE", lang).split("{")[0] not in reply

        # the refresher stopped ten minutes ago: what it saw then, said to be stale, with
        # the snapshot's time (not the turn's), and never as the current state
        at = signals.seen(timedelta(seconds=5), {"completed": 3},
                          datetime.now(UTC) - timedelta(minutes=10))
        reply = (await _ask(client, question))["reply"]
        assert _said("TUTOR_OBSERVATION_STALE", lang, time=at) in reply, reply
        assert _said("TUTOR_SCHEDULER_WAS", lang, state_key="TUTOR_SCHEDULER_RUNNING",
                     time=at) in reply, reply
        assert i18n.get("TUTOR_SCHEDULER_IS", lang).split("{")[0] not in reply


async def test_a_member_never_hears_the_scheduler_state(
        make_home: MakeHome, prefect_api: str, compiled_catalog: Path) -> None:
    home = make_home(lang="en")
    install_catalog(compiled_catalog, home.path)
    signals = Signals()
    signals.seen(timedelta(minutes=10), {"completed": 3})
    member = 7101
    with FakeTelegram() as tg:
        async with observed_gateway(home, signals) as client:
            config = TelegramConfig(token=TOKEN, api_base=tg.base_url, poll_timeout_s=1)
            channel = await start_telegram(client.app.state.gateway.turns,  # type: ignore[attr-defined]
                                           home.settings, config)
            assert channel is not None
            try:
                # the first sender ever approved is the owner's own Telegram account
                await pair(client, tg, member - 1, language_code="en")
                await pair(client, tg, member, language_code="en")
                before = len(shown_texts(tg, member))
                tg.push_message(member, QUESTION["en"], language_code="en")
                await until(tg, lambda t: len(shown_texts(t, member)) > before, "a reply")
                assert channel.polling  # what the services probe reads as telegram_poller
            finally:
                await channel.stop(drain_s=2)
            assert not channel.polling
    replies = " ".join(shown_texts(tg, member)[before:])
    for key in ("TUTOR_SCHEDULER_IS", "TUTOR_PREMISE_SCHEDULER", "TUTOR_SCHEDULER_WAS",
                "TUTOR_OBSERVED_CAUSE"):
        assert i18n.get(key, "en").split("{")[0] not in replies, replies
    assert i18n.get("TUTOR_CAUSE_RUNNER_HEARTBEAT_MISSING", "en") not in replies
    lines = _tutor_lines(home)
    assert not [r for r in lines if r["action"] == "tutor.answered"], lines
    withdrawn = [r for r in lines if r["action"] == "tutor.view_withdrawn"]
    assert withdrawn and withdrawn[-1]["reason"] in ("below_floor", "not_covered"), lines


def test_requested_facts_withdraw_what_no_view_covers() -> None:
    """Held-out phrasings (not the data's own): what they ask for decides admission."""
    emb = default_embedder()
    probes = default_probes()

    def admitted(text: str, lang: str, owner: bool = True) -> str | None:
        vec = emb.encode([text])[0]
        views = visible_views(load_views(lang), probes, Asker("u", owner))
        return getattr(admit(vec, requested_facts(vec, lang, emb), views, emb).view,
                       "name", None)

    assert admitted("Why does the scheduler look stopped?", "en") == "scheduler"
    assert admitted("Perché lo scheduler sembra fermo?", "it") == "scheduler"
    assert admitted("Is Prefect down?", "en") == "services"
    assert admitted("Which executors are admitted at the moment?", "en") == "executors"
    # near the services view, but it asks about mail, which no view covers
    assert admitted("Is the mail server up?", "en") is None
    assert admitted("Check if there is mail", "en") is None
    assert admitted("Controlla se c'è posta metnos", "it") is None
    assert admitted("mostrami i file nella mia cartella", "it") is None
    assert admitted("Show me the files in my folder", "en") is None
    # the scheduler's view is not the member's to see: nothing else covers the question
    assert admitted("Why does the scheduler look stopped?", "en", owner=False) is None
    assert admitted("Did my scheduled tasks run today?", "en", owner=False) == \
        "scheduled_tasks"


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_services_observed(make_home: MakeHome, prefect_api: str, compiled_catalog: Path,
                                     lang: str) -> None:
    """The owner asks whether the services are healthy and hears each one's state from the
    gateway's own signals (Telegram not configured here: not known, never "up")."""
    home = make_home(lang=lang)
    install_catalog(compiled_catalog, home.path)
    signals = Signals()
    signals.seen(timedelta(seconds=5), {"completed": 3})
    question = {"it": "I servizi sono tutti in salute adesso?",
                "en": "Are all the services healthy right now?"}[lang]
    async with observed_gateway(home, signals) as client:
        body = await _ask(client, question)
    reply = body["reply"]
    up = render(Marker("TUTOR_SERVICE_DATABASE", {}), lang)
    assert i18n.get("TUTOR_SERVICES_UP", lang).split("{")[0] in reply, (reply,
                                                                        _tutor_lines(home))
    assert up in reply and render(Marker("TUTOR_SERVICE_PREFECT_SERVER", {}), lang) in reply
    unknown = i18n.get("TUTOR_SERVICES_UNKNOWN", lang, names=render(
        Marker("TUTOR_SERVICE_TELEGRAM_POLLER", {}), lang))
    assert unknown in reply, reply
    assert i18n.get("TUTOR_OBSERVATION_PARTIAL", lang).split("(")[0] in reply  # one not known
    assert _answered(home, body["turn_id"])["outcome"] == "answered"
