"""The steps of a turn as plain methods (SPEC §2): open, plan, check, execute, close.

`TurnService` holds what a turn needs (settings, database, executor registry, audit log, the
LLM port, the guard of the Laws). `metnos.turns.pipeline.run_pipeline` composes the steps;
`flows/turn.py` runs the same composition with Prefect tasks. Nothing here imports prefect.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from metnos import approvals, i18n, keys, reversibility
from metnos.audit import AuditLog, digest_args
from metnos.db import models
from metnos.db.engine import session as db_session
from metnos.errors import MetnosError, ModelRetryError, PolicyDenied
from metnos.executors.manifest import Manifest
from metnos.executors.registry import ExecutorSpec, Registry
from metnos.executors.signing import code_hash
from metnos.llm.embedded import plan_embedded
from metnos.llm.planner import plan_with_llm
from metnos.llm.port import LLMPort
from metnos.llm.tools import Plan, PlanStep, ToolSpec
from metnos.policy import decide, resolve_in_workspace, resolve_path_args, validate_args
from metnos.policy.decide import Decision
from metnos.policy.laws import no_undo_record_decision
from metnos.policy.limits import Reservation
from metnos.policy.shell import check_command
from metnos.policy.urls import check_url
from metnos.sandbox import SandboxRequest, SandboxResult, run_sandboxed
from metnos.settings import Settings
from metnos.turns import gate, language, recovery
from metnos.turns.context import CheckedStep, Published, TurnContext
from metnos.turns.events import TurnEvents
from metnos.turns.guard import Guard
from metnos.turns.reply import StepOutcome, compose
from metnos.workspace import prompt_context

log = logging.getLogger(__name__)


class TurnService:
    def __init__(self, settings: Settings, *, engine: Engine, registry: Registry,
                 audit: AuditLog, port: LLMPort | None, sandbox_ok: bool = True) -> None:
        self.settings = settings
        self.engine = engine
        self.registry = registry
        self.audit = audit
        self.port = port
        self.sandbox_ok = sandbox_ok
        self._replies: dict[str, asyncio.Future[Published]] = {}
        self._tools: dict[tuple[str, int], list[ToolSpec]] = {}  # per language and generation
        self.guard = Guard(settings, engine)
        self.events = TurnEvents()  # each turn's progress, for the channels (SSE, typing...)

    # -- opening and closing ------------------------------------------------------------
    async def open_turn(self, text: str, *, session_id: str | None, lang: str | None,
                        channel: str, sender: str,
                        untrusted: Sequence[tuple[str, str]] = (),
                        accept_language: str | None = None) -> TurnContext:
        """Record the turn (and its session) before anything runs; nothing is lost on a crash.
        `lang` (else `accept_language`) is the client's UI locale: it names the language of a
        session this turn creates, never of one it resumes (SPEC §9.6).
        `untrusted` is content from outside as (source, text): data for the model, never
        orders, and it makes every acting step of the turn ask first (Law 3)."""
        limit = self.settings.gateway.max_message_chars
        for piece in (text, *(t for _, t in untrusted)):
            if len(piece) > limit:
                raise MetnosError("ERR_MESSAGE_TOO_LONG", length=len(piece), limit=limit)
        locale = language.ui_locale(lang, accept_language, self.settings)
        ctx = await asyncio.to_thread(self._record_open, text, session_id, locale, channel,
                                      sender)
        ctx.untrusted = tuple(untrusted)
        self._replies[ctx.turn_id] = asyncio.get_running_loop().create_future()
        self.events.publish(ctx.turn_id, "status", status="planning")
        return ctx

    def _record_open(self, text: str, session_id: str | None, locale: str, channel: str,
                     sender: str) -> TurnContext:
        with db_session(self.engine) as db:
            opened = models.open_session(
                db, session_id, user_id=sender, channel=channel, lang=locale,
                legacy_lang=language.legacy_language(self.settings),
                autonomy=self.settings.policy.autonomy)
            chat = opened.chat
            lang = chat.interaction_language or locale  # set: created, kept or pinned above
            turn = models.record_turn_start(
                db, session_id=chat.id, channel=channel, sender=sender, text=text, lang=lang)
            ctx = TurnContext(turn.id, chat.id, chat.user_id, channel, sender, lang,
                              chat.autonomy, text, ui_locale=locale)
        if opened.pinned:  # a legacy session: its language comes from the workspace, once
            self.audit_line(ctx, action="session.language_pinned", decision="info",
                            reason=f"interaction_language={lang} (workspace language)",
                            outcome="done")
        return ctx

    async def wait_reply(self, turn_id: str, timeout_s: float) -> Published | None:
        """The reply as soon as the pipeline composed it (before its final bookkeeping), or
        the approvals it waits for; None when it takes longer than `timeout_s` (the turn goes
        on; poll GET /api/turns)."""
        future = self._replies.get(turn_id)
        if future is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            return None

    def publish(self, ctx: TurnContext, reply: str, status: str = "completed",
                approvals: list[dict[str, Any]] | None = None) -> None:
        """Hand the reply (or the approvals the turn waits for) to the channel waiting."""
        future = self._replies.pop(ctx.turn_id, None)
        if future is not None and not future.done():
            future.set_result(Published(reply, status, approvals or []))
        if status != "awaiting_approval":  # a waiting turn shows its `approval` events
            self.events.publish(ctx.turn_id, "reply", text=reply, status=status)

    def step_event(self, ctx: TurnContext, checked: CheckedStep, state: str,
                   outcome: StepOutcome | None = None) -> None:
        """A step's progress (started, done, failed, refused): its name and the digest of
        its arguments, never the arguments themselves."""
        self.events.publish(ctx.turn_id, "step", executor=checked.step.executor, state=state,
                            action_id=checked.action_id, args_digest=checked.args_digest,
                            key=outcome.key if outcome is not None else None)

    async def await_owner(self, ctx: TurnContext, checked: CheckedStep,
                          outcomes: list[StepOutcome]) -> None:
        """Tell the user (and the turn's record) that this step waits for an approval."""
        assert checked.approval is not None
        done_so_far = [compose(outcomes, None, ctx.lang)] if outcomes else []
        reply = "\n\n".join([*done_so_far, gate.pending_message(checked, ctx.lang)])
        pending = [approvals.public(checked.approval)]
        self.publish(ctx, reply, "awaiting_approval", pending)
        await asyncio.to_thread(self._record_status, ctx, reply, "awaiting_approval")
        self.events.publish(ctx.turn_id, "status", status="awaiting_approval")
        self.events.publish(ctx.turn_id, "approval", **pending[0],
                            why=gate.why(checked, ctx.lang), action=gate.describe(checked),
                            message=gate.pending_message(checked, ctx.lang))

    async def resume_after_owner(self, ctx: TurnContext) -> None:
        await asyncio.to_thread(self._record_status, ctx, None, "running")
        self.events.publish(ctx.turn_id, "status", status="running")

    def _record_status(self, ctx: TurnContext, reply: str | None, status: str) -> None:
        with db_session(self.engine) as db:
            models.finish_turn(db, ctx.turn_id, status=status, reply=reply,
                               flow_run_id=ctx.flow_run_id)

    async def close_turn(self, ctx: TurnContext, reply: str, status: str,
                         error_key: str | None = None) -> None:
        await asyncio.to_thread(self._record_close, ctx, reply, status, error_key)
        ctx.closed = True
        self._end(ctx, status)

    def _end(self, ctx: TurnContext, status: str) -> None:
        """The turn's last events (once: the bus ignores anything after `end`)."""
        self.events.publish(ctx.turn_id, "status", status=status)
        self.events.publish(ctx.turn_id, "end", status=status)

    def _record_close(self, ctx: TurnContext, reply: str, status: str,
                      error_key: str | None) -> None:
        with db_session(self.engine) as db:
            models.finish_turn(db, ctx.turn_id, status=status, reply=reply, error_key=error_key,
                               timings=ctx.timings, flow_run_id=ctx.flow_run_id)

    async def fail_turn(self, ctx: TurnContext, exc: BaseException) -> str:
        """Terminal failure: tell the user in their language first, then audit it and close
        the turn; a failure of that bookkeeping is logged, never raised over the first one."""
        if isinstance(exc, MetnosError):
            key, vars = exc.key, exc.vars
            log.warning("turn.failed turn_id=%s key=%s vars=%s", ctx.turn_id, key, vars)
        else:
            key, vars = "ERR_INTERNAL_UNEXPECTED", {}
            log.error("turn.crashed turn_id=%s", ctx.turn_id, exc_info=exc)
        reply = i18n.get(key, ctx.lang, **vars)
        self.publish(ctx, reply, "failed")
        ctx.closed = True  # one failure record per turn, even if the bookkeeping below fails
        try:
            await asyncio.to_thread(self.audit_line, ctx, action="turn", decision="error",
                                    reason=key, outcome="failed")
            await self.close_turn(ctx, reply, "failed", error_key=key)
        except Exception:  # the database or the audit disk is gone: keep the first cause
            log.exception("turn.fail_bookkeeping_failed turn_id=%s", ctx.turn_id)
        self._end(ctx, "failed")
        return reply

    # -- planning -------------------------------------------------------------------------
    def tools(self, ctx: TurnContext) -> list[ToolSpec]:
        """The tools in the session's language; rebuilt when reviewed translations of their
        descriptions land in the i18n store (the registry itself is fixed)."""
        key = (ctx.lang, i18n.generation())
        if key not in self._tools:
            self._tools = {k: v for k, v in self._tools.items() if k[1] == key[1]}
            self._tools[key] = self.registry.tool_specs(ctx.lang)
        return self._tools[key]

    async def plan(self, ctx: TurnContext) -> Plan:
        started = time.perf_counter()
        try:
            ctx.tainted = ctx.tainted or bool(ctx.untrusted)
            if self.port is None:
                return plan_embedded(ctx.text, ctx.lang, self.tools(ctx))
            slot = await asyncio.to_thread(self.guard.reserve_llm)
            if isinstance(slot, Decision):  # the day's LLM budget is spent: the embedded
                await asyncio.to_thread(self.audit_line, ctx, action="llm",  # planner serves
                                        decision="deny", reason=slot.key, outcome="refused")
                plan = plan_embedded(ctx.text, ctx.lang, self.tools(ctx))
                return replace(plan, text=slot.message(ctx.lang))
            return await self._plan_llm(ctx, self.port, slot)
        finally:
            ctx.mark("plan", started)

    async def _plan_llm(self, ctx: TurnContext, port: LLMPort, slot: Reservation) -> Plan:
        """The planner call on its reserved budget, settled to its real cost (or given back
        when the call fails)."""
        plan: Plan | None = None
        try:
            context = await asyncio.to_thread(prompt_context, self.settings.workspace)
            plan = await plan_with_llm(port, ctx.text, ctx.lang, self.tools(ctx),
                                       workspace_context=context, untrusted=ctx.untrusted,
                                       intents=self.settings.i18n)
            return plan
        finally:
            await asyncio.to_thread(self.guard.settle_llm, ctx, slot, plan,
                                    port.resolve("fast") or "")

    # -- policy ---------------------------------------------------------------------------
    def check(self, ctx: TurnContext, step: PlanStep) -> CheckedStep:
        """Every step passes the policy; a refusal leaves exactly one audit line."""
        started = time.perf_counter()
        try:
            return self._check(ctx, step)
        finally:
            ctx.mark("policy", started)

    def _check(self, ctx: TurnContext, step: PlanStep) -> CheckedStep:
        checked = CheckedStep(step, None, args_digest=digest_args(step.args))
        if step.error:
            return self._refuse(ctx, checked, step.error, {"executor": step.executor})
        law = self.guard.laws(ctx, step)  # first: a step carrying a secret never goes further
        if law is not None:
            return self._refuse(ctx, checked, law.key, law.vars)
        spec = self.registry.find(step.executor)
        if spec is None:
            refused = self.registry.refusal(step.executor)
            if refused is not None:
                return self._refuse(ctx, checked, "ERR_EXECUTOR_NOT_ADMITTED",
                                    {"executor": step.executor,
                                     "reason": i18n.get(refused[0], ctx.lang, **refused[1])})
            return self._refuse(ctx, checked, "ERR_EXECUTOR_NOT_FOUND",
                                {"executor": step.executor})
        checked.spec = spec
        manifest = spec.manifest
        try:
            schema = manifest.input_schema()
            args = resolve_path_args(schema, validate_args(schema, step.args), self._resolve)
            args = self._executor_checks(step.executor, args)
        except (ModelRetryError, PolicyDenied) as exc:
            return self._refuse(ctx, checked, exc.key, {**exc.vars, "executor": step.executor})
        verdict = self.guard.taint(ctx, manifest, decide(
            risk=manifest.risk, side_effects=manifest.side_effects,
            reversible=manifest.reversible, autonomy=ctx.autonomy, sandbox_ok=self.sandbox_ok,
            executor=step.executor))
        if verdict.verdict == "deny":
            return self._refuse(ctx, checked, verdict.key,
                                {**verdict.vars, "executor": step.executor})
        slot = self.guard.reserve_run(ctx)  # held until the run starts, else given back
        if isinstance(slot, Decision):
            return self._refuse(ctx, checked, slot.key, slot.vars)
        checked.run_slot = slot
        verdict = self._artifact_language(ctx, checked, manifest, args, verdict)
        checked.request = SandboxRequest(
            exec_dir=spec.folder, entry=manifest.entry, profile=manifest.sandbox,
            workspace=self.settings.workspace, args=args, action_id=checked.action_id,
            max_output_bytes=self.settings.sandbox.max_output_bytes,
            max_processes=self.settings.sandbox.max_processes)
        if verdict.verdict == "ask":
            gate.open_approval(self, ctx, checked, verdict)
        return checked

    def _artifact_language(self, ctx: TurnContext, checked: CheckedStep, manifest: Manifest,
                           args: dict[str, Any], verdict: Decision) -> Decision:
        """The hard artifact intent (SPEC §9.7): writing a file in another language than the
        one it must keep asks the owner (never a silent denial), with an audit line."""
        found = language.check_artifact(self.settings, ctx.lang, manifest, args)
        if found is None:
            return verdict
        self.audit_line(ctx, action=language.AUDIT_ACTION, decision="info",
                        reason=found.audit_reason(), outcome="ask",
                        args_digest=checked.args_digest, action_id=checked.action_id)
        return found.decision(manifest.name, ctx.lang)

    def _executor_checks(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Host-side checks of executors whose arguments are more than paths (PolicyDenied)."""
        if name == "shell_run":
            check_command(args["command"], self.settings.policy.shell_allow)
        elif name == "web_fetch":  # the host, never the model, says whether LAN is reachable
            allow = self.settings.sandbox.web_allow_private
            args = {**args, "url": check_url(args["url"], allow_private=allow),
                    "allow_private": allow}
        return args

    def _resolve(self, raw: str) -> str:
        return resolve_in_workspace(raw, self.settings.workspace, home_dir=Path.home(),
                                    metnos_home=self.settings.home)

    def _refuse(self, ctx: TurnContext, checked: CheckedStep, key: str, vars: dict[str, Any],
                *, decision: str = "deny") -> CheckedStep:
        self.guard.release_run(checked)  # a refused step never runs: its run goes back
        rec = self.audit_line(ctx, action=checked.step.executor, decision=decision, reason=key,
                          outcome="refused", args_digest=checked.args_digest)
        checked.outcome = StepOutcome(checked.step.executor, "refused", key=key, vars=vars,
                                      audit_seq=rec)
        return checked

    # -- execution ------------------------------------------------------------------------
    async def execute(self, ctx: TurnContext, checked: CheckedStep) -> StepOutcome:
        """Run one admitted step in the sandbox; record the before state of what it may change."""
        if checked.request is None or checked.spec is None:
            raise ValueError("execute() takes a step the policy admitted")
        refused = await asyncio.to_thread(self._prepare_run, ctx, checked)
        if refused is not None:
            return refused
        started = time.perf_counter()
        result = await run_sandboxed(checked.request)
        ctx.mark("sandbox_total", started)
        ctx.timings["sandbox_spawn"] = ctx.timings.get("sandbox_spawn", 0.0) + result.spawn_s * 1000
        return await asyncio.to_thread(self._record_result, ctx, checked, result)

    def _prepare_run(self, ctx: TurnContext, checked: CheckedStep) -> StepOutcome | None:
        """Host-side work right before a run (blocking I/O: called in a worker thread)."""
        spec, request = checked.spec, checked.request
        assert spec is not None and request is not None  # checked by execute()
        if not self._code_unchanged(spec):
            # admitted at start-up, changed since: its signature no longer vouches for it
            return self._refuse(ctx, checked, "ERR_EXECUTOR_CODE_CHANGED",
                                {"name": spec.name}).outcome
        if spec.manifest.side_effects:
            written = [request.args[n] for n, acc in spec.manifest.path_inputs().items()
                       if acc == "write" and isinstance(request.args.get(n), str)]
            try:  # kept even when the run then fails: a crash may have changed files already
                signed = reversibility.record_before(
                    self.settings.state_dir, checked.action_id, self.settings.workspace,
                    spec.name, written, keys.load_private_key(self.settings.keys_dir, "audit"),
                    copy=not spec.manifest.sandbox.trash)
            except (OSError, ValueError, MetnosError) as exc:  # Law 1: no undo, no action
                log.error("turn.before_record_failed action_id=%s: %s", checked.action_id, exc)
                law = no_undo_record_decision(spec.name)
                return self._refuse(ctx, checked, law.key, law.vars).outcome
            # tied to the turn, so that a restart after a crash can name it for an undo
            recovery.link_record(self.engine, action_id=checked.action_id,
                                 turn_id=ctx.turn_id, executor=spec.name, signed=signed)
        self.guard.record_action(ctx, checked)
        return None

    def _code_unchanged(self, spec: ExecutorSpec) -> bool:
        try:
            return code_hash(spec.folder) == self.registry.signed[spec.name].code_sha256
        except (OSError, MetnosError, KeyError):
            return False

    def _record_result(self, ctx: TurnContext, checked: CheckedStep,
                       result: SandboxResult) -> StepOutcome:
        name, action_id = checked.step.executor, checked.action_id
        assert checked.spec is not None
        ctx.tainted = ctx.tainted or checked.spec.manifest.untrusted_output
        if result.ok:
            shown, secrets = self.guard.redact(result.result)  # Law 2 on the way out too
            seq = self.audit_line(ctx, action=name, decision="allow",
                                  reason="MSG_LAW_OUTPUT_REDACTED" if secrets else "ok",
                                  outcome="done", args_digest=checked.args_digest,
                                  action_id=action_id)
            return StepOutcome(name, "done", result=shown, audit_seq=seq, action_id=action_id)
        key = result.error_key or "ERR_SANDBOX_FAILED"
        seq = self.audit_line(ctx, action=name, decision="allow", reason=key, outcome="failed",
                          args_digest=checked.args_digest, action_id=action_id)
        return StepOutcome(name, "failed", key=key, vars={**result.error_vars, "executor": name},
                           audit_seq=seq, action_id=action_id)

    def audit_line(self, ctx: TurnContext, **fields: Any) -> int:
        """One audit line about this turn (`fields` may override the sender, say)."""
        base = {"sender": ctx.sender, "channel": ctx.channel, "session_id": ctx.session_id,
                "turn_id": ctx.turn_id}
        record = self.audit.append(**{**base, **fields})
        return int(record.seq)


__all__ = ["CheckedStep", "Published", "TurnContext", "TurnService"]
