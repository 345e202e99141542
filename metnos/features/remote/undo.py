"""`metnos undo` of a remote action: the inverse batch goes back to the same work pool.

The record kept on the server is verified first (signed by this instance's audit key, the
action's own); then one `undo` run on the pool: the laptop's worker moves back each file that
still has the recorded size and hash, and names the ones that changed (never moved). One
audit line on the server, whatever happens; a marker so the same action is undone once.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from metnos.features.remote import record
from metnos.features.remote.port import RemotePort
from metnos.features.remote.server import RemoteFailed, submit
from metnos.ground import keys
from metnos.ground.restore import UndoItem
from metnos.mechanisms.undo import (
    UndoError,
    UndoFailed,
    UndoReport,
    audit_undo,
    audited,
    mark_undone,
    refuse_undone,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from metnos.mechanisms.sandbox import SandboxResult
    from metnos.turns.context import CheckedStep
    from metnos.turns.runtime import Hooks, Runtime


class Remote:
    """The reversal of a step run on another machine (`metnos.features.reversal`): its record is
    made on the pool's round trip (`metnos.features.remote.server`), never by the local runner, and
    undone through `port` (None: this process has no way to the pools)."""

    def __init__(self, port: RemotePort | None) -> None:
        self.port = port

    def before(self, service: Runtime, checked: CheckedStep,
               key: Ed25519PrivateKey) -> dict[str, Any]:
        raise ValueError("a remote step is recorded on its pool's round trip")

    def after(self, service: Runtime, checked: CheckedStep, result: SandboxResult) -> None:
        return None

    def undo(self, service: Runtime, hooks: Hooks, action_id: str, *, sender: str,
             channel: str) -> UndoReport | None:
        """None when `action_id` is not a remote action; blocking (in a worker thread)."""
        if not record.is_remote(service.settings.state_dir, action_id):
            return None
        return audited(audit_undo(service.audit, action_id, sender, channel),
                       lambda: _undo(service, self.port, action_id))


def _undo(service: Runtime, port: RemotePort | None, action_id: str) -> UndoReport:
    if port is None:  # this process has no way to the pools
        raise UndoError("ERR_REMOTE_UNDO_UNAVAILABLE", action_id=action_id)
    return asyncio.run(undo_remote(service, port, action_id))


async def undo_remote(service: Runtime, port: RemotePort, action_id: str) -> UndoReport:
    settings = service.settings
    folder = settings.state_dir / "before" / action_id
    refuse_undone(folder, action_id)
    try:
        manifest = record.verify(record.load(settings.state_dir, action_id),
                                 keys.load_public_key(settings.keys_dir, "audit"), action_id)
    except (OSError, ValueError) as exc:
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
        vars = exc.vars if isinstance(exc, RemoteFailed) else {"place": place}
        raise UndoFailed(key, **{**vars, "action_id": action_id}) from exc
    undo_id = uuid.uuid4().hex
    outcome = "failed" if any(i.status == "failed" for i in items) else "done"
    if outcome == "done":
        mark_undone(folder, undo_id)
    return UndoReport(action_id, undo_id, manifest["executor"], outcome, items)
