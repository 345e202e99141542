"""Tampering with the audit log is detected and the first bad line is named (E1–E2)."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground import i18n
from metnos.ground.errors import AuditError
from metnos.mechanisms.audit import chain, record_hash
from tests.audit.conftest import AuditPaths


def _edit(raw: bytes, **changes: object) -> bytes:
    record = json.loads(raw)
    record.update(changes)
    return (chain.canonical_json(record) + "\n").encode()


def test_intact_log_verifies(ap: AuditPaths) -> None:
    ap.fill(20)
    report = ap.verify()
    assert report.ok, report
    assert report.lines == 20
    assert report.first_bad_line is None
    assert "20" in report.message("en")


def test_empty_log_without_checkpoint_is_ok(ap: AuditPaths) -> None:
    assert ap.verify().ok


def test_edited_line_is_named(ap: AuditPaths) -> None:
    ap.fill(20)
    lines = ap.lines()
    lines[4] = _edit(lines[4], outcome="nothing to see")
    ap.write_lines(lines)
    report = ap.verify()
    assert not report.ok
    assert (report.first_bad_line, report.reason_key) == (5, "ERR_AUDIT_HASH_MISMATCH")
    assert "5" in report.message("it")


def test_edited_line_with_recomputed_hash_breaks_the_next_line(ap: AuditPaths) -> None:
    ap.fill(20)
    lines = ap.lines()
    record = json.loads(lines[4])
    record["decision"] = "deny"
    record["hash"] = record_hash(record)
    lines[4] = (chain.canonical_json(record) + "\n").encode()
    ap.write_lines(lines)
    report = ap.verify()
    assert (report.first_bad_line, report.reason_key) == (6, "ERR_AUDIT_PREV_MISMATCH")


@pytest.mark.parametrize("index", [0, 6, 19])
def test_deleted_line_is_named(ap: AuditPaths, index: int) -> None:
    ap.fill(20)
    lines = ap.lines()
    del lines[index]
    ap.write_lines(lines)
    report = ap.verify()
    assert not report.ok
    if index == 19:  # the last line: only the checkpoint can tell
        assert (report.first_bad_line, report.reason_key) == (20, "ERR_AUDIT_TAIL_CUT")
    else:
        assert (report.first_bad_line, report.reason_key) == (index + 1, "ERR_AUDIT_SEQ_MISMATCH")


def test_reordered_lines_are_named(ap: AuditPaths) -> None:
    ap.fill(10)
    lines = ap.lines()
    lines[2], lines[3] = lines[3], lines[2]
    ap.write_lines(lines)
    report = ap.verify()
    assert (report.first_bad_line, report.reason_key) == (3, "ERR_AUDIT_SEQ_MISMATCH")


def test_broken_json_line_is_named(ap: AuditPaths) -> None:
    ap.fill(10)
    lines = ap.lines()
    lines[3] = lines[3][:40] + b"\n"
    ap.write_lines(lines)
    report = ap.verify()
    assert (report.first_bad_line, report.reason_key) == (4, "ERR_AUDIT_LINE_INVALID")


@pytest.mark.parametrize("cut", [1, 10])
def test_cut_tail_is_detected_by_the_checkpoint(ap: AuditPaths, cut: int) -> None:
    ap.fill(30)
    ap.write_lines(ap.lines()[:-cut])
    report = ap.verify()
    assert not report.ok
    assert report.reason_key == "ERR_AUDIT_TAIL_CUT"
    assert report.first_bad_line == 30 - cut + 1
    assert report.lines == 30 - cut
    with pytest.raises(AuditError) as err:  # and the log refuses to chain on (no laundering)
        ap.open()
    assert err.value.key == "ERR_AUDIT_TAIL_CUT"


def test_cut_and_rewritten_tail_is_detected(ap: AuditPaths) -> None:
    ap.fill(10)
    lines = ap.lines()[:7]
    prev = json.loads(lines[-1])["hash"]
    for seq in range(8, 11):  # a valid chain continuation, but not the signed one
        record = {**json.loads(lines[0]), "seq": seq, "prev": prev, "outcome": "forged"}
        record["hash"] = record_hash(record)
        prev = record["hash"]
        lines.append((chain.canonical_json(record) + "\n").encode())
    ap.write_lines(lines)
    report = ap.verify()
    assert (report.first_bad_line, report.reason_key) == (10, "ERR_AUDIT_CHECKPOINT_MISMATCH")


def test_forged_checkpoint_signature_is_detected(ap: AuditPaths) -> None:
    ap.fill(10)
    ap.write_lines(ap.lines()[:-3])
    forger = Ed25519PrivateKey.generate()
    head = json.loads(ap.lines()[-1])["hash"]
    chain.write_checkpoint(ap.checkpoint, chain.sign_checkpoint(7, head, forger))
    report = ap.verify()
    assert (report.ok, report.reason_key) == (False, "ERR_AUDIT_CHECKPOINT_SIGNATURE")
    with pytest.raises(AuditError) as err:
        ap.open()
    assert err.value.key == "ERR_AUDIT_CHECKPOINT_SIGNATURE"


def test_checkpoint_with_edited_seq_fails_its_signature(ap: AuditPaths) -> None:
    ap.fill(10)
    data = json.loads(ap.checkpoint.read_text())
    data["seq"] = 9
    ap.checkpoint.write_text(json.dumps(data))
    assert ap.verify().reason_key == "ERR_AUDIT_CHECKPOINT_SIGNATURE"


def test_missing_or_garbled_checkpoint(ap: AuditPaths) -> None:
    ap.fill(3)
    ap.checkpoint.unlink()
    assert ap.verify().reason_key == "ERR_AUDIT_CHECKPOINT_MISSING"
    ap.checkpoint.write_text("{not json")
    assert ap.verify().reason_key == "ERR_AUDIT_CHECKPOINT_INVALID"


def test_torn_tail_is_reported_distinctly(ap: AuditPaths) -> None:
    ap.fill(5)
    with ap.log.open("ab") as fh:
        fh.write(b'{"action":"fs_wri')
    report = ap.verify()
    assert (report.ok, report.first_bad_line, report.reason_key) == (
        False,
        6,
        "ERR_AUDIT_TORN_TAIL",
    )


def test_every_reason_has_both_languages() -> None:
    keys = [
        "ERR_AUDIT_TORN_TAIL",
        "ERR_AUDIT_LINE_INVALID",
        "ERR_AUDIT_SEQ_MISMATCH",
        "ERR_AUDIT_HASH_MISMATCH",
        "ERR_AUDIT_PREV_MISMATCH",
        "ERR_AUDIT_CHECKPOINT_INVALID",
        "ERR_AUDIT_CHECKPOINT_MISSING",
        "ERR_AUDIT_CHECKPOINT_SIGNATURE",
        "ERR_AUDIT_TAIL_CUT",
        "ERR_AUDIT_CHECKPOINT_MISMATCH",
        "MSG_AUDIT_VERIFY_OK",
    ]
    for key in keys:
        for lang in ("it", "en"):
            assert key in i18n.catalog(lang), (key, lang)
