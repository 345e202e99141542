"""The model's stages of a generation: each one prompt (`prompts/<lang>/synt_<stage>.j2`),
each answered in strict JSON and checked in code; a stage whose answer fails its check is
asked once more with the error fed back, then the generation stops (`StageFailed`).

What each stage returns (the checks are in `metnos.features.synt.checks`):
spec `{"name", "description": {"it", "en"}, "network": bool}`; manifest
`{"manifest_toml"}` (without `[sandbox]`); profile `{"read", "write", "network", "timeout_s",
"memory_mb"}`; code `{"main_py"}`; tests `{"cases": [{"args", "expect", "files"}]}`;
review `{"approve": bool, "notes"}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from metnos.features.synt.compose import Need
from metnos.ground.errors import LLMError
from metnos.mechanisms import prompts
from metnos.mechanisms.llm.port import LLMPort

STAGES = ("spec", "manifest", "profile", "code", "tests", "review")
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)


class StageFailed(Exception):
    """A stage gave no usable answer in two attempts (or the model could not be reached)."""

    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(f"{stage}: {detail}")
        self.stage = stage
        self.detail = detail


class Invalid(ValueError):
    """An answer that fails its check: the message is fed back to the model once."""


Check = Callable[[dict[str, Any]], Any]


@dataclass
class Stager:
    """Runs the model's stages of one generation and keeps what each returned and cost."""

    port: LLMPort
    tier: str
    lang: str
    need: Need
    why: str = ""
    max_cost_usd: float | None = None
    spent_usd: float = 0.0
    calls: int = 0
    results: dict[str, Any] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)

    async def ask(self, stage: str, check: Check, **context: Any) -> Any:
        """The checked answer of `stage` (its prompt sees the need, earlier results and
        `context`); one retry with the error; StageFailed after that."""
        error = ""
        for attempt in (1, 2):
            prompt = prompts.get(f"synt_{stage}", self.lang, need=self._need(), error=error,
                                 earlier=json.dumps(self.results, ensure_ascii=False,
                                                    indent=1)[:12000], **context)
            text = await self._call(stage, prompt)
            try:
                value = check(_parse_json(text))
            except Invalid as exc:
                error = str(exc)[:600]
                self.log.append({"stage": stage, "attempt": attempt, "ok": False,
                                 "error": error})
                continue
            self.log.append({"stage": stage, "attempt": attempt, "ok": True})
            self.results[stage] = _jsonable(value)
            return value
        raise StageFailed(stage, error)

    async def _call(self, stage: str, prompt: str) -> str:
        if self.max_cost_usd is not None and self.spent_usd > self.max_cost_usd:
            raise StageFailed(stage, f"spent {self.spent_usd:.4f} USD, over the cap")
        try:
            reply = await self.port.complete([{"role": "user", "content": prompt}],
                                             tier=self.tier)
        except LLMError as exc:
            raise StageFailed(stage, exc.key) from exc
        self.calls += 1
        self.spent_usd += reply.cost_usd
        return reply.text or ""

    def _need(self) -> dict[str, str]:
        return {"capability": self.need.capability, "have_kind": self.need.have_kind,
                "want_kind": self.need.want_kind, "src": self.need.src or "-",
                "why": self.why or "-"}


def _parse_json(text: str) -> dict[str, Any]:
    body = _FENCE.sub("", text.strip())
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise Invalid(f"the answer is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise Invalid("the answer must be one JSON object")
    return value


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
