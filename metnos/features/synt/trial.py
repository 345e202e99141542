"""Stage 6: the candidate's own tests, run inside the real sandbox with its own profile, less
the network.

Each case gets a fresh workspace holding its fixture files, the candidate folder (not in the
registry) runs through `metnos.mechanisms.sandbox.run_sandboxed` like any executor, and its result
must carry every expected field with the expected value. The report says where they ran.

Nobody has signed this code yet and the model wrote its spec, profile and tests: the trial
runs with NO network at all (an empty network namespace, no resolver files, no egress socket)
whatever the profile asks (issue 25). A candidate that needs the network for its tests fails
them here; the owner sees the network it asks for in the candidate's record before signing.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
from pathlib import Path
from typing import Any

from metnos.features.synt.checks import MAX_FIXTURE_BYTES
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, run_sandboxed


def trial_profile(manifest: Manifest) -> SandboxProfile:
    """The profile a trial runs with: the candidate's own, with no network and no egress."""
    return manifest.sandbox.model_copy(update={"network": False, "egress": None})


async def run_cases(folder: Path, manifest: Manifest,
                    cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The test report: `{"sandbox": "bwrap", "profile" (the one the cases ran with),
    "passed", "failed", "cases": [...]}`."""
    profile = trial_profile(manifest)
    outcomes = [await _run_one(folder, manifest.entry, profile, index, case)
                for index, case in enumerate(cases)]
    passed = sum(1 for o in outcomes if o["ok"])
    return {"sandbox": "bwrap", "profile": profile.model_dump(mode="json"),
            "passed": passed, "failed": len(outcomes) - passed, "cases": outcomes}


async def _run_one(folder: Path, entry: str, profile: SandboxProfile, index: int,
                   case: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="metnos-synt-trial-") as tmp:
        workspace = Path(tmp)
        problem = _write_fixtures(workspace, case.get("files") or {})
        if problem is not None:
            return {"case": index, "ok": False, "problem": problem}
        result = await run_sandboxed(SandboxRequest(
            exec_dir=folder, entry=entry, profile=profile,
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
