"""The server's side of a remote step (a manifest with `runs_on`): two runs on the laptop's
work pool around a record kept here.

1. the pool must have a worker online (its heartbeat), else the step fails at once, naming
   the place;
2. `prepare` (a run on the pool): the laptop checks everything again and returns the batch
   with each file's size and SHA-256;
3. the reply is untrusted data: checked (`record.checked_items`), then signed and dated with
   the audit key and stored under `state/before/<action_id>/` (Law 1: kept before anything
   moves), and tied to the turn (`recovery.link_record`);
4. `apply` (a second run) carries the signed record: the laptop renames only a batch the
   server signed, whose files are still what was recorded.

Two runs rather than one run waiting for an acknowledgement: a run that waits holds the
laptop's process and a worker slot through the server's work, and a server that dies between
the two leaves nothing half-done on the laptop (the record exists or the batch never runs).
Each run is awaited with `[remote] step_deadline_s`; past it the run is cancelled and the
step fails with a message naming the place. Every outcome leaves one audit line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import TYPE_CHECKING, Any

from metnos.features.remote import record
from metnos.features.remote.port import RemoteLost, RemotePort, RemoteTimeout
from metnos.ground import i18n, keys
from metnos.ground.errors import MetnosError
from metnos.mechanisms.policy.decide import ALLOWED_REVERSIBLE
from metnos.turns import recovery
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

MAX_REPLY = 4 << 20
_KEY_RE = re.compile(r"^ERR_[A-Z0-9_]{2,60}$")


class RemoteFailed(MetnosError, RuntimeError):
    key = "ERR_REMOTE_FAILED"


def reply_of(message: str, place: str) -> dict[str, Any]:
    """A worker's reply, checked as untrusted data: a refusal becomes RemoteFailed with a
    known message key and plain variables only."""
    try:
        reply = json.loads(message) if len(message) <= MAX_REPLY else None
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise RemoteFailed("ERR_REMOTE_REPLY_INVALID", place=place)
    if reply["ok"]:
        return reply
    key, raw = reply.get("key"), reply.get("vars")
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key) or i18n.lookup(key, "en") is None:
        raise RemoteFailed("ERR_REMOTE_REPLY_INVALID", place=place)
    items = list(raw.items())[:10] if isinstance(raw, dict) else []
    vars = {str(k)[:40]: v if isinstance(v, int) else str(v)[:200] for k, v in items}
    raise RemoteFailed("ERR_REMOTE_REFUSED", place=place, reason_key=key, **{
        k: v for k, v in vars.items() if k not in ("place", "reason_key")})


async def submit(port: RemotePort, pool: str, place: str, request: dict[str, Any],
                 deadline_s: float) -> dict[str, Any]:
    try:
        message = await port.submit(pool, {"request": request}, deadline_s)
    except RemoteTimeout as exc:
        raise RemoteFailed("ERR_REMOTE_TIMEOUT", place=place, seconds=int(deadline_s)) from exc
    except RemoteLost as exc:
        raise RemoteFailed("ERR_REMOTE_LOST", place=place) from exc
    return reply_of(message, place)


async def run_remote(service: Runtime, port: RemotePort | None, ctx: TurnContext,
                     checked: CheckedStep) -> StepOutcome:
    """Run an admitted step whose manifest says `runs_on` on its place's work pool."""
    assert checked.spec is not None and checked.request is not None
    name, place = checked.spec.name, str(checked.spec.manifest.runs_on)
    pool = service.settings.remote.pools.get(place)
    try:
        if port is None or pool is None:
            raise RemoteFailed("ERR_REMOTE_UNAVAILABLE", place=place)
        if not await port.online(pool):
            raise RemoteFailed("ERR_REMOTE_OFFLINE", place=place, pool=pool)
        await asyncio.to_thread(service.guard.record_action, ctx, checked)
        result = await _round_trips(service, port, pool, place, ctx, checked)
    except RemoteFailed as exc:
        return await asyncio.to_thread(_failed, service, ctx, checked, exc)
    shown, _ = service.guard.redact(result)
    seq = await asyncio.to_thread(
        service.record.audit_line, ctx, action=name, decision="allow",
        reason=ALLOWED_REVERSIBLE if checked.unasked else "ok", outcome="done",
        args_digest=checked.args_digest, action_id=checked.action_id)
    return StepOutcome(name, "done", result=shown, audit_seq=seq, action_id=checked.action_id)


async def _round_trips(service: Runtime, port: RemotePort, pool: str, place: str,
                       ctx: TurnContext, checked: CheckedStep) -> dict[str, Any]:
    assert checked.spec is not None and checked.request is not None
    settings, name, action_id = service.settings, checked.spec.name, checked.action_id
    deadline = float(settings.remote.step_deadline_s)
    args = dict(checked.request.args)
    base = {"executor": name, "place": place, "action_id": action_id, "args": args}
    prepared = await submit(port, pool, place, {**base, "phase": "prepare"}, deadline)
    folder = str(checked.request.args.get("folder", ""))
    try:
        items = record.checked_items(prepared.get("items"), folder)
        if prepared.get("folder") != folder:
            raise record.RecordError(detail="folder")
    except record.RecordError as exc:
        raise RemoteFailed("ERR_REMOTE_REPLY_INVALID", place=place) from exc
    if not items:
        return {"folder": folder, "renamed": 0, "place": place}
    signed = record.sign(record.new_manifest(action_id=action_id, executor=name, place=place,
                                             pool=pool, folder=folder, items=items,
                                             args=args),
                         keys.load_private_key(settings.keys_dir, "audit"))
    await asyncio.to_thread(_keep, service, ctx, checked, signed)
    applied = await submit(port, pool, place, {**base, "phase": "apply", "record": signed},
                           deadline)
    done = applied.get("result")
    renamed = done.get("renamed") if isinstance(done, dict) else None
    if not isinstance(renamed, int) or isinstance(renamed, bool):
        raise RemoteFailed("ERR_REMOTE_REPLY_INVALID", place=place)
    return {"folder": folder, "renamed": renamed, "place": place}


def _keep(service: Runtime, ctx: TurnContext, checked: CheckedStep,
          signed: dict[str, Any]) -> None:
    """Store the signed record and tie it to the turn; the batch runs only after this."""
    try:
        record.store(service.settings.state_dir, signed)
    except (OSError, ValueError) as exc:  # Law 1: no undo record, no action
        log.error("remote.before_record_failed action_id=%s: %s", checked.action_id, exc)
        raise RemoteFailed("ERR_LAW_NO_UNDO_RECORD", executor=checked.step.executor) from exc
    manifest = signed["manifest"]
    recovery.link_record(service.engine, action_id=checked.action_id, turn_id=ctx.turn_id,
                         executor=checked.step.executor, signed={
                             "manifest": {"created_at": manifest["created_at"], "paths": [
                                 {"path": i["src"]} for i in manifest["items"]]},
                             "signature": signed["signature"]})


def _failed(service: Runtime, ctx: TurnContext, checked: CheckedStep,
            exc: RemoteFailed) -> StepOutcome:
    name = checked.step.executor
    vars = dict(exc.vars)
    reason_key = vars.pop("reason_key", None)
    if reason_key is not None:  # the laptop's own refusal, in the session's language
        vars["reason"] = i18n.get(str(reason_key), ctx.lang, **vars)
    service.guard.release_run(checked)
    refused = exc.key == "ERR_REMOTE_REFUSED"
    log.warning("remote.step_failed executor=%s key=%s place=%s", name, reason_key or exc.key,
                vars.get("place"))
    seq = service.record.audit_line(
        ctx, action=name, decision="deny" if refused else "error",
        reason=str(reason_key or exc.key), outcome="failed", args_digest=checked.args_digest,
        action_id=checked.action_id)
    return StepOutcome(name, "failed", key=exc.key, vars={**vars, "executor": name},
                       audit_seq=seq, action_id=checked.action_id)
