"""Executor signatures: minisign-compatible detached signatures over `manifest.toml`.

Format (minisign's prehashed "ED" algorithm, verifiable with `minisign -Vm manifest.toml
-x <name>.minisig -p executors.minisign.pub`):

    untrusted comment: <free text>
    base64(b"ED" + key_id[8] + Ed25519(BLAKE2b-512(manifest bytes)))
    trusted comment: metnos-executor name=<n> version=<v> code_sha256=<hex> signed_at=<unix>
    base64(Ed25519(signature[64] + trusted comment bytes))

The manifest bytes are signed; the trusted comment (covered by the global signature) pins the
executor's name, version and the SHA-256 of its code (`code_hash`: its folder's files and the
protocol helper the sandbox binds into every run), so a byte changed in the manifest, the code
or the helper makes verification fail.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from metnos.ground import durable
from metnos.ground.errors import SignatureError
from metnos.ground.keys import public_key_bytes
from metnos.mechanisms.executors.manifest import (
    LANG_STATE_FILE,
    MANIFEST_FILE,
    manifest_bytes,
    parse_manifest,
)
from metnos.mechanisms.sandbox.bwrap import PYLIB_DIR, protocol_package

SIG_ALG = b"ED"  # Ed25519 over BLAKE2b-512 of the message (minisign "prehashed")
PK_ALG = b"Ed"
COMMENT_TAG = "metnos-executor"
SIG_SUFFIX = ".minisig"
MAX_SIG_BYTES = 4096
_UNSIGNED_FILES = {MANIFEST_FILE, LANG_STATE_FILE}


@dataclass(frozen=True)
class SignedFacts:
    """What a valid signature vouches for."""

    name: str
    version: str
    code_sha256: str
    manifest_sha256: str
    signed_at: int


def key_id(public_key: Ed25519PublicKey) -> bytes:
    """The 8-byte minisign key id, derived deterministically from the public key."""
    return hashlib.blake2b(public_key_bytes(public_key)).digest()[:8]


def key_id_hex(kid: bytes) -> str:
    """The key id as minisign prints it (little-endian 64-bit, upper-case hex)."""
    return f"{int.from_bytes(kid, 'little'):016X}"


def minisign_public_key(public_key: Ed25519PublicKey) -> str:
    """The public key as a minisign `.pub` file text (for `minisign -V -p`)."""
    kid = key_id(public_key)
    blob = base64.b64encode(PK_ALG + kid + public_key_bytes(public_key)).decode("ascii")
    return f"untrusted comment: minisign public key {key_id_hex(kid)}\n{blob}\n"


def signature_path(signatures_dir: Path, name: str) -> Path:
    return signatures_dir / f"{name}{SIG_SUFFIX}"


def code_hash(folder: Path) -> str:
    """SHA-256 over the sorted relative paths and bytes of the executor's code files, then the
    protocol helper it runs with (`metnos.mechanisms.sandbox.protocol`, named by where the sandbox
    binds it: an absolute path, which no file of the folder has).

    Skipped: `manifest.toml` (signed directly), `manifest.lang_state.json` (rewritten by the
    translation sweep) and `__pycache__/`. A symbolic link is refused: its target is not pinned.
    """
    digest = hashlib.sha256()
    helper = protocol_package()
    for rel, path in [*_code_files(folder), (f"{PYLIB_DIR}/{helper.dest}", helper.source)]:
        data = path.read_bytes()
        encoded = rel.encode("utf-8", "surrogateescape")  # a non-UTF-8 name: its raw bytes
        digest.update(len(encoded).to_bytes(4, "big") + encoded)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def sign_bytes(
    data: bytes,
    private_key: Ed25519PrivateKey,
    trusted_comment: str,
    untrusted_comment: str = "signature from metnos",
) -> str:
    """A minisign signature file text for `data`."""
    if "\n" in trusted_comment or "\n" in untrusted_comment:
        raise ValueError("comments are single lines")
    kid = key_id(private_key.public_key())
    signature = private_key.sign(hashlib.blake2b(data).digest())
    global_sig = private_key.sign(signature + trusted_comment.encode("utf-8"))
    return (
        f"untrusted comment: {untrusted_comment}\n"
        f"{base64.b64encode(SIG_ALG + kid + signature).decode('ascii')}\n"
        f"trusted comment: {trusted_comment}\n"
        f"{base64.b64encode(global_sig).decode('ascii')}\n"
    )


def verify_bytes(data: bytes, public_key: Ed25519PublicKey, sig_text: str, name: str) -> str:
    """Check a minisign signature of `data`; returns the trusted comment."""
    alg, kid, signature, comment, global_sig = _parse_sig(sig_text, name)
    if alg != SIG_ALG:
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=name)
    if kid != key_id(public_key):
        raise SignatureError(
            "ERR_EXECUTOR_WRONG_KEY",
            name=name,
            key_id=key_id_hex(kid),
            expected=key_id_hex(key_id(public_key)),
        )
    try:
        public_key.verify(signature, hashlib.blake2b(data).digest())
        public_key.verify(global_sig, signature + comment.encode("utf-8"))
    except InvalidSignature as exc:
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=name) from exc
    return comment


def sign_executor(folder: Path, private_key: Ed25519PrivateKey, sig_path: Path) -> SignedFacts:
    """Sign `folder`'s manifest and code hash; writes `sig_path` atomically."""
    parse_manifest(folder / MANIFEST_FILE)  # never sign a manifest that would be refused
    data = manifest_bytes(folder / MANIFEST_FILE)
    name, version = _name_version(data, folder.name)
    facts = SignedFacts(
        name, version, code_hash(folder), hashlib.sha256(data).hexdigest(), int(time.time())
    )
    comment = (
        f"{COMMENT_TAG} name={name} version={version} "
        f"code_sha256={facts.code_sha256} signed_at={facts.signed_at}"
    )
    text = sign_bytes(data, private_key, comment, f"metnos executor {name} {version}")
    _write_atomic(sig_path, text.encode("ascii"))
    return facts


def verify_executor(folder: Path, public_key: Ed25519PublicKey, sig_path: Path) -> SignedFacts:
    """Check `folder` against its signature; raises SignatureError with a specific key."""
    name = folder.name
    try:
        with sig_path.open("rb") as fh:
            sig_text = fh.read(MAX_SIG_BYTES + 1).decode("utf-8")
    except FileNotFoundError as exc:
        raise SignatureError("ERR_EXECUTOR_UNSIGNED", name=name) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=name) from exc
    data = manifest_bytes(folder / MANIFEST_FILE)
    comment = verify_bytes(data, public_key, sig_text, name)
    facts = _facts_from_comment(comment, name, hashlib.sha256(data).hexdigest())
    if (facts.name, facts.version) != _name_version(data, name):
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=name)
    if facts.code_sha256 != code_hash(folder):
        raise SignatureError("ERR_EXECUTOR_CODE_CHANGED", name=name)
    return facts


def _code_files(folder: Path) -> list[tuple[str, Path]]:
    files: list[tuple[str, Path]] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for entry in dirs + names:
            path = Path(root) / entry
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                raise SignatureError("ERR_EXECUTOR_SYMLINK", name=folder.name, path=rel)
            if entry in names and not path.is_file():  # a FIFO or device would block the read
                raise SignatureError("ERR_EXECUTOR_SPECIAL_FILE", name=folder.name, path=rel)
            if entry in names and rel not in _UNSIGNED_FILES:
                files.append((rel, path))
    return sorted(files)


def _parse_sig(sig_text: str, name: str) -> tuple[bytes, bytes, bytes, str, bytes]:
    lines = sig_text.splitlines()
    try:
        if len(sig_text) > MAX_SIG_BYTES or len(lines) != 4:
            raise ValueError("shape")
        if not lines[0].startswith("untrusted comment:"):
            raise ValueError("untrusted comment")
        prefix = "trusted comment: "
        if not lines[2].startswith(prefix):
            raise ValueError("trusted comment")
        blob = base64.b64decode(lines[1], validate=True)
        global_sig = base64.b64decode(lines[3], validate=True)
        if len(blob) != 74 or len(global_sig) != 64:
            raise ValueError("length")
    except ValueError as exc:
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=name) from exc
    return blob[:2], blob[2:10], blob[10:], lines[2][len(prefix) :], global_sig


def _facts_from_comment(comment: str, name: str, manifest_sha256: str) -> SignedFacts:
    tag, _, rest = comment.partition(" ")
    fields = dict(part.partition("=")[::2] for part in rest.split())
    try:
        if tag != COMMENT_TAG:
            raise ValueError(tag)
        return SignedFacts(
            fields["name"],
            fields["version"],
            fields["code_sha256"],
            manifest_sha256,
            int(fields["signed_at"]),
        )
    except (KeyError, ValueError) as exc:
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=name) from exc


def _name_version(data: bytes, name: str) -> tuple[str, str]:
    try:
        table = tomllib.loads(data.decode("utf-8"))
        return str(table["name"]), str(table["version"])
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=name) from exc


def _write_atomic(path: Path, data: bytes) -> None:
    durable.make_dir(path.parent)
    durable.write_atomic(path, data, mode=0o644)
