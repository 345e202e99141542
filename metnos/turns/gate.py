"""The approval gate of a turn: a step the policy asks about waits for the owner's decision.

`open_approval` records the approval (bound to the user, the conversation, the exact action
digest and an expiry) and its audit line; the turn then waits — in the Prefect flow through
`pause_flow_run`, on the plain path by polling the database (`wait_in_db`) — and
`resolve` turns what came back into either "run it" (the approval is consumed, once, after
the action's digest is recomputed) or a final outcome: denied, expired, refused.
The database is the single source of truth: whatever surface resumed the wait (the API, the
CLI, the Prefect UI), the row's state decides.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from metnos.ground import escape, i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.i18n import phrases
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals import ApprovalError, NewApproval
from metnos.mechanisms.policy.approver import approver_id
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.laws import ASK_UNTRUSTED, UNTRUSTED_SOURCES
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.turns.context import CheckedStep, TurnContext
    from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

DB_POLL_S = 0.2
MAX_SHOWN_ARG = 300


def digest_now(service: Runtime, checked: CheckedStep) -> tuple[str, dict[str, str | None]]:
    """The action digest as of now: executor, code hash, arguments, files they name."""
    spec, request = checked.spec, checked.request
    assert spec is not None and request is not None
    files = {str(request.args[name]): approvals.fingerprint(service.settings.workspace,
                                                             str(request.args[name]))
             for name in spec.manifest.path_inputs() if isinstance(request.args.get(name), str)}
    signed = service.registry.signed.get(spec.name)
    code = signed.code_sha256 if signed is not None else ""
    digest = approvals.action_digest(executor=spec.name, code_sha256=code,
                                     args=dict(request.args), files=files)
    return digest, files


def open_approval(service: Runtime, ctx: TurnContext, checked: CheckedStep,
                  verdict: Decision) -> None:
    """Record a pending approval for an admitted-but-asking step (blocking: worker thread)."""
    digest, files = digest_now(service, checked)
    assert checked.request is not None and checked.spec is not None
    approver = approver_id(checked.spec.manifest, checked.request.args, ctx.user_id)
    new = NewApproval(turn_id=ctx.turn_id, session_id=ctx.session_id, user_id=ctx.user_id,
                      channel=ctx.channel, executor=checked.step.executor,
                      args=dict(checked.request.args), files=files, digest=digest,
                      action_id=checked.action_id, reason_key=verdict.key,
                      approver=approver, sources=tuple(ctx.sources))
    with db_session(service.engine) as db:
        row = approvals.create(db, new, timeout_s=service.settings.policy.approval_timeout_s,
                               flow_run_id=ctx.flow_run_id)
    checked.approval = row
    checked.ask = verdict
    service.record.audit_line(ctx, action=checked.step.executor, decision="ask", reason=verdict.key,
                       outcome="awaiting_approval", args_digest=checked.args_digest,
                       action_id=checked.action_id, approval_id=row.id)


def describe(checked: CheckedStep) -> str:
    """One line naming the exact action: `fs_move(src="a.txt", dst="b/a.txt")`."""
    args = checked.request.args if checked.request is not None else checked.step.args
    shown = ", ".join(f"{k}={_short(v)}" for k, v in sorted(args.items()))
    return f"{checked.step.executor}({shown})"


def why(checked: CheckedStep, lang: str) -> str:
    """Why the policy asks, in `lang` (what an approval card shows above the action)."""
    verdict = checked.ask
    assert verdict is not None
    text = i18n.get(verdict.key, lang, **{**verdict.vars, "executor": checked.step.executor})
    sources = verdict.vars.get(UNTRUSTED_SOURCES)
    if sources and verdict.key != ASK_UNTRUSTED:  # asks anyway: the sources are named too
        text += " " + i18n.get("MSG_APPROVAL_UNTRUSTED_SOURCES", lang, sources=sources)
    return text


def pending_message(checked: CheckedStep, lang: str) -> str:
    row = checked.approval
    assert row is not None
    return i18n.get("MSG_APPROVAL_NEEDED", lang, why=why(checked, lang), action=describe(checked),
                    approval_id=row.id, expires=row.expires_at.strftime("%Y-%m-%d %H:%M UTC"))


def markdown(checked: CheckedStep, lang: str) -> str:
    """The description the Prefect UI shows above the approve/deny form."""
    row = checked.approval
    assert row is not None
    missing = i18n.get("MSG_APPROVAL_FILE_MISSING", lang)
    described = approval_markdown(pending_message(checked, lang), describe(checked),
                                  {path: fp or missing for path, fp in row.files.items()})
    return "\n\n".join([described, *whole_values(checked, lang)])


def whole_values(checked: CheckedStep, lang: str) -> list[str]:
    """Each argument the one-line action had to shorten, whole (never a silent cut): its
    length as escaped prose, then every byte of it in a fenced block."""
    args = checked.request.args if checked.request is not None else checked.step.args
    shown: list[str] = []
    for name, value in sorted(args.items()):
        if len(json.dumps(value, ensure_ascii=False)) <= MAX_SHOWN_ARG:
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        size = i18n.get("MSG_APPROVALS_ARG_SIZE", lang, name=name, chars=len(text), lines=lines)
        shown += [escape.markdown_text(size), escape.markdown_block(text)]
    return shown


def approval_markdown(headline: str, action: str, files: dict[str, str]) -> str:
    """The pause description's markdown: the headline as escaped prose in bold, the action
    in a fenced block, each file and its fingerprint as code spans. Every piece may carry the
    model's text (arguments, paths, untrusted sources' names), so none of it is markdown."""
    shown = "\n".join(f"- {escape.markdown_code(path)}: {escape.markdown_code(fp)}"
                       for path, fp in files.items())
    bold = escape.markdown_text(headline)
    return "\n\n".join(filter(None, [bold and f"**{bold}**", escape.markdown_block(action),
                                     shown]))


async def wait_in_db(service: Runtime, ctx: TurnContext,
                     checked: CheckedStep) -> dict[str, Any] | None:
    """The plain path's wait: poll the row until it is decided or expires."""
    row = checked.approval
    assert row is not None
    while utcnow() < row.expires_at:
        status = await asyncio.to_thread(_status, service, row.id)
        if status != "pending":
            return {}
        await asyncio.sleep(DB_POLL_S)
    return None


def decided(service: Runtime, approval_id: str) -> bool:
    return _status(service, approval_id) != "pending"


def _status(service: Runtime, approval_id: str) -> str:
    with db_session(service.engine) as db:
        return approvals.get(db, approval_id).status


def resolve(service: Runtime, ctx: TurnContext, checked: CheckedStep,
            run_input: dict[str, Any] | None, via: str) -> StepOutcome | None:
    """After the wait: None means "approved and consumed, run it"; otherwise the final
    outcome of the step (denied, expired, refused), each with exactly one audit line."""
    row = checked.approval
    assert row is not None
    with db_session(service.engine) as db:
        current = approvals.get(db, row.id)
        if current.status == "pending" and run_input and run_input.get("decision"):
            # resumed from a surface that did not record it (the Prefect UI's form)
            try:
                current = approvals.decide(db, row.id, str(run_input["decision"]),
                                           user_id=approvals.approver_of(row), via=via,
                                           note=str(run_input.get("reason", "")))
                service.record.audit_line(ctx, sender=via, action="approval", decision="info",
                                   reason="MSG_APPROVAL_DECIDED", outcome=current.status,
                                   approval_id=row.id)
            except ApprovalError as exc:
                current = approvals.get(db, row.id)
                log.info("approval.ui_decision_refused id=%s key=%s", row.id, exc.key)
        if current.status == "pending":
            approvals.expire(db, row.id)
            return _closed(service, ctx, checked, "ERR_APPROVAL_EXPIRED", "expired")
        if current.status == "denied":
            return _closed(service, ctx, checked, "MSG_APPROVAL_DENIED", "denied",
                           note=current.note or "")
        if current.status != "approved":  # expired by the clock, or used elsewhere
            return _closed(service, ctx, checked, "ERR_APPROVAL_EXPIRED"
                           if current.status == "expired" else "ERR_APPROVAL_NOT_APPROVED",
                           current.status)
        digest, _ = digest_now(service, checked)
        try:
            approvals.consume(db, row.id, user_id=ctx.user_id, session_id=ctx.session_id,
                              digest=digest)
        except ApprovalError as exc:
            return _closed(service, ctx, checked, exc.key, "refused")
    return None


def _closed(service: Runtime, ctx: TurnContext, checked: CheckedStep, key: str,
            outcome: str, note: str = "") -> StepOutcome:
    service.guard.release_run(checked)  # denied, expired or refused: it never runs
    seq = service.record.audit_line(ctx, action=checked.step.executor,
                             decision="deny",
                             reason=key, outcome=outcome, args_digest=checked.args_digest,
                             action_id=checked.action_id,
                             approval_id=checked.approval.id if checked.approval else None)
    row = checked.approval
    args = checked.request.args if checked.request is not None else checked.step.args
    vars = {"executor": checked.step.executor, "action": describe(checked),
            "approval_id": row.id if row else "", "status": outcome, "note": note,
            # the values a plain sentence names ("I did not delete compiti.md"), quoted short
            "args": {k: phrases.quoted(v) for k, v in sorted(args.items())}}
    return StepOutcome(checked.step.executor, "refused", key=key, vars=vars, audit_seq=seq)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_SHOWN_ARG else text[:MAX_SHOWN_ARG] + "…\""


def recover_interrupted(service: Runtime) -> int:
    """At start-up: a turn left waiting by a stopped gateway can never resume. Its pending
    approvals expire and the turn fails with a message saying so (one audit line each)."""
    from metnos.ground.db import models

    with db_session(service.engine) as db:
        expired = approvals.expire_interrupted(db)
        for approval_id in expired:
            row = approvals.get(db, approval_id)
            turn = models.get_turn(db, row.turn_id)  # the reply in the turn's language
            reply = i18n.get("ERR_APPROVAL_INTERRUPTED", turn.lang if turn else None,
                             executor=row.executor)
            models.finish_turn(db, row.turn_id, status="failed", reply=reply,
                               error_key="ERR_APPROVAL_INTERRUPTED")
            service.audit.append(sender="metnos", channel=row.channel, action=row.executor,
                                 session_id=row.session_id, turn_id=row.turn_id,
                                 approval_id=row.id, decision="deny",
                                 reason="ERR_APPROVAL_INTERRUPTED", outcome="expired")
    return len(expired)
