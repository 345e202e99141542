"""Each owner-signed executor's high-water mark: the newest signature the owner made of it.

A signature stays valid for ever, so a folder and its signature taken from a backup, or left
by an older install, would verify again when put back. The registry therefore remembers, per
executor, what the owner's last signing vouched for (version, signing time, code and manifest
hashes) and refuses a copy that is older (SPEC §5: "a rolled-back executor is refused"):

- a lower version;
- the same version signed earlier with other bytes (a replay of an older signature: the
  version string alone does not say which build it is).

A newer signature (a higher version, or the same version signed later) is admitted. Signing an
older version than the mark is refused unless the owner asks for it (`downgrade=True`, the
CLI's `--downgrade`), which the caller audits.

The marks live in `METNOS_HOME/keys/executors.versions.json` (mode 0600), beside the private
key that makes the signatures: a forbidden path for every tool and never bound into a sandbox.
Whoever can lower a mark there can already sign any code. The built-ins are pinned by
`BUILTIN.lock` instead (`metnos.mechanisms.executors.builtin`).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metnos.ground import durable
from metnos.ground.errors import AuditError, SignatureError
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.executors.signing import SignedFacts

if TYPE_CHECKING:
    from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

MARKS_FILE = "executors.versions.json"
_FORMAT = 1
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.+-]*)?$")


@dataclass(frozen=True)
class Mark:
    """What the owner's newest signature of one executor vouched for."""

    version: str
    signed_at: int
    code_sha256: str
    manifest_sha256: str

    @classmethod
    def of(cls, facts: SignedFacts) -> Mark:
        return cls(facts.version, facts.signed_at, facts.code_sha256, facts.manifest_sha256)


def marks_path(keys_dir: Path) -> Path:
    return keys_dir / MARKS_FILE


def read_marks(path: Path) -> dict[str, Mark]:
    """The marks by executor name; none when the file does not exist yet.

    Raises SignatureError (ERR_EXECUTOR_MARKS_UNREADABLE) for a file that exists but cannot be
    read: the registry then admits no owner executor rather than forget every mark."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SignatureError("ERR_EXECUTOR_MARKS_UNREADABLE", path=str(path)) from exc
    try:
        return {str(name): Mark(str(m["version"]), int(m["signed_at"]), str(m["code_sha256"]),
                                str(m["manifest_sha256"]))
                for name, m in data["executors"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SignatureError("ERR_EXECUTOR_MARKS_UNREADABLE", path=str(path)) from exc


def rolled_back(facts: SignedFacts, mark: Mark) -> bool:
    """Whether `facts` (a valid signature) is older than the owner's newest one, `mark`."""
    order = compare_versions(facts.version, mark.version)
    if order != 0:
        return order < 0
    if facts.signed_at != mark.signed_at:
        return facts.signed_at < mark.signed_at
    return (facts.code_sha256, facts.manifest_sha256) != (mark.code_sha256,
                                                          mark.manifest_sha256)


def check_signing(path: Path, name: str, version: str, *, downgrade: bool) -> Mark | None:
    """Before signing `name` at `version`: the current mark, or SignatureError
    (ERR_EXECUTOR_OLDER_THAN_SIGNED) when `version` is older and this is no downgrade."""
    mark = read_marks(path).get(name)
    if mark is not None and compare_versions(version, mark.version) < 0 and not downgrade:
        raise SignatureError("ERR_EXECUTOR_OLDER_THAN_SIGNED", name=name, version=version,
                             signed_version=mark.version)
    return mark


def record(path: Path, facts: SignedFacts) -> None:
    """Make `facts` (a signature just written by the owner) the mark of its executor."""
    marks = read_marks(path)
    marks[facts.name] = Mark.of(facts)
    body = {"format": _FORMAT, "executors": {n: asdict(m) for n, m in sorted(marks.items())}}
    durable.make_dir(path.parent)
    durable.write_atomic(path, (json.dumps(body, indent=1) + "\n").encode(), mode=0o600)


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as `a` is older than, as old as or newer than `b` (SemVer precedence: a
    pre-release is older than its release, build metadata does not count)."""
    ka, kb = _key(a), _key(b)
    return (ka > kb) - (ka < kb)


def _key(version: str) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
    found = _VERSION.match(version)
    if found is None:  # the manifest's own pattern admits nothing else
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=version)
    major, minor, patch, pre = found.groups()
    if pre is None:
        return int(major), int(minor), int(patch), 1, ()
    parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))
    return int(major), int(minor), int(patch), 0, parts


def audit_line(settings: Settings, action: str, decision: str, **fields: Any) -> None:
    """One audit line about the owner's executors (a rolled-back copy refused, a signing
    refused, a downgrade)."""
    try:
        with open_audit_log(settings) as audit:
            audit.append(sender="owner", channel="executors", action=action,
                         decision=decision, **fields)
    except (AuditError, OSError) as exc:  # the refusal holds; its line is what is missing
        log.error("executors.audit_failed action=%s: %s", action, exc)
