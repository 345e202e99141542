"""`metnos undo ACTION_ID` for a mail move: the messages go back, with their flags exactly.

The record (`metnos.features.mail.record`) is verified first (signature, action id, kind). The
inverse runs through the same sandboxed executor (`move_messages`, mode "restore", set by the host):
from the destination folder back to the source, each message found by its recorded new UID
(checked against its Message-ID) or else by Message-ID alone, then its flags set to exactly
the recorded ones. The account comes from `metnos mail add` as for any run; the executor's
code must still be what its signature vouches for. One audit line whatever happens, and a
marker so the same action is undone once (as `metnos.mechanisms.undo`).

Blocking (it waits for the sandbox on its own event loop): call it in a worker thread, as
`run_undo` is. `Mailbox` is the reversal (`metnos.features.reversal`) a mailbox's manifest chooses.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from metnos.features.mail.account import load_account
from metnos.features.mail.record import (
    AFTER_FILE,
    RECORD_KIND,
    after_move,
    before_move,
    is_mail_record,
    verified,
)
from metnos.ground import keys
from metnos.ground.errors import MetnosError
from metnos.ground.restore import UndoItem
from metnos.mechanisms.executors.signing import code_hash
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, run_sandboxed
from metnos.mechanisms.undo import (
    UndoError,
    UndoReport,
    audit_undo,
    audited,
    locked,
    mark_undone,
    refuse_undone,
    verify_before,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from metnos.turns.context import CheckedStep
    from metnos.turns.runtime import Hooks, Runtime

EXECUTOR = "move_messages"


class Mailbox:
    """The reversal of a mail move (`metnos.features.reversal`): the mailbox's state before it, from
    a read-only snapshot run; the new UIDs after it; the messages moved back by the undo."""

    def before(self, service: Runtime, checked: CheckedStep,
               key: Ed25519PrivateKey) -> dict[str, Any]:
        assert checked.spec is not None and checked.request is not None
        signed, checked.request = before_move(service.settings.state_dir, checked.request,
                                              checked.spec.name, key)
        return signed

    def after(self, service: Runtime, checked: CheckedStep, result: SandboxResult) -> None:
        if checked.request is not None and checked.request.args.get("mode") == "move":
            after_move(service.settings, checked.action_id, result)  # the new UIDs, signed

    def undo(self, service: Runtime, hooks: Hooks, action_id: str, *, sender: str,
             channel: str) -> UndoReport | None:
        return undo_mail(service, action_id, sender=sender, channel=channel)


def undo_mail(service: Runtime, action_id: str, *, sender: str,
              channel: str) -> UndoReport | None:
    """The undo of a mail move, or None when `action_id` is not one (another undo's turn).
    Raises UndoError (refused), after its audit line."""
    if not is_mail_record(service.settings.state_dir, action_id):
        return None
    return audited(audit_undo(service.audit, action_id, sender, channel),
                   lambda: _undo(service, action_id))


def _undo(service: Runtime, action_id: str) -> UndoReport:
    settings = service.settings
    folder = settings.state_dir / "before" / action_id
    public = keys.load_public_key(settings.keys_dir, "audit")
    with locked(folder):
        refuse_undone(folder, action_id)
        manifest = verify_before(settings.state_dir, action_id, public)
        mail = manifest.get("mail")
        if not isinstance(mail, dict) or mail.get("kind") != RECORD_KIND:
            raise UndoError("ERR_UNDO_MANIFEST_INVALID", action_id=action_id)
        after = verified(folder / AFTER_FILE, public)
        if after is not None and after.get("action_id") != action_id:
            after = None  # another action's mapping: find the messages by Message-ID
        undo_id = uuid.uuid4().hex
        result = asyncio.run(_restore(service, mail, after, undo_id))
        items = _items(mail, result)
        outcome = "failed" if any(i.status == "failed" for i in items) else "done"
        if outcome == "done":
            mark_undone(folder, undo_id)
    return UndoReport(action_id, undo_id, str(manifest["executor"]), outcome, items)


def restore_args(mail: dict[str, Any], after: dict[str, Any] | None) -> dict[str, Any]:
    """The inverse batch: from the destination back to the source, by new UID when the
    signed mapping has it, else by Message-ID; the recorded flags, exactly."""
    mapped = {}
    if after is not None:
        mapped = {int(src): int(dst) for src, dst in after.get("mapping", [])}
    messages = mail["messages"]
    return {"mode": "restore", "folder": mail["to_folder"], "to_folder": mail["folder"],
            "uids": [mapped.get(m["uid"], 0) for m in messages],
            "uidvalidity": int(after["to_uidvalidity"]) if after is not None else 0,
            "message_ids": [m["message_id"] for m in messages],
            "flags": [" ".join(m["flags"]) for m in messages]}


async def _restore(service: Runtime, mail: dict[str, Any], after: dict[str, Any] | None,
                   undo_id: str) -> dict[str, Any]:
    settings = service.settings
    spec = service.registry.find(EXECUTOR)
    if spec is None:
        raise UndoError("ERR_MAIL_EXECUTOR_UNAVAILABLE", executor=EXECUTOR)
    try:
        unchanged = code_hash(spec.folder) == service.registry.signed[EXECUTOR].code_sha256
    except (OSError, MetnosError, KeyError):
        unchanged = False
    if not unchanged:
        raise UndoError("ERR_EXECUTOR_CODE_CHANGED", name=EXECUTOR)
    try:
        account = load_account(settings)
    except MetnosError as exc:
        raise UndoError(exc.key) from None
    request = SandboxRequest(
        exec_dir=spec.folder, entry=spec.manifest.entry, profile=spec.manifest.sandbox,
        workspace=settings.workspace, args=restore_args(mail, after), action_id=undo_id,
        max_output_bytes=settings.sandbox.max_output_bytes,
        max_processes=settings.sandbox.max_processes, account=account.envelope())
    result = await run_sandboxed(request)
    if not result.ok or result.result is None:
        raise UndoError(result.error_key or "ERR_UNDO_FAILED", **result.error_vars)
    return result.result


def _items(mail: dict[str, Any], result: dict[str, Any]) -> list[UndoItem]:
    missing = set(result.get("missing") or [])
    items = []
    for message in mail["messages"]:
        name = f"{mail['to_folder']} → {mail['folder']} {message['message_id'] or message['uid']}"
        if (message["message_id"] or str(message["uid"])) in missing:
            items.append(UndoItem(name, "failed", key="ERR_MAIL_MESSAGE_GONE",
                                  vars={"folder": mail["to_folder"]}))
        else:
            items.append(UndoItem(name, "moved_back", source=mail["to_folder"]))
    return items
