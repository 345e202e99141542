"""`metnos undo` on what a crash or a bad disk can leave: a record cut short, a record with no
manifest, no record, a copy gone. Each is a clear refusal in the user's language (exit 1, no
traceback), the file is left as it is, and the audit chain still verifies.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from metnos.ground import i18n, keys, reversibility
from tests.support.home import Home

METNOS = [sys.executable, "-m", "metnos.faces.cli.main"]


def undo(action_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*METNOS, "undo", action_id], capture_output=True, text=True,
                          timeout=120)


def test_undo_refuses_damaged_or_missing_records_cleanly(served: Home) -> None:
    settings = served.settings
    target = served.workspace / "notes.txt"
    target.write_text("before\n")
    before = settings.state_dir / "before"
    reversibility.record_before(settings.state_dir, "whole1", served.workspace, "fs_write",
                                ["notes.txt"], keys.load_private_key(settings.keys_dir, "audit"))
    target.write_text("after\n")
    shutil.copytree(before / "whole1", before / "torn1")
    manifest = before / "torn1" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
    shutil.copytree(before / "whole1", before / "bare1")
    (before / "bare1" / "manifest.json").unlink()
    shutil.rmtree(before / "whole1" / "blobs")  # whole and signed, but its copy is gone

    expected = {
        "torn1": i18n.get("ERR_UNDO_MANIFEST_INVALID", "en", action_id="torn1"),
        "bare1": i18n.get("ERR_UNDO_MANIFEST_INVALID", "en", action_id="bare1"),
        "nothing1": i18n.get("ERR_UNDO_NOT_FOUND", "en", action_id="nothing1"),
    }
    for action_id, message in expected.items():
        done = undo(action_id)
        out = done.stdout + done.stderr
        assert done.returncode == 1, out
        assert message in out and "Traceback" not in out, out
        assert target.read_text() == "after\n"  # a refusal changes nothing
    done = undo("whole1")  # it says what it could not do; what stood there is kept
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out, out
    assert i18n.get("ERR_UNDO_SOURCE_MISSING", "en", files="notes.txt") in out, out
    kept = [p for p in (served.workspace / ".trash").rglob("notes.txt")]
    assert [p.read_text() for p in kept] == ["after\n"], out
    verify = subprocess.run([*METNOS, "audit", "verify"], capture_output=True, text=True,
                            timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
