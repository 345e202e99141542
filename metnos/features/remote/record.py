"""The before-record of a remote batch (seed §4, "the before/after pattern"), kept on the server.

The laptop works out the batch and, for each file, (original path, new path, size, SHA-256)
before anything moves; the server checks that reply as untrusted data (`checked_items`), then
signs and dates it with the instance's audit key and stores it durably under
`state/before/<action_id>/remote.json` (`store`), which no sandbox and no laptop reaches. The
laptop applies a batch only when it carries this signature (`verify`, with the server's public
key it was given at enrolment): no record kept on the server, no rename on the laptop (Law 1).
"""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from metnos.ground import durable
from metnos.ground.errors import MetnosError
from metnos.ground.fdpaths import split_rel
from metnos.ground.reversibility import canonical, valid_action_id, write_record

RECORD_FILE = "remote.json"
RECORD_VERSION = 1
MAX_ITEMS = 10_000
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


class RecordError(MetnosError, ValueError):
    key = "ERR_REMOTE_RECORD_INVALID"


def checked_items(items: Any, folder: str) -> list[dict[str, Any]]:
    """The laptop's batch, checked: every (src, dst) a plain name directly inside `folder`,
    no name twice, sizes and hashes well formed. Raises RecordError."""
    if not isinstance(items, list) or len(items) > MAX_ITEMS:
        raise RecordError(detail="items")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, dict) or set(item) != {"src", "dst", "size", "sha256"}:
            raise RecordError(detail="item")
        src, dst, size, sha = item["src"], item["dst"], item["size"], item["sha256"]
        for path in (src, dst):
            if not isinstance(path, str) or not _inside(path, folder) or path in seen:
                raise RecordError(detail="path")
            seen.add(path)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise RecordError(detail="size")
        if not isinstance(sha, str) or not _SHA_RE.fullmatch(sha):
            raise RecordError(detail="sha256")
        out.append({"src": src, "dst": dst, "size": size, "sha256": sha})
    return out


def _inside(path: str, folder: str) -> bool:
    try:
        parts, base = split_rel(path), split_rel(folder)
    except ValueError:
        return False
    return ("/".join(parts) == path and len(parts) == len(base) + 1 and parts[:-1] == base
            and not parts[-1].startswith("."))


def sign(manifest: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    return {"manifest": manifest,
            "signature": base64.b64encode(key.sign(canonical(manifest))).decode("ascii")}


def new_manifest(*, action_id: str, executor: str, place: str, pool: str, folder: str,
                 args: dict[str, Any], items: list[dict[str, Any]],
                 undoes: str | None = None) -> dict[str, Any]:
    return {"version": RECORD_VERSION, "kind": "remote_batch", "action_id": action_id,
            "executor": executor, "place": place, "pool": pool, "folder": folder, "args": args,
            "created_at": datetime.now(UTC).isoformat(), "undoes": undoes, "items": items}


def store(state_dir: Path, signed: dict[str, Any]) -> None:
    """Write the signed record durably under its action id (never over another record)."""
    action_id = signed["manifest"]["action_id"]
    if not valid_action_id(action_id):
        raise RecordError(detail="action_id")
    write_record(state_dir, action_id,
                 lambda partial: durable.write_atomic(partial / RECORD_FILE, _json(signed)))


def load(state_dir: Path, action_id: str) -> Any:
    return json.loads((state_dir / "before" / action_id / RECORD_FILE).read_bytes())


def _json(data: dict[str, Any]) -> bytes:
    return json.dumps(data, indent=1, ensure_ascii=True).encode("ascii")


def verify(signed: Any, public_key: Ed25519PublicKey, action_id: str) -> dict[str, Any]:
    """The record's manifest if its signature holds and it is `action_id`'s; else RecordError."""
    try:
        manifest = signed["manifest"]
        public_key.verify(base64.b64decode(signed["signature"], validate=True),
                          canonical(manifest))
        if manifest["version"] != RECORD_VERSION or manifest["action_id"] != action_id:
            raise ValueError("another action's record")
        checked_items(manifest["items"], manifest["folder"])
    except (KeyError, TypeError, ValueError, InvalidSignature) as exc:
        raise RecordError(detail="signature") from exc
    return dict(manifest)


def is_remote(state_dir: Path, action_id: str) -> bool:
    """Whether `action_id` is a remote action with its record kept here."""
    return valid_action_id(action_id) and (
        state_dir / "before" / action_id / RECORD_FILE).is_file()


def folder_of(path: str) -> str:
    return str(PurePosixPath(path).parent)
