"""One step, as every planner runs it (SPEC §2 step 3): check → (the owner) → run → record →
activity. The agent loop (`turns/loop.py`), the embedded planner (`turns/pipeline.py`) and
the mail digest (`metnos.features.mail.digest`) all go through here.

- `check`: the step checker, or the host tool named by the call (`HostTool`: Metnos's own
  tools, `wish` and `undo_last`, which never reach the checker or the sandbox: each is carried
  out when checked, or refused with one audit line).
- `run`: the owner's decision when the step asks (or, where nobody can answer, `Steps.
  unattended`'s outcome), then the run or its refusal.
- `finish`: the step in the trace, its activity item and what the model reads back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from metnos.ground import i18n
from metnos.ground.db.models import TurnStep, utcnow
from metnos.ground.errors import MetnosError
from metnos.mechanisms.llm.tools import PlanStep, ToolSpec
from metnos.turns import gate
from metnos.turns.budget import Budget
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.conversation import tool_content
from metnos.turns.reply import StepOutcome, render_outcome, value_words
from metnos.turns.runner import read_target

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from metnos.ground.settings import Settings
    from metnos.mechanisms.executors.registry import Registry
    from metnos.mechanisms.llm.port import LLMPort
    from metnos.turns.guard import Guard
    from metnos.turns.record import TurnRecord
    from metnos.turns.runtime import Runtime
    from metnos.turns.service import TurnService

ExecuteFn = Callable[["TurnService", TurnContext, CheckedStep], Awaitable[StepOutcome]]
# waits for the owner's decision on `checked.approval`: the resume input, or None on timeout
AwaitFn = Callable[["TurnService", TurnContext, CheckedStep], Awaitable[dict[str, Any] | None]]
Timed = tuple[StepOutcome, datetime, datetime]  # an outcome, when it started and ended


async def execute(service: TurnService, ctx: TurnContext, checked: CheckedStep) -> StepOutcome:
    """The plain run of an admitted step (the flow runs it as a Prefect task instead)."""
    return await service.runner.execute(ctx, checked)


@dataclass
class Steps:
    """How a turn runs its checked steps: the tasks to use and where the owner answers.
    `unattended`: nobody can answer here (the digest); a step that asks ends with its
    outcome, and no owner is asked."""

    execute: ExecuteFn
    wait: AwaitFn
    via: str
    budget: Budget | None = None
    unattended: ExecuteFn | None = None


@dataclass(frozen=True)
class Finished:
    """A step once over: its row in the trace (None: a host tool recorded its own), its
    activity item (None: nothing to show) and what the model reads back."""

    row: TurnStep | None
    item: dict[str, Any] | None
    content: dict[str, Any]


class HostTool(Protocol):
    """A tool of Metnos itself, offered to the model beside the executors (only when a model
    plans): checked and carried out on the host, never by the step checker or the sandbox."""

    @property
    def name(self) -> str: ...
    @property
    def read_only(self) -> bool: ...  # runs alongside read-only calls: it changes nothing
    @property
    def outside_text(self) -> bool: ...  # its results are outside data in a later history

    def spec(self, registry: Registry, lang: str) -> ToolSpec: ...

    def check(self, service: TurnService, ctx: TurnContext, step: PlanStep, *, seq: int,
              think: int, trace: Sequence[TurnStep]) -> CheckedStep:
        """Carried out (`checked.carried_out`) or refused, with its audit line. Blocking."""

    def finish(self, service: TurnService, ctx: TurnContext, checked: CheckedStep,
               timed: Timed, seen: list[int], warning: str | None) -> Finished:
        """Its step recorded (blocking)."""


def check(service: TurnService, ctx: TurnContext, step: PlanStep, *, seq: int, think: int = 0,
          trace: Sequence[TurnStep] = ()) -> CheckedStep:
    """The step after the policy (blocking): a host tool's own check, else the checker's."""
    tool = service.hooks.host_tools.get(step.executor)
    if tool is not None:
        return tool.check(service, ctx, step, seq=seq, think=think, trace=trace)
    return service.checker.check(ctx, step, seq=seq, think=think)


async def run(service: TurnService, ctx: TurnContext, checked: CheckedStep, how: Steps,
              done_so_far: str = "") -> Timed:
    """The checked step run (or refused), timed; a host tool's was carried out already."""
    started = utcnow()
    if checked.carried_out:
        assert checked.outcome is not None
        return checked.outcome, started, started
    outcome = await _run_checked(service, ctx, checked, how, done_so_far)
    return outcome, started, utcnow()


async def _run_checked(service: TurnService, ctx: TurnContext, checked: CheckedStep,
                      how: Steps, done_so_far: str = "") -> StepOutcome:
    """One checked step: the owner's decision when it asks, then the run (or its refusal).
    An executor that cannot be run (a sandbox error) fails the step, never the turn."""
    record = service.record
    try:
        if checked.outcome is None and checked.approval is not None:
            if how.unattended is not None:
                return await how.unattended(service, ctx, checked)
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


def finish(service: TurnService, ctx: TurnContext, checked: CheckedStep, timed: Timed,
           seen: list[int], warning: str | None = None) -> Finished:
    """The step in the trace, its activity item and what the model reads back (blocking)."""
    tool = service.hooks.host_tools.get(checked.step.executor)
    if tool is not None:
        return tool.finish(service, ctx, checked, timed, seen, warning)
    return recorded(service, ctx, checked, timed, seen, warning)


def recorded(service: Runtime, ctx: TurnContext, checked: CheckedStep, timed: Timed,
             seen: list[int], warning: str | None = None, *, shown: bool = True) -> Finished:
    """An executor's step recorded; `shown`: with its activity item."""
    outcome = timed[0]
    row = step_row(ctx, checked, *timed, seen)
    service.record.record_step(ctx, row)
    item = activity_item(checked, outcome, ctx.lang) if shown else None
    return Finished(row, item, tool_content(outcome, ctx.lang, warning))


class OwnTurn(Protocol):
    """What a feature that runs a turn of its own sees (the mail digest): the runtime's parts
    it reads and one whole step (`one`); the turn service is one."""

    @property
    def settings(self) -> Settings: ...
    @property
    def engine(self) -> Engine: ...
    @property
    def port(self) -> LLMPort | None: ...
    @property
    def guard(self) -> Guard: ...
    @property
    def record(self) -> TurnRecord: ...

    async def one(self, ctx: TurnContext, step: PlanStep, how: Steps, *, seq: int,
                  think: int = 0, seen: Sequence[int] = (),
                  recorded_in: TurnContext | None = None
                  ) -> tuple[CheckedStep, StepOutcome, Finished]: ...


async def one(service: TurnService, ctx: TurnContext, step: PlanStep, how: Steps, *, seq: int,
              think: int = 0, seen: Sequence[int] = (), done_so_far: str = "",
              recorded_in: TurnContext | None = None
              ) -> tuple[CheckedStep, StepOutcome, Finished]:
    """A whole step: checked and run in `ctx`, recorded in `recorded_in` (default `ctx`)."""
    checked = await asyncio.to_thread(check, service, ctx, step, seq=seq, think=think)
    timed = await run(service, ctx, checked, how, done_so_far)
    done = await asyncio.to_thread(finish, service, recorded_in or ctx, checked, timed,
                                   list(seen))
    return checked, timed[0], done


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
    decision = ("allow" if checked.carried_out else "deny" if checked.request is None else
                "ask" if checked.approval is not None else "allow")
    return TurnStep(turn_id=ctx.turn_id, seq=checked.seq, executor=checked.step.executor,
                    args_digest=checked.args_digest, decision=decision,
                    outcome=outcome.status, error_key=outcome.key, audit_seq=outcome.audit_seq,
                    think=checked.think, seen=seen, call_id=checked.step.call_id,
                    action_id=checked.action_id if checked.request is not None else None,
                    started_at=started, finished_at=finished,
                    result=outcome.result if outcome.status == "done" else None)
