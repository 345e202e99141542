"""The built-in `undo_last` tool (SPEC §5): with a model, "undo that" is the model calling it.

A host tool (`UndoTool`, as `wish`): a call named `undo_last` never reaches the step checker
or the sandbox: it runs `metnos.turns.undo_said.undo_last` (this session's newest undoable change
by this sender, through `run_undo`, the Undo button's own checks and audit line) and returns
a done outcome whose result is the undo in plain words, with no ids. Its step and activity
item are the same as when the embedded planner's path undoes ("annulla"): the undo's own Undo
button, when it has a before-record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from metnos.ground import i18n
from metnos.ground.db.models import TurnStep
from metnos.mechanisms.audit import digest_args
from metnos.mechanisms.llm.tools import PlanStep, ToolSpec
from metnos.turns import undo_said
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome
from metnos.turns.steps import Finished, Timed, recorded

if TYPE_CHECKING:
    from metnos.mechanisms.executors.registry import Registry
    from metnos.turns.service import TurnService

TOOL = "undo_last"


class UndoTool:
    """`undo_last` as a host tool (`metnos.turns.steps.HostTool`)."""

    name = TOOL
    read_only = False  # it changes what it undoes
    outside_text = True  # it names the person's files

    def spec(self, registry: Registry, lang: str) -> ToolSpec:
        """The tool as the model sees it, described in `lang`."""
        return ToolSpec(name=TOOL, description=i18n.get("TOOL_UNDO_LAST_DESCRIPTION", lang),
                        parameters={"type": "object", "properties": {},
                                    "additionalProperties": False})

    def check(self, service: TurnService, ctx: TurnContext, step: PlanStep, *, seq: int,
              think: int, trace: Sequence[TurnStep]) -> CheckedStep:
        """The undo, done (blocking)."""
        checked = CheckedStep(step, None, args_digest=digest_args(step.args), seq=seq,
                              think=think)
        if step.error:  # unreadable arguments (any readable ones are ignored: it takes none)
            checked.malformed = True
            return service.checker.refuse(ctx, checked, step.error, {"executor": TOOL})
        result = undo_said.undo_last(service, ctx)
        status = "failed" if result.status == "failed" else "done"
        checked.outcome = StepOutcome(
            undo_said.EXECUTOR, status,
            result={"said": result.reply, "undone": result.status == "done"},
            key=None if status == "done" else "MSG_UNDO_SAID_REFUSED",
            vars={"reason": result.reply}, action_id=result.undo_id)
        checked.action_id = result.undo_id or checked.action_id
        checked.carried_out = True
        return checked

    def finish(self, service: TurnService, ctx: TurnContext, checked: CheckedStep,
               timed: Timed, seen: list[int], warning: str | None) -> Finished:
        """Its step in the trace and its activity item, as when the embedded planner's path
        undoes (blocking); what the model reads back."""
        if not checked.carried_out:  # a refused malformed call: a step like any other
            return recorded(service, ctx, checked, timed, seen, warning)
        outcome = timed[0]
        said = str((outcome.result or {}).get("said", ""))
        done = bool((outcome.result or {}).get("undone"))
        result = undo_said.Said(said, "done" if done else outcome.status, outcome.action_id)
        undo_said.record(service, ctx, result, seq=checked.seq, call_id=checked.step.call_id,
                         think=checked.think)
        item = undo_said.activity(result) if done or outcome.status == "failed" else None
        return Finished(None, item, {"status": outcome.status, "result": said}
                        if outcome.status == "done" else {"status": outcome.status,
                                                          "error": said})
