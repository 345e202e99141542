"""Stage 6: the candidate's own tests, run inside the real sandbox with its own profile.

Each case gets a fresh workspace holding its fixture files, the candidate folder (not in the
registry) runs through `metnos.sandbox.run_sandboxed` like any executor, and its result must
carry every expected field with the expected value. The report says where they ran.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
from pathlib import Path
from typing import Any

from metnos.executors.manifest import Manifest
from metnos.sandbox import SandboxRequest, run_sandboxed
from metnos.synt.checks import MAX_FIXTURE_BYTES


async def run_cases(folder: Path, manifest: Manifest,
                    cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The test report: `{"sandbox": "bwrap", "passed", "failed", "cases": [...]}`."""
    outcomes = [await _run_one(folder, manifest, index, case)
                for index, case in enumerate(cases)]
    passed = sum(1 for o in outcomes if o["ok"])
    return {"sandbox": "bwrap", "profile": manifest.sandbox.model_dump(mode="json"),
            "passed": passed, "failed": len(outcomes) - passed, "cases": outcomes}


async def _run_one(folder: Path, manifest: Manifest, index: int,
                   case: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="metnos-synt-trial-") as tmp:
        workspace = Path(tmp)
        problem = _write_fixtures(workspace, case.get("files") or {})
        if problem is not None:
            return {"case": index, "ok": False, "problem": problem}
        result = await run_sandboxed(SandboxRequest(
            exec_dir=folder, entry=manifest.entry, profile=manifest.sandbox,
            workspace=workspace, args=dict(case["args"]), action_id=f"synt-trial-{index}"))
    if not result.ok:
        return {"case": index, "ok": False, "error_key": result.error_key,
                "error_vars": result.error_vars, "stderr": result.stderr_tail[-500:],
                "duration_s": round(result.duration_s, 3)}
    got = result.result or {}
    wrong = {k: {"expected": v, "got": got.get(k)} for k, v in case["expect"].items()
             if got.get(k) != v}
    return {"case": index, "ok": not wrong, "wrong": wrong,
            "duration_s": round(result.duration_s, 3)}


def _write_fixtures(workspace: Path, files: dict[str, Any]) -> str | None:
    for rel, content in files.items():
        parts = rel.replace("\\", "/").split("/")
        if rel.startswith(("/", "~")) or ".." in parts or any(p.startswith(".") for p in parts):
            return f"fixture path {rel!r} is not workspace-relative"
        try:
            data = (base64.b64decode(content["base64"], validate=True)
                    if isinstance(content, dict) else str(content).encode())
        except (KeyError, binascii.Error, TypeError):
            return f"fixture {rel!r} is neither text nor {{\"base64\": ...}}"
        if len(data) > MAX_FIXTURE_BYTES:
            return f"fixture {rel!r} is larger than {MAX_FIXTURE_BYTES} bytes"
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return None
