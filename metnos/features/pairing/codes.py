"""Pairing codes: 8 characters without the ambiguous ones, drawn with `secrets`; only their
SHA-256 digest is ever stored."""

from __future__ import annotations

import hashlib
import secrets

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0 O 1 I L
CODE_LENGTH = 8


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalise_code(code: str) -> str:
    """What the owner typed, trimmed and upper-cased (codes are case-insensitive)."""
    return code.strip().upper()


def well_formed(code: str) -> bool:
    """`code` (normalised) could be a code at all: the right length and alphabet."""
    return len(code) == CODE_LENGTH and set(code) <= set(ALPHABET)


def code_digest(code: str) -> str:
    return hashlib.sha256(normalise_code(code).encode()).hexdigest()
