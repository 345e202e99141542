"""The tamper-evident audit log (SPEC §6): hash chain, fsync per line, signed head checkpoint."""

from metnos.mechanisms.audit.chain import canonical_json, digest_args, record_hash
from metnos.mechanisms.audit.log import (
    AuditLog,
    audit_log_path,
    checkpoint_path,
    open_audit_log,
    read_tail,
)
from metnos.mechanisms.audit.record import AuditRecord
from metnos.mechanisms.audit.verify import VerifyReport, verify, verify_instance

__all__ = [
    "AuditLog",
    "AuditRecord",
    "VerifyReport",
    "audit_log_path",
    "canonical_json",
    "checkpoint_path",
    "digest_args",
    "open_audit_log",
    "read_tail",
    "record_hash",
    "verify",
    "verify_instance",
]
