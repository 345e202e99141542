"""The budgets of a turn and the loop detector (notes/agent_loop.md: figures of the peers).

`Budget` counts model calls, tool calls, spend and wall-clock time (approval waits excluded:
the owner's thinking time is not the agent's); `spent()` names the first budget that ended as
an i18n key, so the user is always told why the turn stopped.

`LoopDetector` follows the tool calls of one turn (executor + the digest of the canonical
arguments), with the numbers ZeroClaw ships: the same call a 3rd time gets a warning to the
model, a 5th time stops the turn; two calls alternating for 4 cycles stop it; 3 malformed
calls in a row (arguments that are not JSON, unknown tools, arguments that do not fit the
schema) stop it. Plain code, no I/O.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from metnos.ground.settings.agent import AgentSettings

STOP_MODEL_CALLS = "MSG_AGENT_STOP_MODEL_CALLS"
STOP_TOOL_CALLS = "MSG_AGENT_STOP_TOOL_CALLS"
STOP_DEADLINE = "MSG_AGENT_STOP_DEADLINE"
STOP_COST = "MSG_AGENT_STOP_COST"
STOP_REPEAT = "MSG_AGENT_STOP_REPEAT"
STOP_ALTERNATING = "MSG_AGENT_STOP_ALTERNATING"
STOP_MALFORMED = "MSG_AGENT_STOP_MALFORMED"

WARN_AT = 3  # the same call this many times: the model is warned
STOP_AT = 5  # ... and this many times: the turn stops (the call does not run)
ALTERNATING_CYCLES = 4  # A B A B A B A B: stop
MALFORMED_IN_A_ROW = 3


@dataclass
class Budget:
    settings: AgentSettings
    started: float = field(default_factory=time.monotonic)
    waited_s: float = 0.0
    model_calls: int = 0
    tool_calls: int = 0
    cost_usd: float = 0.0

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started - self.waited_s

    def spent(self) -> str | None:
        """The i18n key of the first budget that ended before another model call, or None."""
        s = self.settings
        if self.model_calls >= s.max_model_calls:
            return STOP_MODEL_CALLS
        if self.tool_calls >= s.max_tool_calls:
            return STOP_TOOL_CALLS
        if self.elapsed_s() >= s.deadline_s:
            return STOP_DEADLINE
        if s.max_cost_per_turn_usd > 0 and self.cost_usd >= s.max_cost_per_turn_usd:
            return STOP_COST
        return None

    def tools_left(self) -> int:
        return max(0, self.settings.max_tool_calls - self.tool_calls)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Time spent inside (waiting for the owner) does not count against the deadline."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.waited_s += time.monotonic() - began

    def vars(self, key: str) -> dict[str, Any]:
        """The placeholders of a stop message."""
        s = self.settings
        table: dict[str, dict[str, Any]] = {
            STOP_MODEL_CALLS: {"count": s.max_model_calls},
            STOP_TOOL_CALLS: {"count": s.max_tool_calls},
            STOP_DEADLINE: {"seconds": int(s.deadline_s)},
            STOP_COST: {"usd": f"{s.max_cost_per_turn_usd:.2f}"}}
        return table.get(key, {})


@dataclass
class LoopDetector:
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    order: list[tuple[str, str]] = field(default_factory=list)
    malformed_run: int = 0

    def observe(self, executor: str, args_digest: str) -> tuple[str, int]:
        """Record one call: ("ok" | "warn" | STOP_REPEAT | STOP_ALTERNATING, times seen)."""
        key = (executor, args_digest)
        self.calls[key] += 1
        self.order.append(key)
        times = self.calls[key]
        if times >= STOP_AT:
            return STOP_REPEAT, times
        if self._alternating():
            return STOP_ALTERNATING, times
        if times >= WARN_AT:
            return "warn", times
        return "ok", times

    def _alternating(self) -> bool:
        tail = self.order[-2 * ALTERNATING_CYCLES:]
        if len(tail) < 2 * ALTERNATING_CYCLES:
            return False
        first, second = tail[0], tail[1]
        return first != second and all(
            call == (first if i % 2 == 0 else second) for i, call in enumerate(tail))

    def malformed(self, bad: bool) -> str | None:
        """Record whether a call was malformed; STOP_MALFORMED after 3 in a row."""
        self.malformed_run = self.malformed_run + 1 if bad else 0
        return STOP_MALFORMED if self.malformed_run >= MALFORMED_IN_A_ROW else None
