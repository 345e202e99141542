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
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from metnos import i18n, undo_tool
from metnos.audit import digest_args
from metnos.db.models import TurnStep, utcnow
from metnos.errors import LLMError, MetnosError
from metnos.llm.planner import scrub, to_step
from metnos.llm.port import LLMReply, RawToolCall
from metnos.llm.tools import PlanStep
from metnos.mnestoma import wish
from metnos.turns import budget as budgets
from metnos.turns import degraded, gate
from metnos.turns.budget import Budget, LoopDetector
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.conversation import Conversation, tool_content
from metnos.turns.reply import StepOutcome, render_outcome, value_words
from metnos.turns.runner import read_target

if TYPE_CHECKING:
    from metnos.turns.service import TurnService

ThinkFn = Callable[["TurnService", TurnContext, Conversation, bool, int], Awaitable[LLMReply]]
ExecuteFn = Callable[["TurnService", TurnContext, CheckedStep], Awaitable[StepOutcome]]
# waits for the owner's decision on `checked.approval`: the resume input, or None on timeout
AwaitFn = Callable[["TurnService", TurnContext, CheckedStep], Awaitable[dict[str, Any] | None]]


Timed = tuple[StepOutcome, datetime, datetime]  # an outcome, when it started and ended


class ModelBudgetSpent(MetnosError):
    """The day's LLM budget is spent: no model call may be made (the policy's message)."""


@dataclass
class Steps:
    """How a turn runs its checked steps: the tasks to use and where the owner answers."""

    execute: ExecuteFn
    wait: AwaitFn
    via: str
    budget: Budget | None = None


async def run_checked(service: TurnService, ctx: TurnContext, checked: CheckedStep,
                      how: Steps, done_so_far: str = "") -> StepOutcome:
    """One checked step: the owner's decision when it asks, then the run (or its refusal).
    An executor that cannot be run (a sandbox error) fails the step, never the turn."""
    record = service.record
    try:
        if checked.outcome is None and checked.approval is not None:
            await record.await_owner(ctx, checked, done_so_far)
            with how.budget.paused() if how.budget is not None else nullcontext():
                answer = await how.wait(service, ctx, checked)
            checked.outcome = await asyncio.to_thread(gate.resolve, service, ctx, checked,
                                                      answer, how.via)
            await record.resume_after_owner(ctx)
        if checked.outcome is not None:  # refused by the policy, denied or expired
            record.step_event(ctx, checked, "refused", checked.outcome)
            return checked.outcome
        record.step_event(ctx, checked, "started")
        try:
            outcome = await how.execute(service, ctx, checked)
        except MetnosError as exc:
            name = checked.step.executor
            outcome = StepOutcome(name, "failed", key=exc.key, vars={**exc.vars,
                                  "executor": name}, action_id=checked.action_id)
        record.step_event(ctx, checked, outcome.status, outcome)
        return outcome
    finally:
        if checked.run_slot is not None:  # it never started: its reserved run goes back
            await asyncio.to_thread(service.guard.release_run, checked)


def activity_item(checked: CheckedStep, outcome: StepOutcome, lang: str) -> dict[str, Any]:
    """What ran, as the channels show it beside the model's prose."""
    status = {"MSG_APPROVAL_DENIED": "denied", "ERR_APPROVAL_EXPIRED": "expired"}.get(
        outcome.key or "", outcome.status)
    manifest = checked.spec.manifest if checked.spec is not None else None
    args = checked.request.args if checked.request is not None else checked.step.args
    acted = manifest is not None and manifest.changes(args)  # a list's "show" only reads
    if outcome.status == "done" and not acted:  # a read: one line, never the content
        text = _read_line(checked, lang)
    else:
        text = render_outcome(outcome, lang)
    return {"executor": checked.step.executor, "status": status, "text": text,
            "action_id": outcome.action_id if outcome.status == "done" else None,
            "undo": bool(outcome.status == "done" and acted),
            "approval_id": checked.approval.id if checked.approval is not None else None}


def _read_line(checked: CheckedStep, lang: str) -> str:
    """A read, for a person: the executor's own line (`EX_READ_<name>`, its arguments as
    placeholders: "Looked at the shopping list.") or what it read: the file or page, "the
    workspace" for its root; never the executor's name with a path."""
    name = checked.step.executor
    key = f"EX_READ_{name}"
    args = checked.request.args if checked.request is not None else checked.step.args
    if key in i18n.catalog(i18n.normalise_lang(lang)) or key in i18n.catalog("en"):
        return i18n.get(key, lang, **value_words(name, {k: str(v) for k, v in args.items()},
                                                 lang))
    what = read_target(checked)
    if what.strip() in ("", ".", "./"):
        what = i18n.get("MSG_AGENT_ACTIVITY_WORKSPACE", lang)
    return i18n.get("MSG_AGENT_ACTIVITY_READ", lang, executor=name, source=what)


def step_row(ctx: TurnContext, checked: CheckedStep, outcome: StepOutcome, started: datetime,
             finished: datetime, seen: list[int]) -> TurnStep:
    """One step of the trace: what was asked, what the policy said, how it ended, and which
    earlier steps' results the model had seen when it asked (the hand-offs, SPEC §2 step 4)."""
    decision = ("allow" if wish.noted(checked) else "deny" if checked.request is None else
                "ask" if checked.approval is not None else "allow")
    return TurnStep(turn_id=ctx.turn_id, seq=checked.seq, executor=checked.step.executor,
                    args_digest=checked.args_digest, decision=decision,
                    outcome=outcome.status, error_key=outcome.key, audit_seq=outcome.audit_seq,
                    think=checked.think, seen=seen, call_id=checked.step.call_id,
                    action_id=checked.action_id if checked.request is not None else None,
                    started_at=started, finished_at=finished,
                    result=outcome.result if outcome.status == "done" else None)


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

    def _read_only(self, steps: list[tuple[PlanStep, str | None]]) -> bool:
        if len(steps) < 2:
            return False
        specs = [self.service.registry.find(step.executor) for step, _ in steps
                 if step.executor != wish.TOOL]  # a wish changes nothing
        return all(spec is not None and spec.manifest.read_only for spec in specs)

    async def _run_in_order(self, steps: list[tuple[PlanStep, str | None]]
                            ) -> tuple[str, dict[str, Any]] | None:
        stop = None
        for step, warning in steps:
            checked = await self._check(step)
            stop = stop or self._malformed(checked)
            await self._finish_step(checked, await self._timed(checked), warning)
        return stop

    async def _run_together(self, steps: list[tuple[PlanStep, str | None]]
                            ) -> tuple[str, dict[str, Any]] | None:
        """Read-only calls: all checked first, then run at most `parallel_tools` at once; one
        that waits for the owner runs after them, alone (a turn waits for one approval)."""
        checked = [await self._check(step) for step, _ in steps]
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
        for one, (_, warning) in zip(checked, steps, strict=True):
            await self._finish_step(one, results[one.seq], warning)
        return stop

    async def _check(self, step: PlanStep) -> CheckedStep:
        self.checked += 1
        if step.executor == wish.TOOL:  # never the step checker, never the sandbox
            return await asyncio.to_thread(wish.check, self.service, self.ctx, step,
                                           seq=self.checked, think=self.thinks,
                                           trace=list(self.trace))
        if step.executor == undo_tool.TOOL:  # "undo that": the Undo button's path, no sandbox
            return await asyncio.to_thread(undo_tool.check, self.service, self.ctx, step,
                                           seq=self.checked, think=self.thinks)
        return await asyncio.to_thread(self.service.checker.check, self.ctx, step,
                                       seq=self.checked, think=self.thinks)

    def _malformed(self, checked: CheckedStep) -> tuple[str, dict[str, Any]] | None:
        key = self.detector.malformed(checked.malformed)
        return (key, {"count": budgets.MALFORMED_IN_A_ROW}) if key else None

    async def _timed(self, checked: CheckedStep) -> Timed:
        started = utcnow()
        if wish.noted(checked) or undo_tool.ran(checked):
            assert checked.outcome is not None
            return checked.outcome, started, started
        done = "\n".join(item["text"] for item in self.ctx.activity)
        outcome = await run_checked(self.service, self.ctx, checked, self.how, done)
        return outcome, started, utcnow()

    async def _finish_step(self, checked: CheckedStep, result: Timed,
                           warning: str | None) -> None:
        outcome, started, finished = result
        if undo_tool.ran(checked):  # its own step, activity item and words for the model
            content = await asyncio.to_thread(undo_tool.finish, self.service, self.ctx, checked)
            self.convo.tool_result(checked.step.call_id, undo_tool.TOOL, content)
            return
        seen = [s.seq for s in self.trace if s.think < checked.think]
        row = step_row(self.ctx, checked, outcome, started, finished, seen)
        self.trace.append(row)
        await asyncio.to_thread(self.service.record.record_step, self.ctx, row)
        if checked.step.executor == wish.TOOL:  # bookkeeping for the mnestoma, never shown
            self.convo.tool_result(checked.step.call_id, wish.TOOL, wish.tool_content(
                outcome, self.ctx.lang) if wish.noted(checked) else tool_content(
                outcome, self.ctx.lang, warning))
            return
        self.ctx.activity.append(activity_item(checked, outcome, self.ctx.lang))
        self.convo.tool_result(checked.step.call_id, checked.step.executor,
                               tool_content(outcome, self.ctx.lang, warning))

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
