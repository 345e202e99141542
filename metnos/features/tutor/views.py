"""View admission (the seed's three checks) and premise correction.

A view is a registered probe, the facts it covers, and descriptions per language (the data
files `data/views.toml` and `data/<lang>/views.toml`; a language without a file uses English).
`admit` proposes the view nearest to the question, verifies that this one view covers every
requested fact (`requested_facts`: the facts of `[facts]` the question is nearest to), and
confirms it is the primary by a margin over every other visible view; if any check fails it
withdraws and the request goes to the normal engine ("check if there is mail" asks for mail,
which no view covers). `premise_correction` compares what a question
takes for granted ("why is the scheduler stopped?") with the observation and returns a marker
for the composer: the i18n key and its variables.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from metnos.features.tutor.embedder import Embedder
from metnos.features.tutor.observation import Observation
from metnos.features.tutor.probes import Asker, ProbeRegistry
from metnos.ground.i18n import FALLBACK_LANG

DATA = Path(__file__).with_name("data")
FLOOR = 0.5  # nearest view below this: not about it (measured: asked 0.59+, others 0.46-)
MARGIN = 0.05  # the primary's lead over the next visible view
PREMISE_FLOOR = 0.6
FACT_FLOOR = 0.45  # a fact below this is not asked for (measured: asked 0.52+, others 0.41-)
FACT_SPREAD = 0.1  # facts this close to the nearest one are asked for too
NEUTRAL = "neutral"  # the prototypes of a question that assumes no state
SCHEDULER_STATE_KEYS = {"running": "TUTOR_SCHEDULER_RUNNING",
                        "degraded": "TUTOR_SCHEDULER_DEGRADED",
                        "failed": "TUTOR_SCHEDULER_FAILED",
                        "stopped": "TUTOR_SCHEDULER_STOPPED"}


@dataclass(frozen=True)
class View:
    name: str
    probe: str
    covers: frozenset[str]
    descriptions: tuple[str, ...]


@dataclass(frozen=True)
class Admission:
    view: View | None  # None: withdrawn, the normal engine answers
    reason: str  # admitted | no_view | below_floor | not_covered | no_margin
    score: float = 0.0
    runner_up: float = 0.0


@dataclass(frozen=True)
class Marker:
    """Something the composer must say, as an i18n key and its variables (values that are
    themselves keys, such as a state's name, end in `_key`)."""

    key: str
    vars: dict[str, str]


def load_views(lang: str) -> list[View]:
    """The views with their descriptions in `lang` (English when `lang` has none)."""
    spec = _read(DATA / "views.toml")
    texts = _texts(lang)
    return [View(name, str(entry["probe"]), frozenset(entry["covers"]),
                 tuple(texts.get(name, {}).get("descriptions", ())))
            for name, entry in spec.items()]


def visible_views(views: Iterable[View], probes: ProbeRegistry, asker: Asker) -> list[View]:
    """The views whose probe the asker may run: the others never take part in admission."""
    return [v for v in views if probes.allowed(v.probe, asker)]


def admit(question_vec: np.ndarray, requested_facts: set[str] | frozenset[str],
          views: Sequence[View], embedder: Embedder, *, floor: float = FLOOR,
          margin: float = MARGIN) -> Admission:
    """Propose, verify, confirm; any failed check withdraws."""
    scored = [(view_score(question_vec, v, embedder), v) for v in views if v.descriptions]
    if not scored:
        return Admission(None, "no_view")
    scored.sort(key=lambda sv: -sv[0])
    best, view = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else -1.0
    if best < floor:
        return Admission(None, "below_floor", best, runner_up)
    if not set(requested_facts) <= view.covers:
        return Admission(None, "not_covered", best, runner_up)
    if best - runner_up < margin:
        return Admission(None, "no_margin", best, runner_up)
    return Admission(view, "admitted", best, runner_up)


def requested_facts(question_vec: np.ndarray, lang: str, embedder: Embedder, *,
                    floor: float = FACT_FLOOR, spread: float = FACT_SPREAD) -> frozenset[str]:
    """The facts the question asks for (`[facts]` of `data/<lang>/views.toml`): the nearest
    one and any within `spread` of it, above `floor`; none when nothing stands out (then the
    views' own floor and margin decide). A fact no view covers makes the check fail."""
    vec = np.asarray(question_vec, dtype=np.float32).reshape(-1)
    scored = [(float(np.max(_encoded(embedder, tuple(texts)) @ vec)), name)
              for name, texts in _texts(lang).get("facts", {}).items() if texts]
    best = max((score for score, _ in scored), default=0.0)
    if best < floor:
        return frozenset()
    return frozenset(name for score, name in scored if score >= max(floor, best - spread))


def warm(langs: Iterable[str], embedder: Embedder) -> None:
    """Encode every view description and fact of `langs` (at start-up): the first
    observation question then pays for none of them inside the pre-check's window."""
    for lang in langs:
        for view in load_views(lang):
            if view.descriptions:
                _encoded(embedder, view.descriptions)
        for texts in _texts(lang).get("facts", {}).values():
            if texts:
                _encoded(embedder, tuple(texts))


def view_score(question_vec: np.ndarray, view: View, embedder: Embedder) -> float:
    """The question's cosine with the nearest of the view's descriptions."""
    matrix = _encoded(embedder, view.descriptions)
    return float(np.max(matrix @ np.asarray(question_vec, dtype=np.float32).reshape(-1)))


def assumed_state(question_vec: np.ndarray, subject: str, lang: str,
                  embedder: Embedder, floor: float = PREMISE_FLOOR) -> str | None:
    """The state of `subject` the question takes for granted, if one prototype stands out."""
    prototypes = _texts(lang).get("premise", {}).get(subject, {})
    best: tuple[float, str | None] = (floor, None)
    for state, texts in prototypes.items():
        score = float(np.max(_encoded(embedder, tuple(texts)) @ question_vec.reshape(-1)))
        if score >= best[0]:
            best = (score, state)
    return None if best[1] == NEUTRAL else best[1]


def premise_correction(assumed: str | None, obs: Observation, now: Any) -> Marker | None:
    """What the composer must say before anything else about the scheduler observation:
    stale, incomplete or unavailable is said; a wrong assumed state is corrected; a confirmed
    premise needs no marker."""
    current = obs.as_of(now)
    time = current.taken_at.isoformat(timespec="seconds")
    if current.status == "unavailable":
        return Marker("TUTOR_OBSERVATION_UNAVAILABLE", {})
    if current.status == "stale":
        return Marker("TUTOR_OBSERVATION_STALE", {"time": time})
    state = current.facts.get("state")
    if current.status == "partial":
        return Marker("TUTOR_OBSERVATION_PARTIAL", {"time": time})
    if assumed is None or not isinstance(state, str) or state == assumed:
        return None
    if state not in SCHEDULER_STATE_KEYS or assumed not in SCHEDULER_STATE_KEYS:
        return None
    return Marker("TUTOR_PREMISE_SCHEDULER", {"state_key": SCHEDULER_STATE_KEYS[state],
                                              "assumed_key": SCHEDULER_STATE_KEYS[assumed],
                                              "time": time})


def scheduler_answer(assumed: str | None, obs: Observation, now: Any) -> list[Marker]:
    """Every marker of an answer about the scheduler, in order: a stale observation says so
    and what it saw then, never as the current state; an incomplete one says so; a wrong
    premise is corrected; the cause only when the observation attests it."""
    current = obs.as_of(now)
    time = current.taken_at.isoformat(timespec="seconds")
    state = current.facts.get("state")
    state_key = SCHEDULER_STATE_KEYS.get(state) if isinstance(state, str) else None
    if current.status == "unavailable" or state_key is None:
        return [Marker("TUTOR_OBSERVATION_UNAVAILABLE", {})]
    if current.status == "stale":
        return [Marker("TUTOR_OBSERVATION_STALE", {"time": time}),
                Marker("TUTOR_SCHEDULER_WAS", {"state_key": state_key, "time": time})]
    markers = []
    if current.status == "partial":
        markers.append(Marker("TUTOR_OBSERVATION_PARTIAL", {"time": time}))
    correction = premise_correction(assumed, replace(current, status="ok"), now)
    markers.append(correction or Marker("TUTOR_SCHEDULER_IS",
                                        {"state_key": state_key, "time": time}))
    if current.cause:
        markers.append(Marker("TUTOR_OBSERVED_CAUSE",
                              {"cause_key": f"TUTOR_CAUSE_{current.cause.upper()}"}))
    return markers


SERVICE_KEYS = {name: f"TUTOR_SERVICE_{name.upper()}" for name in
                ("database", "prefect_server", "gateway", "deployment_runner", "telegram_poller")}


def facts_answer(obs: Observation, now: Any) -> list[Marker]:
    """What an observation of the services, the executors or the asker's scheduled tasks
    says, in order: stale or incomplete first (never presented as healthy), then its facts;
    nothing past what the probe returned (no endpoint, path or reminder text is there)."""
    current = obs.as_of(now)
    time = current.taken_at.isoformat(timespec="seconds")
    if current.status == "unavailable":
        return [Marker("TUTOR_OBSERVATION_UNAVAILABLE", {})]
    markers = []
    if current.status == "stale":
        markers.append(Marker("TUTOR_OBSERVATION_STALE", {"time": time}))
    elif current.status == "partial":
        markers.append(Marker("TUTOR_OBSERVATION_PARTIAL", {"time": time}))
    facts = current.facts
    if obs.probe == "services":
        for state, key in (("up", "TUTOR_SERVICES_UP"), ("down", "TUTOR_SERVICES_DOWN"),
                           (None, "TUTOR_SERVICES_UNKNOWN")):
            names = [SERVICE_KEYS[n] for n in SERVICE_KEYS if n in facts and facts[n] == state]
            if names:
                markers.append(Marker(key, {"names_keys": ",".join(names), "time": time}))
    elif obs.probe == "executors":
        lifecycle = facts.get("lifecycle")
        names = sorted(lifecycle) if isinstance(lifecycle, dict) else []
        markers.append(Marker("TUTOR_EXECUTORS_ADMITTED",
                              {"count": str(len(names)), "names": ", ".join(names)}))
    elif obs.probe == "scheduled_tasks":
        upcoming = facts.get("next_at")
        pending = facts.get("pending", 0)
        first = upcoming[0] if isinstance(upcoming, list) and upcoming else None
        markers.append(Marker("TUTOR_SCHEDULED_PENDING", {"pending": str(pending),
                                                          "delivered": str(facts.get(
                                                              "delivered", 0))})
                       if pending else Marker("TUTOR_SCHEDULED_NONE", {}))
        if first is not None:
            markers.append(Marker("TUTOR_SCHEDULED_NEXT", {"time": str(first)}))
    return markers


def render(marker: Marker, lang: str) -> str:
    """The marker in `lang`: `*_key` variables are looked up first, `*_keys` ones (comma
    separated keys) each looked up and listed."""
    from metnos.ground import i18n

    values: dict[str, str] = {}
    for k, v in marker.vars.items():
        if k.endswith("_keys"):
            values[k[:-5]] = ", ".join(i18n.get(key, lang) for key in v.split(",") if key)
        elif k.endswith("_key"):
            values[k[:-4]] = i18n.get(v, lang)
        else:
            values[k] = _plain_time(v, lang) if k == "time" else v
    return i18n.get(marker.key, lang, **values)


def _plain_time(value: str, lang: str) -> str:
    """An observation's time as the asker reads one (their language, the home's time zone),
    never the raw ISO timestamp the probe recorded."""
    from metnos.ground import i18n
    from metnos.ground.settings import get_settings

    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value
    if when.tzinfo is not None:
        try:
            when = when.astimezone(get_settings().tz)
        except Exception:  # no settings here (a bare render): the machine's own zone
            when = when.astimezone()
    return i18n.date(when, lang, "short")


_vectors: dict[tuple[str, str, tuple[str, ...]], np.ndarray] = {}


def _encoded(embedder: Embedder, texts: tuple[str, ...]) -> np.ndarray:
    key = (embedder.name, embedder.version, texts)
    if key not in _vectors:
        _vectors[key] = embedder.encode(list(texts))
    return _vectors[key]


def _texts(lang: str) -> dict[str, Any]:
    path = DATA / lang / "views.toml"
    return _read(path if path.is_file() else DATA / FALLBACK_LANG / "views.toml")


@cache
def _read(path: Path) -> dict[str, Any]:
    with path.open("rb") as fh:
        return tomllib.load(fh)
