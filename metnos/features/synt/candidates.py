"""Candidate executors: the folders a generation wrote, waiting for the owner.

A candidate is `METNOS_HOME/executors/<name>/` holding `manifest.toml`, `main.py` and
`CANDIDATE.json` (the need, each stage's result, the sandbox test report, the cost spent). The
registry refuses it as "a candidate awaiting the owner's signature" until `sign`, which moves
`CANDIDATE.json` to `METNOS_HOME/synt/signed/<name>.json` (so the signed folder holds only the
executor) and signs the folder with the instance's `executors` key. `reject` moves the folder
to `METNOS_HOME/synt/rejected/<name>-<time>/` and closes its proto-mnest. Signing a
candidate that stands in for others (a promotion's chain, a fusion's pair) makes the H4
"fuse" move on them, whose undo is the defuse. A generation that
failed (a stage, the tests, the review) is kept under `METNOS_HOME/synt/failed/` and never
proposed.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from metnos.features.mnestoma import moves
from metnos.features.mnestoma.models import UseClock
from metnos.features.mnestoma.moves import RowChange
from metnos.features.synt import _common
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import ManifestError, MetnosError, SignatureError
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.executors.owner import sign_as_owner
from metnos.mechanisms.executors.registry import CANDIDATE_FILE
from metnos.mechanisms.executors.signing import SignedFacts


class CandidateError(MetnosError, LookupError):
    """No candidate of that name (key ERR_SYNT_CANDIDATE_NOT_FOUND)."""

    key = "ERR_SYNT_CANDIDATE_NOT_FOUND"


def synt_dir(settings: Settings) -> Path:
    return settings.home / "synt"


def home_executors(settings: Settings) -> Path:
    return settings.home / "executors"


def is_candidate(folder: Path) -> bool:
    return (folder / CANDIDATE_FILE).is_file()


def write_record(folder: Path, record: dict[str, Any]) -> None:
    text = json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    (folder / CANDIDATE_FILE).write_text(text + "\n", encoding="utf-8")


def read_record(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / CANDIDATE_FILE).read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def list_candidates(settings: Settings) -> list[dict[str, Any]]:
    """The candidates waiting for the owner: name, capability, tests, cost, created."""
    base = home_executors(settings)
    found = []
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        if folder.is_dir() and not folder.is_symlink() and is_candidate(folder):
            record = read_record(folder)
            tests = record.get("tests", {})
            found.append({"name": folder.name, "capability": record.get("need", {}).get(
                "capability", ""), "passed": tests.get("passed"), "failed": tests.get("failed"),
                "cost_usd": record.get("cost_usd"), "created_at": record.get("created_at"),
                "kind": record.get("kind", "generate")})
    return found


def show(settings: Settings, name: str) -> dict[str, Any]:
    """One candidate whole: its record, manifest, code (as text)."""
    folder = _candidate(settings, name)
    record = read_record(folder)
    manifest = (folder / MANIFEST_FILE).read_text(encoding="utf-8")
    entry = parse_manifest(folder / MANIFEST_FILE).entry
    return {"name": name, "record": record, "manifest": manifest,
            "profile": record.get("profile"), "code": (folder / entry).read_text("utf-8"),
            "tests": record.get("tests"), "cost_usd": record.get("cost_usd")}


def sign(settings: Settings, engine: Engine, name: str) -> SignedFacts:
    """Sign the candidate `name`: it becomes an ordinary executor (reload the registry)."""
    folder = _candidate(settings, name)
    record = read_record(folder)
    kept = synt_dir(settings) / "signed" / f"{name}.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder / CANDIDATE_FILE), kept)
    try:  # the owner's signature, and the executor's high-water mark (no silent downgrade)
        facts = sign_as_owner(folder, settings)
    except (ManifestError, SignatureError):
        shutil.move(str(kept), folder / CANDIDATE_FILE)  # still a candidate
        raise
    if proto := record.get("need", {}).get("proto"):
        in_session(engine, _common.set_status, str(proto), "closed")
    _common.audit(settings, "synt.sign", outcome="signed", reason=name,
                  args={"name": name, "code_sha256": facts.code_sha256})
    if fuses := [str(n) for n in record.get("fuses", [])]:
        _fuse(settings, engine, name, fuses)
    return facts


def _fuse(settings: Settings, engine: Engine, name: str, originals: list[str]) -> None:
    """The H4 "fuse" move: the executors `name` stands in for go to quarantine (still in
    the pool, left out of routing); `metnos evolution undo` (defuse) gives them back."""
    with db_session(engine) as db:
        clock = db.get(UseClock, 1)
        now = clock.clock if clock else 0
    motivation = i18n.get("SYNT_FUSE_MOTIVATION", settings.lang, name=name,
                          originals=", ".join(originals))
    changes = [RowChange("executor_use", (orig,), {"state": "quarantined", "state_clock": now})
               for orig in originals]
    audit = open_audit_log(settings)
    try:
        moves.apply(engine, "fuse", name, motivation, changes,
                    moves.Actor(audit, sender=_common.OWNER, channel=_common.CHANNEL))
    finally:
        audit.close()


def reject(settings: Settings, engine: Engine, name: str) -> Path:
    """Move the candidate out of the executors folder; its proto-mnest is closed."""
    folder = _candidate(settings, name)
    record = read_record(folder)
    target = synt_dir(settings) / "rejected" / f"{name}-{int(time.time())}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), target)
    if proto := record.get("need", {}).get("proto"):
        in_session(engine, _common.set_status, str(proto), "closed")
    _common.audit(settings, "synt.reject", decision="deny", outcome="rejected", reason=name)
    return target


def _candidate(settings: Settings, name: str) -> Path:
    folder = home_executors(settings) / name
    if "/" in name or name.startswith(".") or folder.is_symlink() or not is_candidate(folder):
        raise CandidateError(name=name)
    return folder
