from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.mechanisms.audit import AuditLog, VerifyReport, verify


@dataclass
class AuditPaths:
    log: Path
    checkpoint: Path
    key: Ed25519PrivateKey

    def open(self, **kwargs: int) -> AuditLog:
        return AuditLog(self.log, self.checkpoint, self.key, **kwargs)

    def verify(self) -> VerifyReport:
        return verify(self.log, self.checkpoint, self.key.public_key())

    def fill(self, n: int) -> None:
        with self.open() as audit:
            for i in range(n):
                audit.append(action="fs_read", decision="allow", args={"i": i}, outcome=f"ok {i}")

    def lines(self) -> list[bytes]:
        return self.log.read_bytes().splitlines(keepends=True)

    def write_lines(self, lines: list[bytes]) -> None:
        self.log.write_bytes(b"".join(lines))


@pytest.fixture
def ap(tmp_path: Path) -> AuditPaths:
    return AuditPaths(
        log=tmp_path / "workspace" / ".audit" / "audit.jsonl",
        checkpoint=tmp_path / "state" / "audit.checkpoint",
        key=Ed25519PrivateKey.generate(),
    )
