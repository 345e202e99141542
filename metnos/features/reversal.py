"""How a change is kept undoable and undone (SPEC §5, Law 1: no undo record, no action).

Each executor's manifest chooses its `Reversal` (`metnos.turns.runtime.Reversal`, the turn's
side of the contract; `Manifest.reversal`): the runner asks it for
the signed before-record right before the run and tells it of the result after; every undo
surface (`metnos undo`, `POST /api/actions/{id}/undo`, Telegram's Undo button, "annulla"
said in a chat, the model's `undo_last`) goes through `metnos.turns.undo_run.run_undo`, which asks
the reversals in turn whose action it is.

- `files` (`Files`): the workspace paths it may write (`metnos.ground.reversibility`), undone by
  `metnos.mechanisms.undo`; every action has this record, so it answers last, for any action left.
- `effect` (`Effects`): what the host carried out from the result (a reminder, a scheduled
  task): the record names no path, and the undo is the effect's own (`hooks.undoers`,
  keyed by the manifest's `effect`).
- `mailbox` (`metnos.features.mail.undo.Mailbox`): the messages a mail move is about to move.
- `remote` (`metnos.features.remote.undo.Remote`): files on another machine, recorded on the pool's
  round trip (`metnos.features.remote.server`), undone by the same pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground import keys, reversibility
from metnos.mechanisms.sandbox import SandboxResult
from metnos.mechanisms.undo import UndoReport, undo

if TYPE_CHECKING:
    from metnos.turns.context import CheckedStep
    from metnos.turns.runtime import Hooks, Runtime

FILES, EFFECT, MAILBOX, REMOTE = "files", "effect", "mailbox", "remote"


class Files:
    """The workspace paths a step may write: hashes, and copies of their bytes unless its
    sandbox moves what it removes to the trash (fs_delete)."""

    def before(self, service: Runtime, checked: CheckedStep,
               key: Ed25519PrivateKey) -> dict[str, Any]:
        spec, request, settings = checked.spec, checked.request, service.settings
        assert spec is not None and request is not None
        written = [request.args[n] for n, acc in spec.manifest.path_inputs().items()
                   if acc == "write" and isinstance(request.args.get(n), str)]
        return reversibility.record_before(
            settings.state_dir, checked.action_id, settings.workspace, spec.name, written, key,
            copy=not spec.manifest.sandbox.trash)

    def after(self, service: Runtime, checked: CheckedStep, result: SandboxResult) -> None:
        return None

    def undo(self, service: Runtime, hooks: Hooks, action_id: str, *, sender: str,
             channel: str) -> UndoReport | None:
        settings = service.settings
        return undo(action_id, state_dir=settings.state_dir, workspace=settings.workspace,
                    public_key=keys.load_public_key(settings.keys_dir, "audit"),
                    private_key=keys.load_private_key(settings.keys_dir, "audit"),
                    audit=service.audit, sender=sender, channel=channel)


class Effects(Files):
    """What the host carried out from a step's result: its record names no path (the files'
    record all the same: the surfaces find the action by it), its undo is the effect's."""

    def undo(self, service: Runtime, hooks: Hooks, action_id: str, *, sender: str,
             channel: str) -> UndoReport | None:
        for undo_own in hooks.undoers.values():
            report = undo_own(action_id, sender, channel)
            if report is not None:
                return report
        return None
