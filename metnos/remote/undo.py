"""`metnos undo` of a remote action: the inverse batch goes back to the same work pool.

The record kept on the server is verified first (signed by this instance's audit key, the
action's own); then one `undo` run on the pool: the laptop's worker moves back each file that
still has the recorded size and hash, and names the ones that changed (never moved). One
audit line on the server, whatever happens; a marker so the same action is undone once.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from metnos import keys
from metnos.remote import record
from metnos.remote.port import RemotePort
from metnos.remote.server import RemoteFailed, submit
from metnos.restore import UndoItem
from metnos.undo import UNDONE_MARKER, UndoError, UndoReport, mark_undone

if TYPE_CHECKING:
    from metnos.turns.service import TurnService

RemoteUndo = Callable[[str, str, str], UndoReport]  # (action id, sender, channel)


def undoer(service: TurnService) -> RemoteUndo | None:
    """What `metnos.undo.undo` calls for a remote action (blocking; in a worker thread), or
    None when this process has no way to the pools."""
    port = service.hooks.remote
    if port is None:
        return None

    def run(action_id: str, sender: str, channel: str) -> UndoReport:
        return asyncio.run(undo_remote(service, port, action_id, sender=sender,
                                       channel=channel))
    return run


async def undo_remote(service: TurnService, port: RemotePort, action_id: str, *,
                      sender: str, channel: str) -> UndoReport:
    settings = service.settings

    def audit(**fields: Any) -> None:
        service.audit.append(sender=sender, channel=channel, action="undo", action_id=action_id,
                             args={"action_id": action_id}, **fields)

    folder = settings.state_dir / "before" / action_id
    if (folder / UNDONE_MARKER).exists():
        done = json.loads((folder / UNDONE_MARKER).read_text(encoding="utf-8"))
        audit(decision="deny", reason="ERR_UNDO_ALREADY_DONE", outcome="refused")
        raise UndoError("ERR_UNDO_ALREADY_DONE", action_id=action_id,
                        undo_id=done.get("undo_id", "?"))
    try:
        manifest = record.verify(record.load(settings.state_dir, action_id),
                                 keys.load_public_key(settings.keys_dir, "audit"), action_id)
    except (OSError, ValueError) as exc:
        audit(decision="deny", reason="ERR_UNDO_MANIFEST_INVALID", outcome="refused")
        raise UndoError("ERR_UNDO_MANIFEST_INVALID", action_id=action_id) from exc
    place, pool = manifest["place"], manifest["pool"]
    request = {"phase": "undo", "executor": manifest["executor"], "place": place,
               "action_id": action_id, "args": manifest["args"],
               "record": record.load(settings.state_dir, action_id)}
    try:
        if not await port.online(pool):
            raise RemoteFailed("ERR_REMOTE_OFFLINE", place=place, pool=pool)
        reply = await submit(port, pool, place, request, settings.remote.step_deadline_s)
        result = reply["result"]
        items = [UndoItem(str(p), "moved_back", source="remote") for p in result["restored"]]
        items += [UndoItem(str(p), "unchanged") for p in result["kept"]]
        items += [UndoItem(str(p), "failed", key="ERR_REMOTE_UNDO_CHANGED",
                           vars={"path": str(p), "place": place}) for p in result["failed"]]
    except (RemoteFailed, KeyError, TypeError) as exc:
        key = exc.key if isinstance(exc, RemoteFailed) else "ERR_REMOTE_REPLY_INVALID"
        audit(decision="error", reason=key, outcome="failed")
        vars = exc.vars if isinstance(exc, RemoteFailed) else {"place": place}
        raise UndoError(key, **{**vars, "action_id": action_id}) from exc
    undo_id = uuid.uuid4().hex
    outcome = "failed" if any(i.status == "failed" for i in items) else "done"
    if outcome == "done":
        mark_undone(folder, undo_id)
    audit(decision="allow", reason="ok" if outcome == "done" else "ERR_REMOTE_UNDO_CHANGED",
          outcome=outcome)
    return UndoReport(action_id, undo_id, manifest["executor"], outcome, items)
