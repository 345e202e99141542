"""Signatures: round trip, and every kind of tampering refused with its own key."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground.errors import SignatureError
from metnos.mechanisms.executors.signing import (
    code_hash,
    key_id,
    minisign_public_key,
    sign_executor,
    verify_executor,
)
from tests.support.system import ensure_debian_binary, skip_or_fail


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _refused(folder: Path, key: Ed25519PrivateKey, sig: Path) -> str:
    with pytest.raises(SignatureError) as info:
        verify_executor(folder, key.public_key(), sig)
    return info.value.key


@pytest.fixture
def signed(executors_dir: Path, private_key: Ed25519PrivateKey, tmp_path: Path) -> Path:
    folder = executors_dir / "fs_read"
    sign_executor(folder, private_key, tmp_path / "sigs" / "fs_read.minisig")
    return folder


def test_round_trip(signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path) -> None:
    sig = tmp_path / "sigs" / "fs_read.minisig"
    facts = verify_executor(signed, private_key.public_key(), sig)
    assert (facts.name, facts.version) == ("fs_read", "0.1.0")
    assert facts.code_sha256 == code_hash(signed)
    lines = sig.read_text().splitlines()
    assert len(lines) == 4 and lines[2].startswith("trusted comment: metnos-executor name=fs_read")


def test_manifest_byte_flipped(
    signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    _flip(signed / "manifest.toml", 200)
    sig = tmp_path / "sigs" / "fs_read.minisig"
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_SIGNATURE_INVALID"


def test_code_byte_changed(signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path) -> None:
    _flip(signed / "main.py", 10)
    sig = tmp_path / "sigs" / "fs_read.minisig"
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_CODE_CHANGED"


def test_code_file_added(signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path) -> None:
    (signed / "helper.py").write_text("import os\n")
    sig = tmp_path / "sigs" / "fs_read.minisig"
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_CODE_CHANGED"


def test_code_file_with_a_non_utf8_name_added(
    signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    """A file name that is not UTF-8 is a tampering like any other, not a crash."""
    import os

    (signed / os.fsdecode(b"\xff\xfe.py")).write_text("import os\n")
    sig = tmp_path / "sigs" / "fs_read.minisig"
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_CODE_CHANGED"


def test_unsigned_parts_do_not_count(
    signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    (signed / "manifest.lang_state.json").write_text("{}")
    (signed / "__pycache__").mkdir()
    (signed / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"junk")
    verify_executor(signed, private_key.public_key(), tmp_path / "sigs" / "fs_read.minisig")


def test_verified_with_other_key(signed: Path, tmp_path: Path) -> None:
    other = Ed25519PrivateKey.generate()
    sig = tmp_path / "sigs" / "fs_read.minisig"
    assert _refused(signed, other, sig) == "ERR_EXECUTOR_WRONG_KEY"


def test_forged_key_id(signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path) -> None:
    """Another key's signature relabelled with our key id is still refused."""
    sig = tmp_path / "forged.minisig"
    sign_executor(signed, Ed25519PrivateKey.generate(), sig)
    lines = sig.read_text().splitlines()
    blob = bytearray(base64.b64decode(lines[1]))
    blob[2:10] = key_id(private_key.public_key())
    lines[1] = base64.b64encode(bytes(blob)).decode()
    sig.write_text("\n".join(lines) + "\n")
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_SIGNATURE_INVALID"


def test_signed_by_other_key_refused(
    signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    sig = tmp_path / "other.minisig"
    sign_executor(signed, Ed25519PrivateKey.generate(), sig)
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_WRONG_KEY"


def test_unsigned(executors_dir: Path, private_key: Ed25519PrivateKey, tmp_path: Path) -> None:
    key = _refused(executors_dir / "fs_read", private_key, tmp_path / "missing.minisig")
    assert key == "ERR_EXECUTOR_UNSIGNED"


def test_trusted_comment_tampered(
    signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    sig = tmp_path / "sigs" / "fs_read.minisig"
    text = sig.read_text()
    sig.write_text(text.replace("version=0.1.0", "version=9.9.9"))
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_SIGNATURE_INVALID"


def test_signature_of_another_executor(
    executors_dir: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    sig = tmp_path / "find.minisig"
    sign_executor(executors_dir / "fs_find", private_key, sig)
    assert _refused(executors_dir / "fs_read", private_key, sig) == "ERR_EXECUTOR_SIGNATURE_INVALID"


@pytest.mark.parametrize("garbage", ["", "hello\n", "a\nb\nc\nd\n"])
def test_malformed_signature(
    signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path, garbage: str
) -> None:
    sig = tmp_path / "bad.minisig"
    sig.write_text(garbage)
    assert _refused(signed, private_key, sig) == "ERR_EXECUTOR_SIGNATURE_INVALID"


def test_symlink_refused(
    executors_dir: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    folder = executors_dir / "fs_read"
    (folder / "link.py").symlink_to("/etc/hostname")
    with pytest.raises(SignatureError) as info:
        sign_executor(folder, private_key, tmp_path / "s.minisig")
    assert info.value.key == "ERR_EXECUTOR_SYMLINK"


def test_code_hash_covers_paths(executors_dir: Path) -> None:
    folder = executors_dir / "fs_read"
    before = code_hash(folder)
    (folder / "main.py").rename(folder / "main2.py")
    assert code_hash(folder) != before


@pytest.fixture(scope="session")
def minisign() -> str:
    """The minisign binary (Debian's package, installed when missing); under CI, never a skip."""
    path = ensure_debian_binary("minisign", "minisign")
    if path is None:
        skip_or_fail("the minisign binary is missing and cannot be installed here (apt-get)")
    assert path is not None
    return path


def test_minisign_cli_verifies(
    signed: Path, private_key: Ed25519PrivateKey, tmp_path: Path, minisign: str
) -> None:
    pub = tmp_path / "executors.pub"
    pub.write_text(minisign_public_key(private_key.public_key()))
    sig = tmp_path / "sigs" / "fs_read.minisig"
    cmd = [minisign, "-V", "-p", str(pub), "-m", str(signed / "manifest.toml"), "-x", str(sig)]
    ok = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    assert ok.returncode == 0, ok.stderr
    assert "metnos-executor name=fs_read" in ok.stdout
    _flip(signed / "manifest.toml", 50)
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    assert bad.returncode != 0
