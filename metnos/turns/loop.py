"""The agent loop (SPEC §2 step 3): think → for each tool call: policy → (approval) →
sandbox → the result back to the model → think again, until the model answers in text or a
budget ends.

- Every call passes the step checker (its own policy decision and audit line); several calls
  of one model message run concurrently when all are read-only (at most `parallel_tools`),
  otherwise one after the other, each checked right before it runs.
- A refusal, a denial ("denied by the owner: <reason>"), an expiry or a failing executor goes
  back to the model as a tool result, so it may answer or try something the policy allows.
- Budgets (`metnos.turns.budget`) and the loop detector end a turn loudly: one last call
  without tools asks the model to say what was done and what remains; the reply always ends
  with the reason, from the i18n layer.
- The step trace (each step's model call, the earlier steps whose results the model had
  seen, outcome, timestamps, whole result) is persisted as each step ends.

`think` and `execute` are passed in: plain calls here and in the bench, Prefect tasks in
`flows/turn.py`, so the Prefect UI shows the loop as it happened.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from metnos.ground import i18n
from metnos.ground.db.models import TurnStep
from metnos.ground.errors import LLMError, MetnosError
from metnos.mechanisms.audit import digest_args
from metnos.mechanisms.llm.planner import scrub, to_step
from metnos.mechanisms.llm.port import LLMReply, RawToolCall
from metnos.mechanisms.llm.tools import PlanStep
from metnos.turns import budget as budgets
from metnos.turns import degraded, steps
from metnos.turns.budget import Budget, LoopDetector
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.conversation import Conversation
from metnos.turns.steps import Steps, Timed

if TYPE_CHECKING:
    from metnos.turns.service import TurnService

ThinkFn = Callable[["TurnService", TurnContext, Conversation, bool, int], Awaitable[LLMReply]]


class ModelBudgetSpent(MetnosError):
    """The day's LLM budget is spent: no model call may be made (the policy's message)."""


@dataclass
class AgentLoop:
    service: TurnService
    ctx: TurnContext
    convo: Conversation
    think_fn: ThinkFn
    how: Steps
    budget: Budget
    detector: LoopDetector = field(default_factory=LoopDetector)
    trace: list[TurnStep] = field(default_factory=list)
    thinks: int = 0
    checked: int = 0
    stop_message: str = ""

    async def run(self) -> str:
        while True:
            reason = self.budget.spent()
            if reason is not None:
                return await self.stop(reason, self.budget.vars(reason))
            try:
                reply = await self.think(tools=True)
            except (LLMError, ModelBudgetSpent) as exc:
                if self.thinks <= 1:
                    raise  # nothing happened yet: the planner serves (turns/pipeline.py)
                key, vars = (degraded.midturn(self.ctx, exc) if isinstance(exc, LLMError)
                             else (exc.key, exc.vars))
                return await self.stop(key, vars, ask_model=False)
            if not reply.tool_calls:
                return self.finish(reply.text)
            stop = await self.run_calls(reply.tool_calls)
            if stop is not None:
                return await self.stop(*stop)

    async def think(self, *, tools: bool) -> LLMReply:
        self.thinks += 1
        reply = await self.think_fn(self.service, self.ctx, self.convo, tools, self.thinks)
        if not tools and reply.tool_calls:  # none were offered: answer in words only
            reply = replace(reply, tool_calls=[])
        self.budget.model_calls += 1
        self.budget.cost_usd += reply.cost_usd
        self.convo.assistant(reply)
        self.service.events.publish(self.ctx.turn_id, "status", status="running")
        return reply

    # -- one model message's tool calls -------------------------------------------------------
    async def run_calls(self, calls: list[RawToolCall]) -> tuple[str, dict[str, Any]] | None:
        """Run (or refuse) every call of one model message; a reason when the turn must stop."""
        stop: tuple[str, dict[str, Any]] | None = None
        allowed = self.budget.tools_left()
        admitted: list[tuple[PlanStep, str | None]] = []
        for index, call in enumerate(calls):
            step = to_step(call)
            if stop is None and index >= allowed:
                stop = (budgets.STOP_TOOL_CALLS, self.budget.vars(budgets.STOP_TOOL_CALLS))
            if stop is not None:
                self._not_run(step, *stop)
                continue
            verdict, times = self.detector.observe(step.executor, digest_args(step.args))
            if verdict in (budgets.STOP_REPEAT, budgets.STOP_ALTERNATING):
                stop = (verdict, {"executor": step.executor, "count": times})
                self._not_run(step, *stop)
                continue
            warning = (i18n.get("MSG_AGENT_REPEAT_WARNING", self.ctx.lang, count=times)
                       if verdict == "warn" else None)
            admitted.append((step, warning))
        self.budget.tool_calls += len(admitted)
        if self._read_only(admitted):
            malformed = await self._run_together(admitted)
        else:
            malformed = await self._run_in_order(admitted)
        return stop or malformed

    def _read_only(self, calls: list[tuple[PlanStep, str | None]]) -> bool:
        return len(calls) >= 2 and all(self._reads(step.executor) for step, _ in calls)

    def _reads(self, name: str) -> bool:
        tool = self.service.hooks.host_tools.get(name)
        if tool is not None:
            return tool.read_only
        spec = self.service.registry.find(name)
        return spec is not None and spec.manifest.read_only

    async def _run_in_order(self, calls: list[tuple[PlanStep, str | None]]
                            ) -> tuple[str, dict[str, Any]] | None:
        stop = None
        for step, warning in calls:
            checked = await self._check(step)
            stop = stop or self._malformed(checked)
            await self._finish_step(checked, await self._timed(checked), warning)
        return stop

    async def _run_together(self, calls: list[tuple[PlanStep, str | None]]
                            ) -> tuple[str, dict[str, Any]] | None:
        """Read-only calls: all checked first, then run at most `parallel_tools` at once; one
        that waits for the owner runs after them, alone (a turn waits for one approval)."""
        checked = [await self._check(step) for step, _ in calls]
        stop = None
        for one in checked:
            stop = stop or self._malformed(one)
        slots = asyncio.Semaphore(self.service.settings.agent.parallel_tools)

        async def bounded(one: CheckedStep) -> Timed:
            async with slots:
                return await self._timed(one)

        together = [one for one in checked if one.approval is None]
        results = dict(zip((one.seq for one in together),
                           await asyncio.gather(*(bounded(one) for one in together)),
                           strict=True))
        for one in checked:
            if one.seq not in results:
                results[one.seq] = await self._timed(one)
        for one, (_, warning) in zip(checked, calls, strict=True):
            await self._finish_step(one, results[one.seq], warning)
        return stop

    async def _check(self, step: PlanStep) -> CheckedStep:
        self.checked += 1
        return await asyncio.to_thread(steps.check, self.service, self.ctx, step,
                                       seq=self.checked, think=self.thinks,
                                       trace=list(self.trace))

    def _malformed(self, checked: CheckedStep) -> tuple[str, dict[str, Any]] | None:
        key = self.detector.malformed(checked.malformed)
        return (key, {"count": budgets.MALFORMED_IN_A_ROW}) if key else None

    async def _timed(self, checked: CheckedStep) -> Timed:
        done = "\n".join(item["text"] for item in self.ctx.activity)
        return await steps.run(self.service, self.ctx, checked, self.how, done)

    async def _finish_step(self, checked: CheckedStep, result: Timed,
                           warning: str | None) -> None:
        seen = [s.seq for s in self.trace if s.think < checked.think]
        done = await asyncio.to_thread(steps.finish, self.service, self.ctx, checked, result,
                                       seen, warning)
        if done.row is not None:
            self.trace.append(done.row)
        if done.item is not None:
            self.ctx.activity.append(done.item)
        self.convo.tool_result(checked.step.call_id, checked.step.executor, done.content)

    def _not_run(self, step: PlanStep, key: str, vars: dict[str, Any]) -> None:
        """A call the loop will not run still gets its tool message (the chat stays whole)."""
        reason = i18n.get(key, self.ctx.lang, **vars)
        self.convo.tool_result(step.call_id, step.executor, {
            "status": "not_run", "error": i18n.get("MSG_AGENT_NOT_RUN", self.ctx.lang,
                                                   reason=reason)})

    # -- the end -------------------------------------------------------------------------------
    def finish(self, text: str | None) -> str:
        said = scrub(text).strip() if text else ""
        parts = [said] if said else []
        if self.ctx.stop_reason is not None:
            parts.append(self.stop_message)
        if not parts:
            parts.append(i18n.get("MSG_TURN_NOTHING_TO_DO", self.ctx.lang))
        started = time.perf_counter()
        reply = "\n\n".join(parts)
        self.ctx.mark("compose", started)
        return reply

    async def stop(self, key: str, vars: dict[str, Any], *, ask_model: bool = True) -> str:
        """A budget ended: the user is told why; with a model (when the budget that ended
        allows one more call), one last call without tools says what was done and what
        remains."""
        self.ctx.stop_reason = key
        self.stop_message = i18n.get(key, self.ctx.lang, **vars)
        summary: str | None = None
        if ask_model and key != budgets.STOP_COST:
            self.convo.instruct(i18n.get("MSG_AGENT_FINAL_REQUEST", self.ctx.lang,
                                         reason=self.stop_message))
            try:
                summary = (await self.think(tools=False)).text
            except (LLMError, ModelBudgetSpent):
                summary = None
        return self.finish(summary)
