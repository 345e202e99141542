"""The step checker: every step a planner asks for passes the policy before it may run.

In order: the call itself must be usable (arguments a JSON object), the Laws (a step carrying
a secret never goes further), the executor must be admitted and not archived (SPEC §7.5:
only the owner archives), its arguments must fit the manifest's schema, paths are resolved
inside the workspace, the host-side checks the manifest declares run
(`metnos.mechanisms.policy.host_checks`), then the autonomy decision (an ordinary reversible change
runs unasked in Supervised: `metnos.turns.autonomy`), the taint of untrusted data
(Law 3), the hourly run budget and the hard artifact intent. The result is a `CheckedStep`: a
sandbox request to run (perhaps after an approval), or a final refusal with exactly one audit
line.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metnos.ground import i18n
from metnos.ground.errors import AccountMissing, ModelRetryError, PolicyDenied
from metnos.mechanisms.audit import digest_args
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.llm.tools import PlanStep
from metnos.mechanisms.policy import decide, resolve_in_workspace, resolve_path_args, validate_args
from metnos.mechanisms.policy.approver import owner_asks
from metnos.mechanisms.policy.decide import ALLOWED_REVERSIBLE, Decision
from metnos.mechanisms.policy.host_checks import apply_host_checks
from metnos.mechanisms.sandbox import SandboxRequest
from metnos.turns import gate, language
from metnos.turns.autonomy import routine_step
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.turns.runtime import Hooks, Runtime

# refusals that mean the call itself was wrong (the model may correct it), not the policy
MALFORMED_KEYS = frozenset({"ERR_PLAN_ARGS_NOT_JSON", "ERR_EXECUTOR_NOT_FOUND"})


class StepChecker:
    def __init__(self, runtime: Runtime, hooks: Hooks) -> None:
        self.runtime, self.hooks = runtime, hooks
        self.settings = runtime.settings

    def check(self, ctx: TurnContext, step: PlanStep, *, seq: int = 0,
              think: int = 0) -> CheckedStep:
        """Every step passes the policy; a refusal leaves exactly one audit line."""
        started = time.perf_counter()
        try:
            checked = CheckedStep(step, None, args_digest=digest_args(step.args), seq=seq,
                                  think=think)
            return self._check(ctx, checked)
        finally:
            ctx.mark("policy", started)

    def _check(self, ctx: TurnContext, checked: CheckedStep) -> CheckedStep:
        step, service = checked.step, self.runtime
        if step.error:
            return self.refuse(ctx, checked, step.error, {"executor": step.executor})
        law = service.guard.laws(ctx, step)  # first: a step carrying a secret never goes on
        if law is not None:
            return self.refuse(ctx, checked, law.key, law.vars)
        spec = service.registry.find(step.executor)
        if spec is None:
            refused = service.registry.refusal(step.executor)
            if refused is not None:
                return self.refuse(ctx, checked, "ERR_EXECUTOR_NOT_ADMITTED",
                                   {"executor": step.executor,
                                    "reason": i18n.get(refused[0], ctx.lang, **refused[1])})
            return self.refuse(ctx, checked, "ERR_EXECUTOR_NOT_FOUND",
                               {"executor": step.executor})
        archived = self.hooks.archived
        if archived is not None and archived(step.executor):  # the owner archived it (mnestoma)
            return self.refuse(ctx, checked, "ERR_EXECUTOR_ARCHIVED",
                               {"executor": step.executor})
        checked.spec = spec
        manifest = spec.manifest
        try:
            schema = manifest.input_schema()
            args = resolve_path_args(schema, validate_args(schema, step.args), self._resolve)
            args = apply_host_checks(self.settings, manifest.host_checks(), args,
                                     self.hooks.host_checks)
        except (ModelRetryError, PolicyDenied) as exc:
            checked.malformed = isinstance(exc, ModelRetryError)
            return self.refuse(ctx, checked, exc.key, {**exc.vars, "executor": step.executor})
        verdict = service.guard.taint(ctx, manifest, decide(
            risk=manifest.risk, side_effects=manifest.side_effects,
            reversible=manifest.reversible, autonomy=ctx.autonomy,
            sandbox_ok=service.sandbox_ok, executor=step.executor,
            network=manifest.sandbox.network, tainted=ctx.tainted, ask_all=ctx.ask_all,
            routine=routine_step(self.settings, manifest, args)))
        verdict = service.guard.owner_voice(manifest, args, verdict)  # always asks (identity)
        if verdict.verdict == "deny":
            return self.refuse(ctx, checked, verdict.key,
                               {**verdict.vars, "executor": step.executor})
        account = None
        if manifest.account is not None:  # the envelope's host-only block (hooks.accounts)
            try:
                account = self.hooks.accounts[manifest.account](self.settings)
            except AccountMissing as exc:  # before any sandbox starts, with an audit line
                return self.refuse(ctx, checked, exc.key, {"executor": step.executor})
        slot = service.guard.reserve_run(ctx)  # held until the run starts, else given back
        if isinstance(slot, Decision):
            return self.refuse(ctx, checked, slot.key, slot.vars)
        checked.run_slot = slot
        verdict = self._artifact_language(ctx, checked, manifest, args, verdict)
        verdict = owner_asks(verdict, manifest, args, ctx.user_id)  # a member's, the owner's
        checked.unasked = verdict.verdict == "allow" and verdict.key == ALLOWED_REVERSIBLE
        checked.request = SandboxRequest(
            exec_dir=spec.folder, entry=manifest.entry, profile=manifest.sandbox,
            workspace=self.settings.workspace, args=args, action_id=checked.action_id,
            max_output_bytes=self.settings.sandbox.max_output_bytes,
            max_processes=self.settings.sandbox.max_processes, account=account)
        if verdict.verdict == "ask":
            gate.open_approval(service, ctx, checked, verdict)
        return checked

    def _artifact_language(self, ctx: TurnContext, checked: CheckedStep, manifest: Manifest,
                           args: dict[str, Any], verdict: Decision) -> Decision:
        """The hard artifact intent (SPEC §9.7): writing a file in another language than the
        one it must keep asks the owner (never a silent denial), with an audit line."""
        found = language.check_artifact(self.settings, ctx.lang, manifest, args)
        if found is None:
            return verdict
        self.runtime.record.audit_line(
            ctx, action=language.AUDIT_ACTION, decision="info", reason=found.audit_reason(),
            outcome="ask", args_digest=checked.args_digest, action_id=checked.action_id)
        return found.decision(manifest.name, ctx.lang)

    def _resolve(self, raw: str) -> str:
        return resolve_in_workspace(raw, self.settings.workspace, home_dir=Path.home(),
                                    metnos_home=self.settings.home)

    def refuse(self, ctx: TurnContext, checked: CheckedStep, key: str, vars: dict[str, Any],
               *, decision: str = "deny") -> CheckedStep:
        return refuse(self.runtime, ctx, checked, key, vars, decision=decision)


def refuse(runtime: Runtime, ctx: TurnContext, checked: CheckedStep, key: str,
           vars: dict[str, Any], *, decision: str = "deny") -> CheckedStep:
    """`checked` refused for `key`, with its audit line (a host tool's refusal too)."""
    runtime.guard.release_run(checked)  # a refused step never runs: its run goes back
    rec = runtime.record.audit_line(
        ctx, action=checked.step.executor, decision=decision, reason=key,
        outcome="refused", args_digest=checked.args_digest)
    checked.malformed = checked.malformed or key in MALFORMED_KEYS
    checked.outcome = StepOutcome(checked.step.executor, "refused", key=key, vars=vars,
                                  audit_seq=rec)
    return checked

