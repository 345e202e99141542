"""The Tutor's reply in a turn: the plan's sections composed without a model
(`compose.extractive`), an observation said through its markers first (a stale or partial
one is always said as such; a wrong premise is corrected)."""

from __future__ import annotations

from datetime import UTC, datetime

from metnos.tutor.compose import extractive as compose_extractive
from metnos.tutor.embedder import default_embedder
from metnos.tutor.precheck import Plan
from metnos.tutor.views import Marker, assumed_state, render, scheduler_answer


async def extractive(plan: Plan) -> tuple[str, str]:
    """The reply and its outcome ("answered" or "gap")."""
    observed = None
    if plan.observation is not None:
        observed = " ".join(render(m, plan.lang) for m in markers(plan)) or None
    answer = compose_extractive(plan.question, plan.lang, plan.hits,
                                translations=plan.translations, observed=observed)
    return answer.text, answer.outcome


def markers(plan: Plan) -> list[Marker]:
    """What an observation's answer must say, in order."""
    obs = plan.observation
    assert obs is not None
    now = datetime.now(UTC)
    if obs.probe == "scheduler":
        emb = default_embedder()
        assumed = assumed_state(emb.encode([plan.question])[0], "scheduler", plan.lang, emb)
        return scheduler_answer(assumed, obs, now)
    if obs.as_of(now).status == "stale":
        return [Marker("TUTOR_OBSERVATION_STALE",
                       {"time": obs.taken_at.isoformat(timespec="seconds")})]
    return []
