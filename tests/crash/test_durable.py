"""Durable state writes: what reaches the disk, in which order, and what a crash leaves.

The order of the system calls is read from the real process with strace (fsync of the bytes
before the rename that publishes them, fsync of the folder after it): a test that the data is
"there" would pass without any fsync at all.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground import durable, keys, reversibility

STRACE_CALLS = "fsync,fdatasync,rename,renameat,renameat2,link,linkat,mkdir,mkdirat"


def strace(tmp_path: Path, code: str) -> list[str]:
    """Run `code` in a fresh interpreter under strace; the file-system calls it made, with
    paths for descriptors (`-y`)."""
    if shutil.which("strace") is None:
        assert not os.environ.get("CI"), "strace is missing in CI"
        pytest.skip("strace is not installed")
    out = tmp_path / "strace.txt"
    subprocess.run(["strace", "-f", "-y", "-qq", "-e", f"trace={STRACE_CALLS}", "-o", str(out),
                    sys.executable, "-c", code], check=True, timeout=120, cwd=tmp_path)
    return [ln for ln in out.read_text().splitlines() if str(tmp_path) in ln]


def first(calls: list[str], pattern: str) -> int:
    found = [i for i, ln in enumerate(calls) if re.search(pattern, ln)]
    assert found, f"no call matches {pattern!r} in:\n" + "\n".join(calls)
    return found[0]


def test_write_atomic_fsyncs_the_bytes_then_renames_then_fsyncs_the_folder(
        tmp_path: Path) -> None:
    calls = strace(tmp_path, "from pathlib import Path\nfrom metnos.ground import durable\n"
                             f"durable.write_atomic(Path({str(tmp_path)!r}) / 'state.json', b'x')")
    data = first(calls, r"^\d+ +fsync\(\d+<.*/\.state\.json\.\w+\.tmp>")
    rename = first(calls, r"rename.*\.state\.json\.\w+\.tmp.*state\.json")
    folder = [i for i, ln in enumerate(calls) if re.search(rf"fsync\(\d+<{tmp_path}>\)", ln)]
    assert data < rename and folder and folder[-1] > rename, calls


def test_a_before_record_is_on_disk_and_named_only_when_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"old bytes")
    (tmp_path / "key.pem").write_bytes(Ed25519PrivateKey.generate().private_bytes_raw())
    code = f"""
from pathlib import Path
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from metnos.ground import reversibility
root = Path({str(tmp_path)!r})
key = Ed25519PrivateKey.from_private_bytes((root / "key.pem").read_bytes())
reversibility.record_before(root / "state", "act1", root / "ws", "fs_write", ["a.txt"], key)
"""
    calls = strace(tmp_path, code)
    blob = first(calls, r"fsync\(\d+<.*/\.partial-act1/blobs/\.blob-\d+\.tmp>")
    blob_named = first(calls, r"rename.*\.blob-\d+\.tmp.*/blobs/[0-9a-f]{64}")
    blobs_dir = first(calls, r"fsync\(\d+<.*/\.partial-act1/blobs>")
    manifest = first(calls, r"fsync\(\d+<.*/\.partial-act1/\.manifest\.json\.\w+\.tmp>")
    record_dir = first(calls, r"fsync\(\d+<.*/\.partial-act1>")
    published = first(calls, r"renameat2?\(.*\.partial-act1.*act1")
    before_dir = [i for i, ln in enumerate(calls)
                  if re.search(rf"fsync\(\d+<{tmp_path}/state/before>\)", ln)]
    assert blob < blob_named < blobs_dir < manifest < record_dir < published, calls
    assert before_dir and before_dir[-1] > published, calls
    assert sorted(os.listdir(tmp_path / "state" / "before")) == ["act1"]


def test_a_record_cut_short_leaves_nothing_named_and_is_swept(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "a.txt").write_text("old")
    with pytest.raises(FileNotFoundError):  # the workspace vanished half-way: no record
        reversibility.record_before(state, "act1", tmp_path / "gone", "fs_write", ["a.txt"],
                                    Ed25519PrivateKey.generate())
    assert os.listdir(state / "before") == []
    # what a kill -9 in the middle leaves: a partial folder, never a record under its id
    partial = state / "before" / f"{reversibility.PARTIAL_PREFIX}act2"
    (partial / "blobs").mkdir(parents=True)
    (partial / "blobs" / ".blob-1.tmp").write_bytes(b"ol")
    assert reversibility.remove_partial(state) == [partial.name]
    assert os.listdir(state / "before") == []
    with pytest.raises(FileExistsError):  # an action id is recorded once
        for _ in range(2):
            reversibility.record_before(state, "act3", ws, "fs_write", ["a.txt"],
                                        Ed25519PrivateKey.generate())
    assert sorted(os.listdir(state / "before")) == ["act3"]


def test_write_atomic_modes_and_create_once(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    assert durable.write_atomic(secret, b"one\n", mode=0o600, replace=False)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert not durable.write_atomic(secret, b"two\n", replace=False)  # kept as it was
    assert secret.read_bytes() == b"one\n"
    durable.write_atomic(secret, b"three\n", mode=0o644)
    assert secret.read_bytes() == b"three\n" and stat.S_IMODE(secret.stat().st_mode) == 0o644
    with pytest.raises(TypeError):
        durable.write_atomic(tmp_path / "bad", "not bytes")  # type: ignore[arg-type]
    assert sorted(os.listdir(tmp_path)) == ["token"]  # no temporary file left behind


def test_temporaries_left_by_a_killed_writer_are_removed_and_nothing_else(
        tmp_path: Path) -> None:
    for name in (".owner.token.k3j2x9.tmp", "owner.token", "notes.tmp", ".undo.lock"):
        (tmp_path / name).write_text("x")
    assert durable.remove_temporaries(tmp_path) == [".owner.token.k3j2x9.tmp"]
    assert sorted(os.listdir(tmp_path)) == [".undo.lock", "notes.tmp", "owner.token"]


def test_a_crash_between_private_and_public_key_is_completed_not_fatal(
        tmp_path: Path) -> None:
    keys_dir = tmp_path / "keys"
    assert keys.ensure_keypair(keys_dir, "audit")
    private = keys.load_private_key(keys_dir, "audit")
    pub = keys.public_key_path(keys_dir, "audit")
    for damage in ("missing", "torn"):
        if damage == "missing":
            pub.unlink()
        else:
            pub.write_bytes(base64.b64encode(b"\x01" * 32)[:10])
        assert not keys.ensure_keypair(keys_dir, "audit")  # the same key, its half restored
        assert keys.public_key_bytes(keys.load_public_key(keys_dir, "audit")) == (
            keys.public_key_bytes(private.public_key()))
    assert stat.S_IMODE(keys.private_key_path(keys_dir, "audit").stat().st_mode) == 0o600
    assert sorted(os.listdir(keys_dir)) == ["audit.key", "audit.pub"]
