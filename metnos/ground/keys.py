"""The instance's Ed25519 key pairs, under `METNOS_HOME/keys/` (a forbidden path).

One pair per purpose (`executors` signs executor manifests, `audit` signs audit checkpoints),
so a leaked audit key cannot admit code. Private keys are PEM (PKCS#8) files with mode 0600;
public keys are raw 32-byte keys stored base64 in `<purpose>.pub`.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from metnos.ground import durable
from metnos.ground.errors import SignatureError

if TYPE_CHECKING:
    from metnos.ground.settings import Settings


def private_key_path(keys_dir: Path, purpose: str) -> Path:
    return keys_dir / f"{purpose}.key"


def public_key_path(keys_dir: Path, purpose: str) -> Path:
    return keys_dir / f"{purpose}.pub"


def ensure_keypair(keys_dir: Path, purpose: str) -> bool:
    """Create the key pair for `purpose` unless it exists. Returns True when it created one.

    Crash-safe: the private key is written first, durably and never over another; a public
    key missing or cut short (a crash between the two) is derived again from the private one,
    so an interrupted creation is completed, never left unable to start."""
    priv, pub = private_key_path(keys_dir, purpose), public_key_path(keys_dir, purpose)
    if priv.exists() and _public_ok(pub):
        return False
    durable.make_dir(keys_dir)
    created = False
    if not priv.exists():
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption())
        created = durable.write_atomic(priv, pem, mode=0o600, replace=False)
    raw = public_key_bytes(load_private_key(keys_dir, purpose).public_key())
    durable.write_atomic(pub, base64.b64encode(raw) + b"\n", mode=0o644)
    return created


def _public_ok(pub: Path) -> bool:
    try:
        raw = base64.b64decode(pub.read_bytes().strip(), validate=True)
    except (OSError, ValueError):
        return False
    return len(raw) == 32


def load_private_key(keys_dir: Path, purpose: str) -> Ed25519PrivateKey:
    path = private_key_path(keys_dir, purpose)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise SignatureError("ERR_KEY_UNREADABLE", path=str(path)) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError("ERR_KEY_UNREADABLE", path=str(path))
    return key


def load_public_key(keys_dir: Path, purpose: str) -> Ed25519PublicKey:
    path = public_key_path(keys_dir, purpose)
    try:
        raw = base64.b64decode(path.read_text(encoding="ascii").strip(), validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (OSError, ValueError) as exc:
        raise SignatureError("ERR_KEY_UNREADABLE", path=str(path)) from exc


def public_key_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def is_initialised(settings: Settings) -> bool:
    """Whether `metnos init` made this home: the owner's token and the executors' key."""
    return settings.owner_token_path.is_file() and public_key_path(
        settings.keys_dir, "executors").is_file()
