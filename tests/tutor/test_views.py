"""View admission with the real multilingual embedder, and premise correction: "why is the
scheduler stopped?" against a running scheduler is corrected, a stale observation said stale."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from metnos.features.tutor.embedder import Embedder, default_embedder
from metnos.features.tutor.probes import Asker, ProbeContext, SchedulerSignals, default_probes
from metnos.features.tutor.views import (
    Marker,
    _plain_time,
    admit,
    assumed_state,
    facts_answer,
    load_views,
    premise_correction,
    render,
    scheduler_answer,
    visible_views,
)
from tests.tutor.support import NOW, OWNER

# an observation's time as the asker reads it, never the probe's ISO timestamp (issue 27)
EN_T = _plain_time("2026-12-01T22:00:00+00:00", "en")
IT_T = _plain_time("2026-12-01T22:00:00+00:00", "it")


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return default_embedder()


ADMITTED = [
    ("en", "Which services are running and what are they for?", "services"),
    ("it", "Quali servizi sono attivi e a che cosa servono?", "services"),
    ("en", "Why does the scheduler look stopped?", "scheduler"),
    ("it", "Perché lo scheduler risulta fermo?", "scheduler"),
    ("en", "Which executors are admitted?", "executors"),
    ("it", "Quando è il mio prossimo promemoria?", "scheduled_tasks"),
]
WITHDRAWN = [
    ("en", "Check if there is mail"),
    ("en", "check if there is mail for metnos"),
    ("it", "Controlla se c'è posta"),
    ("it", "Controlla se c'è posta metnos"),
    ("en", "What does the approvals page show?"),
    ("it", "Mostrami i file nella mia cartella"),
]


@pytest.mark.parametrize(("lang", "question", "view"), ADMITTED)
def test_admitted(embedder: Embedder, lang: str, question: str, view: str) -> None:
    got = admit(embedder.encode([question])[0], set(), load_views(lang), embedder)
    assert got.reason == "admitted" and got.view is not None and got.view.name == view


@pytest.mark.parametrize(("lang", "question"), WITHDRAWN)
def test_withdrawn_to_the_engine(embedder: Embedder, lang: str, question: str) -> None:
    got = admit(embedder.encode([question])[0], set(), load_views(lang), embedder)
    assert got.view is None and got.reason in ("below_floor", "no_margin")


def test_every_check_can_withdraw(embedder: Embedder) -> None:
    views = load_views("en")
    vec = embedder.encode(["Is the database up?"])[0]
    assert admit(vec, {"service_health"}, views, embedder).reason == "admitted"
    # the nearest view does not cover the mail the question asks about
    assert admit(vec, {"service_health", "mail"}, views, embedder).reason == "not_covered"
    # a second visible view as near as the first: no primary
    services = next(v for v in views if v.name == "services")
    assert admit(vec, set(), [services, services], embedder).reason == "no_margin"
    assert admit(vec, set(), [], embedder).reason == "no_view"


def test_a_member_sees_only_their_own_view(embedder: Embedder) -> None:
    member = Asker("member-2", is_owner=False)
    views = visible_views(load_views("it"), default_probes(), member)
    assert [v.name for v in views] == ["scheduled_tasks"]
    vec = embedder.encode(["Perché lo scheduler risulta fermo?"])[0]
    assert admit(vec, set(), views, embedder).view is None


def test_a_language_without_a_file_uses_english() -> None:
    assert [v.descriptions for v in load_views("xx")] == [v.descriptions
                                                         for v in load_views("en")]


@pytest.mark.parametrize(("lang", "question", "state"), [
    ("en", "Why is the scheduler stopped?", "stopped"),
    ("it", "Perché lo scheduler risulta fermo?", "stopped"),
    ("en", "Why did the scheduler crash?", "failed"),
    ("it", "Perché le esecuzioni sono in ritardo?", "degraded"),
    ("en", "Is the scheduler running?", None),
    ("it", "In che stato è lo scheduler?", None),
])
def test_assumed_state(embedder: Embedder, lang: str, question: str,
                       state: str | None) -> None:
    assert assumed_state(embedder.encode([question])[0], "scheduler", lang, embedder) == state


def test_premise_corrected_against_a_running_scheduler() -> None:
    obs = default_probes().run("scheduler", ProbeContext(
        asker=OWNER, now=NOW,
        scheduler=lambda: SchedulerSignals(True, NOW - timedelta(seconds=5),
                                           runs={"failed": 2})))
    marker = premise_correction("stopped", obs, NOW + timedelta(seconds=1))
    assert marker == Marker("TUTOR_PREMISE_SCHEDULER", {
        "state_key": "TUTOR_SCHEDULER_RUNNING", "assumed_key": "TUTOR_SCHEDULER_STOPPED",
        "time": "2026-12-01T22:00:00+00:00"})
    assert render(marker, "en") == ("The scheduler is running (observed at "
                                    + EN_T + "); it is not stopped.")
    assert render(marker, "it").startswith("Lo scheduler è in funzione (osservato alle ")
    assert premise_correction(None, obs, NOW) is None  # nothing assumed, nothing to correct


def test_premise_confirmed_when_it_is_stopped() -> None:
    obs = default_probes().run("scheduler", ProbeContext(
        asker=OWNER, now=NOW,
        scheduler=lambda: SchedulerSignals(True, NOW - timedelta(minutes=30))))
    assert obs.facts["state"] == "stopped" and obs.cause == "runner_heartbeat_missing"
    assert premise_correction("stopped", obs, NOW) is None
    degraded = default_probes().run("scheduler", ProbeContext(
        asker=OWNER, now=NOW,
        scheduler=lambda: SchedulerSignals(True, NOW, runs={"late": 1})))
    marker = premise_correction("stopped", degraded, NOW)
    assert marker is not None and marker.vars["state_key"] == "TUTOR_SCHEDULER_DEGRADED"


def test_stale_and_partial_are_said() -> None:
    obs = default_probes().run("scheduler", ProbeContext(
        asker=OWNER, now=NOW, scheduler=lambda: SchedulerSignals(True, NOW)))
    stale = premise_correction("stopped", obs, NOW + timedelta(minutes=5))
    assert stale == Marker("TUTOR_OBSERVATION_STALE", {"time": "2026-12-01T22:00:00+00:00"})
    assert render(stale, "en") == ("This observation is stale "
                                   "(taken at " + EN_T + ").")
    assert "non è aggiornata" in render(stale, "it")
    stale_healthy = premise_correction(None, obs, NOW + timedelta(minutes=5))
    assert stale_healthy is not None and stale_healthy.key == "TUTOR_OBSERVATION_STALE"
    partial = default_probes().run("scheduler", ProbeContext(
        asker=OWNER, now=NOW, scheduler=lambda: SchedulerSignals(True, None)))
    marker = premise_correction(None, partial, NOW)
    assert marker is not None and marker.key == "TUTOR_OBSERVATION_PARTIAL"
    gone = default_probes().run("scheduler", ProbeContext(asker=OWNER, now=NOW))
    assert premise_correction("stopped", gone, NOW) == Marker(
        "TUTOR_OBSERVATION_UNAVAILABLE", {})


def _answer(signals: SchedulerSignals, assumed: str | None, lang: str,
            at: datetime = NOW) -> list[str]:
    obs = default_probes().run("scheduler", ProbeContext(asker=OWNER, now=NOW,
                                                         scheduler=lambda: signals))
    return [render(m, lang) for m in scheduler_answer(assumed, obs, at)]


def test_observation_answers_stopped_degraded_healthy_stale() -> None:
    stopped = SchedulerSignals(True, NOW - timedelta(minutes=30), runs={"completed": 3})
    assert _answer(stopped, "stopped", "en") == [
        f"The scheduler is stopped (observed at {EN_T}).",
        "Observed cause: the deployment runner has not given a sign of life recently."]
    assert _answer(stopped, "stopped", "it") == [
        f"Lo scheduler è fermo (osservato alle {IT_T}).",
        "Causa osservata: il runner dei deployment non dà segni di vita da un po'."]
    degraded = SchedulerSignals(True, NOW, runs={"late": 2, "failed": 1})
    assert _answer(degraded, "stopped", "en") == [
        f"The scheduler is degraded (observed at {EN_T}); it is not stopped.",
        "Observed cause: some runs are late."]
    healthy = SchedulerSignals(True, NOW, runs={"failed": 4})
    assert _answer(healthy, "stopped", "it") == [
        f"Lo scheduler è in funzione (osservato alle {IT_T}); non è fermo."]
    assert _answer(healthy, None, "en") == [f"The scheduler is running (observed at {EN_T})."]
    stale = _answer(healthy, "stopped", "en", NOW + timedelta(hours=1))
    assert stale == [f"This observation is stale (taken at {EN_T}).",
                     f"When it was observed ({EN_T}), the scheduler was running; "
                     "its state now is not known."]
    assert "non è aggiornata" in _answer(healthy, None, "it", NOW + timedelta(hours=1))[0]
    partial = _answer(SchedulerSignals(True, None), None, "en")
    assert partial[0].startswith("This observation is incomplete")
    assert _answer(SchedulerSignals(), "stopped", "en") == [
        "The current state could not be observed."]


def test_services_answer_says_up_down_and_unknown_in_both_languages() -> None:
    services = {"database": True, "gateway": True, "prefect_server": False}
    obs = default_probes().run("services", ProbeContext(asker=OWNER, now=NOW,
                                                        services=lambda: services))
    en = [render(m, "en") for m in facts_answer(obs, NOW)]
    assert en[0].startswith("This observation is incomplete")  # two services not known
    assert en[1] == "Up (observed at " + EN_T + "): the database, the gateway."
    assert en[2] == "Down (observed at " + EN_T + "): the Prefect server."
    assert en[3] == "Not known: the deployment runner, the Telegram poller."
    it = " ".join(render(m, "it") for m in facts_answer(obs, NOW))
    assert "Non attivi (osservati alle " + IT_T + "): il server Prefect." in it
    later = [render(m, "en") for m in facts_answer(obs, NOW + timedelta(minutes=5))]
    assert later[0].startswith("This observation is stale")  # said first, never as healthy


def test_an_unavailable_probe_says_so_and_nothing_else() -> None:
    gone = default_probes().run("scheduled_tasks", ProbeContext(asker=OWNER, now=NOW))
    assert facts_answer(gone, NOW) == [Marker("TUTOR_OBSERVATION_UNAVAILABLE", {})]
