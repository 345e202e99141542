"""The step runner: one admitted step in the sandbox, with its before-record and audit line.

Right before the run, on the host: the executor's code must still be what its signature
vouches for; a step that may change files gets its signed before-record (Law 1: no undo, no
action), tied to the turn so a restart after a crash can name it for an undo; the step's
reserved run is spent (a step admitted unasked because it can be undone runs only when its
record kept every byte). After it: the result passes Law 2's redaction, and one audit line
says how it went (for a step run unasked, that it ran because it can be undone). The turn is
tainted once an executor has run whose output may hold outside text: any executor, unless
its manifest proves its results text-free (`trusted_output`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metnos.ground import keys
from metnos.ground.errors import MetnosError
from metnos.mechanisms import identity
from metnos.mechanisms.executors.registry import ExecutorSpec
from metnos.mechanisms.executors.signing import code_hash
from metnos.mechanisms.policy.decide import ALLOWED_REVERSIBLE
from metnos.mechanisms.policy.laws import no_undo_record_decision
from metnos.mechanisms.sandbox import SandboxResult, run_sandboxed
from metnos.mechanisms.workspace import FILES
from metnos.turns import recovery
from metnos.turns.autonomy import record_whole
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome
from metnos.turns.runtime import RecordRefused

if TYPE_CHECKING:
    from metnos.turns.checker import StepChecker
    from metnos.turns.runtime import Hooks, Runtime

log = logging.getLogger(__name__)


class StepRunner:
    def __init__(self, runtime: Runtime, hooks: Hooks, checker: StepChecker) -> None:
        self.runtime, self.hooks, self.checker = runtime, hooks, checker
        self.settings = runtime.settings

    async def execute(self, ctx: TurnContext, checked: CheckedStep) -> StepOutcome:
        """Run one admitted step in the sandbox; record the before state of what it may change."""
        if checked.request is None or checked.spec is None:
            raise ValueError("execute() takes a step the policy admitted")
        # another machine's step (metnos.features.remote)
        if checked.spec.manifest.runs_on is not None:
            if self.hooks.remote is None:  # no feature registered a way to the work pools
                return await asyncio.to_thread(self._no_effect, ctx, checked, "remote")
            outcome = await self.hooks.remote(self.runtime, ctx, checked)
            taint(ctx, checked, outcome.result)  # its result is outside data as well
            return outcome
        refused = await asyncio.to_thread(self._prepare_run, ctx, checked)
        if refused is not None:
            return refused
        started = time.perf_counter()
        voice = OwnerVoice(ctx, checked, self.settings.workspace)  # before this step's taint
        result = await run_sandboxed(checked.request)
        ctx.mark("sandbox_total", started)
        reversal = self.hooks.reversals[checked.spec.manifest.reversal]
        await asyncio.to_thread(reversal.after, self.runtime, checked, result)
        ctx.timings["sandbox_spawn"] = ctx.timings.get("sandbox_spawn", 0.0) + result.spawn_s * 1000
        outcome = await asyncio.to_thread(self._record_result, ctx, checked, result)
        await asyncio.to_thread(voice.after, self.runtime)
        declared = checked.spec.manifest.effect
        if declared is not None and outcome.status == "done":  # the manifest's effect, carried
            effect = self.hooks.effects.get(declared)  # out from the checked result
            if effect is None:  # nobody here to carry it out: fail, never drop it silently
                outcome = await asyncio.to_thread(self._no_effect, ctx, checked, declared)
            else:  # (before this step's own taint: what it sets came from the turn so far)
                outcome = await effect(ctx, checked, outcome)
        taint(ctx, checked, result.result if result.ok else None)
        for watch in self.hooks.watchers:  # told after the fact (the owner, of a member's)
            try:
                await watch(ctx, checked, outcome)
            except Exception:  # a watcher's failure never fails the step that ran
                log.exception("turn.watcher_failed action_id=%s", checked.action_id)
        return outcome

    def _no_effect(self, ctx: TurnContext, checked: CheckedStep, effect: str) -> StepOutcome:
        name, key = checked.step.executor, "ERR_EXECUTOR_EFFECT_UNAVAILABLE"
        log.error("turn.effect_unavailable executor=%s effect=%s", name, effect)
        seq = self.runtime.record.audit_line(ctx, action=name, decision="allow", reason=key,
                                             outcome="failed", args_digest=checked.args_digest,
                                             action_id=checked.action_id)
        return StepOutcome(name, "failed", key=key, vars={"executor": name}, audit_seq=seq,
                           action_id=checked.action_id)

    def _prepare_run(self, ctx: TurnContext, checked: CheckedStep) -> StepOutcome | None:
        """Host-side work right before a run (blocking I/O: called in a worker thread)."""
        spec, request = checked.spec, checked.request
        assert spec is not None and request is not None  # checked by execute()
        checker = self.checker
        if not self._code_unchanged(spec):
            # admitted at start-up, changed since: its signature no longer vouches for it
            return checker.refuse(ctx, checked, "ERR_EXECUTOR_CODE_CHANGED",
                                  {"name": spec.name}).outcome
        if spec.manifest.changes(request.args):  # not a read-only call (lists' "show")
            reversal = self.hooks.reversals[spec.manifest.reversal]  # metnos.features.reversal
            try:  # kept even when the run then fails: a crash may have changed files already
                key = keys.load_private_key(self.settings.keys_dir, "audit")
                signed = reversal.before(self.runtime, checked, key)
            except RecordRefused as exc:  # nothing changed: its reason (a mail server's)
                return checker.refuse(ctx, checked, exc.key, exc.vars, decision="error").outcome
            except (OSError, ValueError, MetnosError) as exc:  # Law 1: no undo, no action
                log.error("turn.before_record_failed action_id=%s: %s", checked.action_id, exc)
                law = no_undo_record_decision(spec.name)
                return checker.refuse(ctx, checked, law.key, law.vars).outcome
            if checked.unasked and not record_whole(signed):  # grew since the check: it
                law = no_undo_record_decision(spec.name)  # ran unasked only for its undo
                return checker.refuse(ctx, checked, law.key, law.vars).outcome
            # tied to the turn, so that a restart after a crash can name it for an undo
            recovery.link_record(self.runtime.engine, action_id=checked.action_id,
                                 turn_id=ctx.turn_id, executor=spec.name, signed=signed)
        self.runtime.guard.record_action(ctx, checked)
        return None

    def _code_unchanged(self, spec: ExecutorSpec) -> bool:
        try:
            return code_hash(spec.folder) == self.runtime.registry.signed[spec.name].code_sha256
        except (OSError, MetnosError, KeyError):
            return False

    def _record_result(self, ctx: TurnContext, checked: CheckedStep,
                       result: SandboxResult) -> StepOutcome:
        name, action_id = checked.step.executor, checked.action_id
        assert checked.spec is not None
        record = self.runtime.record
        if result.ok:
            shown, secrets = self.runtime.guard.redact(result.result)  # Law 2 on the way out
            seq = record.audit_line(ctx, action=name, decision="allow",
                                    reason="MSG_LAW_OUTPUT_REDACTED" if secrets else
                                    ALLOWED_REVERSIBLE if checked.unasked else "ok",
                                    outcome="done", args_digest=checked.args_digest,
                                    action_id=action_id)
            return StepOutcome(name, "done", result=shown, audit_seq=seq, action_id=action_id)
        key = result.error_key or "ERR_SANDBOX_FAILED"
        seq = record.audit_line(ctx, action=name, decision="allow", reason=key, outcome="failed",
                                args_digest=checked.args_digest, action_id=action_id)
        return StepOutcome(name, "failed", key=key, vars={**result.error_vars, "executor": name},
                           audit_seq=seq, action_id=action_id)


def taint(ctx: TurnContext, checked: CheckedStep, result: Any) -> None:
    """Law 3 by default: the step's result is outside data now in the context, unless its
    manifest proves its results text-free and this one kept to them."""
    assert checked.spec is not None
    manifest = checked.spec.manifest
    args = checked.request.args if checked.request is not None else checked.step.args
    if manifest.outside_text or not manifest.result_holds_no_text(result, args):
        ctx.tainted = True
        label = source_label(checked)
        if label not in ctx.sources:
            ctx.sources.append(label)


class OwnerVoice:
    """The identity files around one step (`metnos.mechanisms.identity`): whatever the executor, a
    change it made while the turn was tainted is recorded with the turn's untrusted sources (the
    step's own result does not count: it comes after the write), with an audit line."""

    def __init__(self, ctx: TurnContext, checked: CheckedStep, workspace: Path) -> None:
        self.ctx, self.checked, self.workspace = ctx, checked, workspace
        self.tainted, self.sources = ctx.tainted, list(ctx.sources)
        self.before = identity.snapshot(workspace)

    def after(self, service: Runtime) -> None:
        args = self.checked.request.args if self.checked.request is not None else {}
        texts = [v for v in args.values() if isinstance(v, str)]
        whole = [name for name in FILES if _whole(self.workspace / name, texts)]
        decided = identity.record_changes(
            service.engine, self.workspace, self.before, tainted=self.tainted,
            sources=self.sources, whole=whole, turn_id=self.ctx.turn_id,
            action_id=self.checked.action_id)
        for name, reason in decided:
            service.record.audit_line(self.ctx, action=f"identity:{name}", decision="info",
                                      reason=reason, outcome="recorded",
                                      args_digest=self.checked.args_digest,
                                      action_id=self.checked.action_id)


def _whole(path: Path, texts: list[str]) -> bool:
    """Whether the file now holds exactly one of the step's argument texts (the card showed
    all of it): a whole new text, not a part added to an earlier one."""
    if not texts or identity.file_hash(path) is None:
        return False
    try:
        data = path.read_bytes().rstrip(b"\n")
    except OSError:
        return False
    return any(data == t.encode("utf-8").rstrip(b"\n") for t in texts)


MAX_SOURCE_ARG = 80


def source_label(checked: CheckedStep) -> str:
    """How an approval card names an untrusted source: the executor and what it read."""
    what = read_target(checked)
    return f"{checked.step.executor} ({what})" if what else checked.step.executor


def read_target(checked: CheckedStep) -> str:
    """What a step read, as a person would name it (a file, a page, a command), or ""."""
    args = checked.request.args if checked.request is not None else checked.step.args
    what = next((str(args[k]) for k in ("path", "url", "command", "folder") if k in args), "")
    return what[:MAX_SOURCE_ARG] + "…" if len(what) > MAX_SOURCE_ARG else what
