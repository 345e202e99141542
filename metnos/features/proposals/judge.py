"""The Vaglio's teleological judge: how much a proposal serves each aim of TELOS.md, in [0, 1].

- `by_model`: a model in a context of its own — one user message, the `vaglio_judge` prompt
  (`prompts/<lang>/vaglio_judge.j2`), never the conversation that led to the proposal — on
  the `[evolution] judge_tier`, charged to the day's LLM budget. It must answer strict JSON,
  `{"alignment": [a1, ...]}` with one number in [0, 1] per aim; anything else is None (the
  caller falls back).
- `fallback`, without a model: the words of the proposal's text, plus the words of its kind,
  against each aim's words (accent- and case-folded, stop words dropped, compared by their
  first five letters). An aim meeting h words scores min(1, h/2); the alignment is
  `prior + (1 - prior) × Σ weight × score`, the prior being the kind's. Words, stop words and
  priors come from `lexicon/<lang>/judge.toml` (English when the language has none).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import tomllib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from metnos.features.proposals.telos import Telos
from metnos.ground.db.engine import in_session
from metnos.ground.errors import LLMError
from metnos.ground.i18n.lexicon import lexicon_key
from metnos.ground.settings import Settings
from metnos.mechanisms import prompts
from metnos.mechanisms.policy import limits
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.untrusted import wrap_untrusted

if TYPE_CHECKING:
    from metnos.mechanisms.llm.port import LLMPort, LLMReply

log = logging.getLogger(__name__)

ROLE = "vaglio_judge"
STEM = 5
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Judgement:
    alignment: float  # weighted over the aims, in [0, 1]
    per_aim: tuple[float, ...]
    judge: str  # "model" | "fallback"
    cost_usd: float = 0.0


@dataclass(frozen=True)
class _Words:
    stop: frozenset[str]
    priors: dict[str, float]
    kinds: dict[str, tuple[str, ...]]


def _words(lang: str) -> _Words:
    for code in dict.fromkeys((lang.split("-")[0].lower(), "en")):
        if (key := lexicon_key("judge", code)) is not None:
            return _read_words(key)
    return _Words(frozenset(), {}, {})


@lru_cache(maxsize=16)
def _read_words(key: tuple[str, int]) -> _Words:
    table = tomllib.loads(Path(key[0]).read_text(encoding="utf-8"))
    return _Words(frozenset(_fold(w) for w in table.get("words", {}).get("stop", ())),
                  {str(k): float(v) for k, v in table.get("priors", {}).items()},
                  {str(k): tuple(str(w) for w in v) for k, v in table.get("kinds", {}).items()})


def _fold(word: str) -> str:
    plain = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in plain if not unicodedata.combining(c))


def stems(text: str, stop: frozenset[str]) -> set[str]:
    words = (_fold(w) for w in _WORD.findall(text))
    return {w[:STEM] for w in words if len(w) >= 3 and w not in stop and not w.isdigit()}


def fallback(telos: Telos, text: str, kind: str, lang: str) -> Judgement:
    """The judge without a model (see the module doc)."""
    data = _words(lang)
    mine = stems(" ".join((text, *data.kinds.get(kind, ()))), data.stop)
    scores = tuple(min(1.0, len(mine & stems(aim.text, data.stop)) / 2) for aim in telos.aims)
    prior = min(1.0, max(0.0, data.priors.get(kind, data.priors.get("default", 0.3))))
    served = sum(aim.weight * score for aim, score in zip(telos.aims, scores, strict=True))
    return Judgement(round(prior + (1 - prior) * served, 4), scores, "fallback")


def parse_answer(raw: str | None, count: int) -> tuple[float, ...] | None:
    """The per-aim alignments of a strict-JSON answer; None when it is anything else."""
    try:
        data = json.loads((raw or "").strip())
    except ValueError:
        return None
    values = data.get("alignment") if isinstance(data, dict) else None
    if not isinstance(values, list) or len(values) != count:
        return None
    out: list[float] = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if not math.isfinite(value) or not 0 <= value <= 1:
            return None
        out.append(float(value))
    return tuple(out)


def weighted(telos: Telos, per_aim: tuple[float, ...]) -> float:
    return round(sum(a.weight * s for a, s in zip(telos.aims, per_aim, strict=True)), 4)


def prompt(telos: Telos, text: str, kind: str, origin: str, lang: str) -> str:
    aims = [{"n": a.n, "text": a.text, "weight": a.weight} for a in telos.aims]
    return prompts.get(ROLE, lang, aims=aims, proposal=wrap_untrusted(text, source="proposal"),
                       kind=kind, origin=origin, count=len(aims))


async def by_model(port: LLMPort, settings: Settings, engine: Engine, telos: Telos, *,
                   text: str, kind: str, origin: str, lang: str,
                   user_id: str) -> Judgement | None:
    """The model's judgement in a context of its own; None when it cannot be had (no budget,
    a failed call, a malformed answer)."""
    tier = settings.evolution.judge_tier
    try:
        model = port.resolve(tier)
    except LLMError:
        return None
    if model is None:
        return None
    slot = await asyncio.to_thread(in_session, engine, _reserve, settings)
    if isinstance(slot, Decision):
        log.info("vaglio.judge_no_budget key=%s", slot.key)
        return None
    reply: LLMReply | None = None
    try:
        reply = await port.complete(
            [{"role": "user", "content": prompt(telos, text, kind, origin, lang)}], tier=tier)
    except LLMError as exc:
        log.warning("vaglio.judge_failed key=%s", exc.key)
        return None
    finally:
        await asyncio.to_thread(in_session, engine, _settle, slot, user_id, model, reply)
    per_aim = parse_answer(reply.text, len(telos.aims))
    if per_aim is None:
        log.warning("vaglio.judge_malformed answer=%r", (reply.text or "")[:200])
        return None
    return Judgement(weighted(telos, per_aim), per_aim, "model", reply.cost_usd)


def _reserve(db: Session, settings: Settings) -> limits.Reservation | Decision:
    policy = settings.policy
    return limits.reserve_llm(db, cap_usd_per_day=policy.max_llm_cost_per_day_usd,
                              estimate_usd=policy.llm_call_reserve_usd)


def _settle(db: Session, slot: limits.Reservation, user_id: str, model: str,
            reply: LLMReply | None) -> None:
    if reply is None:
        limits.release(db, slot)
    else:
        limits.settle_llm(db, slot, turn_id=None, user_id=user_id,
                          model=reply.model or model, cost_usd=reply.cost_usd)


def as_json(judgement: Judgement) -> dict[str, Any]:
    return {"alignment": judgement.alignment, "per_aim": list(judgement.per_aim),
            "judge": judgement.judge}
