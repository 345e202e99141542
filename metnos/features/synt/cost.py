"""The expected cost of one generation, shown to the owner before anything is spent.

Tokens per stage are estimates (the prompt with the need and what earlier stages wrote, and
the answer asked for), doubled for the one retry each stage may take: the worst case, so the
owner is never asked to accept less than it may cost. The price per token is `[llm]
input/output_cost_per_token` when set, else litellm's local cost map for the `synt_tier`
model; a model nobody prices gives `None` ("unknown"), said so in the proposal.
"""

from __future__ import annotations

from dataclasses import dataclass

from metnos.ground.settings import Settings
from metnos.mechanisms.llm.port import LLMPort

# stage → (prompt tokens, completion tokens) of one attempt
STAGE_TOKENS: dict[str, tuple[int, int]] = {
    "spec": (900, 400),
    "manifest": (1800, 1200),
    "profile": (1400, 200),
    "code": (2600, 2500),
    "tests": (3200, 1500),
    "review": (4500, 400),
}
ATTEMPTS = 2  # each stage may retry once with its error fed back


@dataclass(frozen=True)
class Estimate:
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: the model's price is unknown

    def shown(self) -> str:
        return "?" if self.cost_usd is None else f"{self.cost_usd:.2f}"


def estimate(settings: Settings) -> Estimate:
    """The worst-case cost of the seven stages on the `synt_tier` model."""
    prompt = ATTEMPTS * sum(p for p, _ in STAGE_TOKENS.values())
    completion = ATTEMPTS * sum(c for _, c in STAGE_TOKENS.values())
    model = LLMPort(settings.llm).resolve(settings.evolution.synt_tier)
    prices = _prices(settings, model)
    cost = None if prices is None else prompt * prices[0] + completion * prices[1]
    return Estimate(model, prompt, completion, cost)


def _prices(settings: Settings, model: str | None) -> tuple[float, float] | None:
    llm = settings.llm
    if llm.input_cost_per_token is not None or llm.output_cost_per_token is not None:
        return llm.input_cost_per_token or 0.0, llm.output_cost_per_token or 0.0
    if model is None:
        return None
    from metnos.mechanisms.llm.port import _litellm

    cost_map = _litellm().model_cost
    for name in (model, model.split("/", 1)[-1]):
        entry = cost_map.get(name)
        if isinstance(entry, dict) and "input_cost_per_token" in entry:
            return (float(entry.get("input_cost_per_token") or 0.0),
                    float(entry.get("output_cost_per_token") or 0.0))
    return None
