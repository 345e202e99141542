"""What the planners see of an executor: a tool, described in one language."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """One admitted executor offered to a planner, in the session language.

    `parameters` is a JSON Schema object (OpenAI tool-calling `function.parameters`).
    `utterances` are hassil sentence templates for the embedded planner, and `slot_values`
    maps a slot name to {spoken phrase: argument value} (e.g. "markdown" → "*.md").
    `risk` and `side_effects` come from the manifest: the embedded planner's hints never rank
    a riskier tool above a safer one. `paths` names the inputs that are workspace paths.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    utterances: tuple[str, ...] = ()
    affinity: tuple[str, ...] = ()
    slot_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    risk: str = "low"
    side_effects: bool = False
    paths: tuple[str, ...] = ()

    def openai_tool(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class PlanStep:
    """One step of a plan: run `executor` with `args` (as the model or the matcher gave them).

    `error` is an i18n key when the call itself was unusable (e.g. `ERR_PLAN_ARGS_NOT_JSON`
    for arguments that are not a JSON object); the turn refuses such a step with an audit line.
    """

    executor: str
    args: dict[str, Any]
    call_id: str = ""
    error: str | None = None


@dataclass(frozen=True)
class Plan:
    """A planner's answer: steps to run, and/or text to say (a direct answer or a question).

    `source` is "llm" or "embedded". `understood` is False when the embedded planner matched
    nothing (the reply then says so in two lines). `cost_usd` is litellm's estimate.
    `lang` is the language the request was understood in when that is not necessarily the
    session's (the embedded planner matches every active language); None: the session's.
    """

    steps: tuple[PlanStep, ...]
    text: str | None
    source: str
    understood: bool = True
    cost_usd: float = 0.0
    lang: str | None = None
