"""`metnos undo ACTION_ID` for a mail move: the messages go back, with their flags exactly.

The record (`metnos.mail.record`) is verified first (signature, action id, kind). The inverse
runs through the same sandboxed executor (`move_messages`, mode "restore", set by the host):
from the destination folder back to the source, each message found by its recorded new UID
(checked against its Message-ID) or else by Message-ID alone, then its flags set to exactly
the recorded ones. The account comes from `metnos mail add` as for any run; the executor's
code must still be what its signature vouches for. One audit line whatever happens, and a
marker so the same action is undone once (as `metnos.undo`).

Blocking (it waits for the sandbox on its own event loop): call it in a worker thread, as
`run_undo` is.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metnos import keys
from metnos.durable import write_atomic
from metnos.errors import MetnosError
from metnos.executors.signing import code_hash
from metnos.mail.account import load_account
from metnos.mail.record import AFTER_FILE, RECORD_KIND, is_mail_record, verified
from metnos.restore import UndoItem
from metnos.sandbox import SandboxRequest, run_sandboxed
from metnos.undo import LOCK_FILE, UNDONE_MARKER, UndoError, UndoReport, verify_before

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime

EXECUTOR = "move_messages"


def undo_mail(service: Runtime, action_id: str, *, sender: str,
              channel: str) -> UndoReport | None:
    """The undo of a mail move, or None when `action_id` is not one (another undo's turn).
    Raises UndoError (refused), after its audit line."""
    settings = service.settings
    if not is_mail_record(settings.state_dir, action_id):
        return None

    def audit_line(**fields: Any) -> None:
        service.audit.append(sender=sender, channel=channel, action="undo",
                             action_id=action_id, args={"action_id": action_id}, **fields)

    try:
        report = _undo(service, action_id)
    except UndoError as exc:
        audit_line(decision="deny", reason=exc.key, outcome="refused")
        raise
    except Exception:
        audit_line(decision="error", reason="ERR_INTERNAL_UNEXPECTED", outcome="failed")
        raise
    failed = [i.key for i in report.items if i.status == "failed"]
    audit_line(decision="allow", reason=failed[0] if failed else "ok", outcome=report.outcome)
    return report


def _undo(service: Runtime, action_id: str) -> UndoReport:
    settings = service.settings
    folder = settings.state_dir / "before" / action_id
    public = keys.load_public_key(settings.keys_dir, "audit")
    with _locked(folder):
        marker = folder / UNDONE_MARKER
        if marker.exists():
            done = json.loads(marker.read_text(encoding="utf-8"))
            raise UndoError("ERR_UNDO_ALREADY_DONE", action_id=action_id,
                            undo_id=done.get("undo_id", "?"))
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
            write_atomic(marker, json.dumps({"undo_id": undo_id,
                                             "at": datetime.now(UTC).isoformat()}).encode())
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


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One undo of an action at a time (as `metnos.undo`: the same lock file)."""
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
