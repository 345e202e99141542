"""The before-record of a mail move (Law 1: no undo record, no action), kept by the host.

The host never speaks IMAP: what a mailbox held before a move comes from a read-only
"snapshot" run of the same sandboxed executor (`move_messages`, mode set by the host), right
before the move. The host checks that answer, signs it with the instance's audit key and
publishes it under `state/before/<action_id>/manifest.json` in the layout of the file
records (`metnos.ground.reversibility`: version, action id, executor, date, `paths` empty, plus a
`mail` block: the account without its password, the folders, the source UIDVALIDITY and per
message its UID, flags and Message-ID). Only then does the move run, told the UIDVALIDITY it
must still find (so the UIDs name the same messages). Its COPYUID mapping (source UID → new
UID) is signed into `after.json` beside it; without it, the undo finds the messages by
Message-ID. A record that cannot be made means the messages are not moved.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import errno
import json
import logging
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from metnos.ground import durable, keys
from metnos.ground.errors import MetnosError
from metnos.ground.reversibility import MANIFEST_VERSION, PARTIAL_PREFIX, canonical, valid_action_id
from metnos.ground.settings import Settings
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, run_sandboxed
from metnos.turns.runtime import RecordRefused

log = logging.getLogger(__name__)

AFTER_FILE = "after.json"
RECORD_KIND = "imap_move"
_FLAG = re.compile(r"^\\?[A-Za-z0-9$_.\-]{1,64}$")
MAX_ID_CHARS = 300


class SnapshotFailed(RecordRefused):
    """The read-only snapshot run failed (server down, wrong password, unknown UIDs...):
    its own key, so the owner reads why; nothing was moved."""


def before_move(state_dir: Path, request: SandboxRequest, executor: str,
                key: Ed25519PrivateKey) -> tuple[dict[str, Any], SandboxRequest]:
    """The step runner's Law 1 for a mailbox (blocking: called in its worker thread, where
    the snapshot run gets an event loop of its own): snapshot, check, sign, publish."""
    snapshot = asyncio.run(take_snapshot(request))
    return record_before(state_dir, request, executor, snapshot, key)


def after_move(settings: Settings, action_id: str, result: SandboxResult) -> None:
    """Sign the move's mapping beside the record, when the move went through; a failure is
    logged (the undo then finds the messages by Message-ID), never raised."""
    if not result.ok or result.result is None:
        return
    try:
        record_after(settings.state_dir, action_id, result.result,
                     keys.load_private_key(settings.keys_dir, "audit"))
    except (OSError, ValueError, MetnosError) as exc:
        log.warning("mail.after_record_failed action_id=%s: %s", action_id, type(exc).__name__)


async def take_snapshot(request: SandboxRequest) -> SandboxResult:
    """The sandboxed read of what a move is about to change (flags, Message-IDs)."""
    return await run_sandboxed(dataclasses.replace(
        request, args={**request.args, "mode": "snapshot"}))


def record_before(state_dir: Path, request: SandboxRequest, executor: str,
                  snapshot: SandboxResult | None,
                  key: Ed25519PrivateKey) -> tuple[dict[str, Any], SandboxRequest]:
    """Check the snapshot, sign and publish the record; returns it with the move's request
    (told the recorded UIDVALIDITY). Raises SnapshotFailed, ValueError or OSError."""
    if snapshot is None or not snapshot.ok or snapshot.result is None:
        key_name = snapshot.error_key if snapshot is not None else None
        raise SnapshotFailed(key_name or "ERR_SANDBOX_FAILED",
                             **(snapshot.error_vars if snapshot is not None else {}))
    mail = checked_snapshot(snapshot.result, request.args)
    account = request.account or {}
    mail["account"] = {k: account.get(k) for k in ("host", "port", "username")}
    action_id = request.action_id
    manifest = {"version": MANIFEST_VERSION, "action_id": action_id, "executor": executor,
                "created_at": datetime.now(UTC).isoformat(), "copies": False,
                "copied_all": False, "undoes": None, "paths": [], "mail": mail}
    signed = sign(manifest, key)
    publish(state_dir, action_id, signed)
    move = dataclasses.replace(request, args={**request.args, "mode": "move",
                                              "uidvalidity": mail["uidvalidity"]})
    return signed, move


def checked_snapshot(result: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """The snapshot's answer checked on this side of the sandbox: the folders and UIDs asked
    for, flags that are flags, Message-IDs that are short strings. Raises ValueError."""
    uids = list(args["uids"])
    messages = result.get("messages")
    if (result.get("folder") != args["folder"] or result.get("to_folder") != args["to_folder"]
            or not isinstance(messages, list)
            or [m.get("uid") for m in messages if isinstance(m, dict)] != uids):
        raise ValueError("the snapshot does not describe the messages asked for")
    validity = result.get("uidvalidity")
    if isinstance(validity, bool) or not isinstance(validity, int) or validity <= 0:
        raise ValueError("the snapshot has no UIDVALIDITY")
    out = []
    for item in messages:
        flags, mid = item.get("flags"), item.get("message_id")
        if not isinstance(flags, list) or not all(
                isinstance(f, str) and _FLAG.match(f) for f in flags):
            raise ValueError("bad flags in the snapshot")
        if not isinstance(mid, str) or len(mid) > MAX_ID_CHARS:
            raise ValueError("bad Message-ID in the snapshot")
        out.append({"uid": item["uid"], "flags": sorted(flags), "message_id": mid})
    return {"kind": RECORD_KIND, "folder": args["folder"], "to_folder": args["to_folder"],
            "uidvalidity": validity, "messages": out}


def record_after(state_dir: Path, action_id: str, result: dict[str, Any],
                 key: Ed25519PrivateKey) -> None:
    """Sign the move's mapping (source UID → new UID) beside the record. Raises ValueError
    or OSError (the caller logs it: the undo then finds the messages by Message-ID)."""
    mapping = result.get("mapping")
    validity = result.get("to_uidvalidity")
    if not isinstance(mapping, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(n, int) and
                                                        not isinstance(n, bool) for n in p)
            for p in mapping) or not isinstance(validity, int):
        raise ValueError("the move gave no usable mapping")
    after = {"action_id": action_id, "to_uidvalidity": validity, "mapping": mapping}
    folder = state_dir / "before" / action_id
    durable.write_atomic(folder / AFTER_FILE, json.dumps(sign(after, key)).encode("ascii"),
                         replace=False)


def sign(document: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    return {"manifest": document,
            "signature": base64.b64encode(key.sign(canonical(document))).decode("ascii")}


def verified(path: Path, public_key: Ed25519PublicKey) -> dict[str, Any] | None:
    """The signed document at `path`, or None (missing, tampered, unsigned)."""
    try:
        doc = json.loads(path.read_bytes())
        public_key.verify(base64.b64decode(doc["signature"], validate=True),
                          canonical(doc["manifest"]))
    except (OSError, ValueError, KeyError, TypeError, InvalidSignature):
        return None
    manifest = doc["manifest"]
    return manifest if isinstance(manifest, dict) else None


def publish(state_dir: Path, action_id: str, signed: dict[str, Any]) -> None:
    """Write the record in a partial folder, then give it its name in one rename (never over
    another record), both durably: whole and signed, or absent."""
    if not valid_action_id(action_id):
        raise ValueError(f"invalid action id: {action_id!r}")
    before = state_dir / "before"
    durable.make_dir(before)
    final, partial = before / action_id, before / f"{PARTIAL_PREFIX}{action_id}"
    if os.path.lexists(final):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), action_id)
    partial.mkdir(mode=0o700)
    try:
        durable.write_atomic(partial / "manifest.json",
                             json.dumps(signed, indent=1).encode("ascii"))
        if os.path.lexists(final):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), action_id)
        os.rename(partial, final)
        durable.fsync_dir(before)
    except BaseException:
        for name in os.listdir(partial) if partial.exists() else []:
            (partial / name).unlink()
        if partial.exists():
            partial.rmdir()
        raise


def is_mail_record(state_dir: Path, action_id: str) -> bool:
    """Whether `action_id`'s record is a mail move (read unverified: the undo verifies)."""
    if not valid_action_id(action_id):
        return False
    try:
        doc = json.loads((state_dir / "before" / action_id / "manifest.json").read_bytes())
        return bool(doc["manifest"]["mail"]["kind"] == RECORD_KIND)
    except (OSError, ValueError, KeyError, TypeError):
        return False
