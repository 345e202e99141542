"""Appending: fields, digests, checkpoints, reopening, torn tails, reading backwards."""

from __future__ import annotations

import json
import os
import random
import stat
from pathlib import Path

import pytest

from metnos.ground.errors import AuditError
from metnos.mechanisms.audit import chain, digest_args, read_tail
from tests.audit.conftest import AuditPaths


def test_record_fields_and_chain(ap: AuditPaths) -> None:
    with ap.open() as audit:
        first = audit.append(
            sender="owner",
            channel="cli",
            session_id="s1",
            turn_id="t1",
            action="fs_read",
            args={"path": "notes.md"},
            decision="allow",
            reason="MSG_POLICY_ALLOWED",
            outcome="ok",
            cost_usd=0.000123,
        )
        second = audit.append(action="fs_write", decision="deny", reason="ERR_PATH_FORBIDDEN")
    assert (first.seq, first.prev) == (1, chain.GENESIS)
    assert (second.seq, second.prev) == (2, first.hash)
    assert first.cost_usd == "0.000123" and second.cost_usd is None
    assert first.args_digest == digest_args({"path": "notes.md"})
    assert first.ts.endswith("Z") and first.ts.startswith("20")
    lines = ap.log.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == first.to_dict()
    assert json.loads(lines[0])["hash"] == chain.record_hash(json.loads(lines[0]))


def test_raw_arguments_never_reach_the_file(ap: AuditPaths) -> None:
    with ap.open() as audit:
        audit.append(action="imap_login", decision="allow", args={"password": "hunter2-ß"})
    assert "hunter2" not in ap.log.read_text(encoding="utf-8")


def test_costs_are_decimal_strings_never_floats(ap: AuditPaths) -> None:
    with ap.open() as audit:
        tiny = audit.append(action="llm", decision="info", cost_usd=1e-7)
        whole = audit.append(action="llm", decision="info", cost_usd="2.50")
        with pytest.raises(AuditError):
            audit.append(action="llm", decision="info", cost_usd="nan")
    assert (tiny.cost_usd, whole.cost_usd) == ("0.0000001", "2.5")
    assert ap.verify().ok


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "x", "decision": "maybe"},
        {"decision": "allow"},
        {"action": "x", "decision": "allow", "password": "p"},
    ],
)
def test_bad_fields_are_refused(ap: AuditPaths, fields: dict[str, str]) -> None:
    with ap.open() as audit, pytest.raises(AuditError):
        audit.append(**fields)


def test_reopen_continues_the_chain(ap: AuditPaths) -> None:
    ap.fill(3)
    with ap.open() as audit:
        assert audit.head[0] == 3
        record = audit.append(action="fs_find", decision="allow")
    assert record.seq == 4
    assert ap.verify().ok


def test_checkpoint_every_n_and_at_close(ap: AuditPaths) -> None:
    audit = ap.open(checkpoint_every=5)
    for _ in range(7):
        audit.append(action="a", decision="info")
    assert chain.read_checkpoint(ap.checkpoint).seq == 5  # type: ignore[union-attr]
    audit.close()
    assert chain.read_checkpoint(ap.checkpoint).seq == 7  # type: ignore[union-attr]
    assert stat.S_IMODE(ap.checkpoint.stat().st_mode) == 0o600
    assert ap.verify().ok
    with pytest.raises(AuditError):
        audit.append(action="a", decision="info")


def test_checkpoint_lagging_after_a_crash_is_fine(ap: AuditPaths) -> None:
    ap.fill(3)
    saved = ap.checkpoint.read_bytes()
    ap.fill(2)  # a crash would leave the checkpoint behind the file like this
    ap.checkpoint.write_bytes(saved)
    assert ap.verify().ok
    with ap.open() as audit:
        assert audit.append(action="a", decision="info").seq == 6


def test_torn_tail_is_kept_and_not_chained_onto(ap: AuditPaths) -> None:
    ap.fill(3)
    torn = b'{"action":"fs_write","args_digest":"ab'
    with ap.log.open("ab") as fh:
        fh.write(torn)
    with ap.open() as audit:
        record = audit.append(action="fs_read", decision="allow")
    kept = list(ap.log.parent.glob("audit.jsonl.torn-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == torn
    records = [json.loads(line) for line in ap.log.read_text().splitlines()]
    assert [r["seq"] for r in records] == [1, 2, 3, 4, 5]
    assert records[3]["action"] == "audit.torn_tail" and records[3]["outcome"] == kept[0].name
    assert record.seq == 5
    assert ap.verify().ok


def test_corrupt_last_line_refuses_to_open(ap: AuditPaths) -> None:
    ap.fill(3)
    lines = ap.lines()
    lines[-1] = lines[-1].replace(b"fs_read", b"fs_xxxx")
    ap.write_lines(lines)
    with pytest.raises(AuditError) as err:
        ap.open()
    assert err.value.key == "ERR_AUDIT_TAIL_UNREADABLE"


def test_tail(ap: AuditPaths) -> None:
    ap.fill(10)
    with ap.open() as audit:
        last = audit.tail(3)
    assert [r["seq"] for r in last] == [8, 9, 10]
    assert [r["seq"] for r in read_tail(ap.log, 50)] == list(range(1, 11))
    assert read_tail(ap.log.parent / "missing.jsonl", 5) == []


def test_lines_backwards_across_chunk_boundaries(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = [
        bytes([97 + i % 26]) * rng.choice([0, 1, 50, 8191, 8192, 8193, 20000]) for i in range(60)
    ]
    path = tmp_path / "f"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    fd = os.open(path, os.O_RDONLY)
    try:
        got = list(chain.lines_backwards(fd, path.stat().st_size))
    finally:
        os.close(fd)
    assert [raw for _, raw in got] == lines[::-1]
    offsets = [off for off, _ in got][::-1]
    assert offsets[0] == 0 and all(b > a for a, b in zip(offsets, offsets[1:], strict=False))


def test_action_id_links_a_record_to_its_before_manifest(ap: AuditPaths) -> None:
    with ap.open() as audit:
        record = audit.append(action="fs_write", decision="allow", action_id="abc123")
    assert record.action_id == "abc123"
    assert json.loads(ap.log.read_text())["action_id"] == "abc123"
    assert ap.verify().ok


@pytest.mark.parametrize(
    "hostile",
    [
        "fs_read\ud800",  # a lone surrogate: JSON "\ud800" from a model's tool call
        "line1\nline2\r\u2028\u0085x",  # line breaks of every kind
        "\u009b31mred\x1b[0m\x7f",  # terminal control: C1 CSI, ESC, DEL
        "x" * 100_000,  # huge
        b"\xff\xfe not utf-8",  # bytes (non-UTF-8) passed by a careless caller
    ],
)
def test_hostile_field_values_cannot_corrupt_the_log(ap: AuditPaths, hostile: object) -> None:
    """Whatever a model controls (the executor name, the arguments) lands as one line of
    printable JSON; the chain still verifies and the next append works."""
    with ap.open() as audit:
        audit.append(action=hostile, sender=hostile, decision="deny", reason="R",
                     args={"path": hostile})
        audit.append(action="fs_read", decision="allow")
    raw = ap.log.read_bytes()
    raw.decode("utf-8")  # strict: the file is always valid UTF-8
    assert raw.count(b"\n") == 2
    assert not any(c in raw.decode("utf-8") for c in "\x7f\x85\x9b\x1b\r")
    first = json.loads(raw.splitlines()[0])
    assert len(first["action"]) < 6 * 1000 and first["args_digest"]
    report = ap.verify()
    assert report.ok and report.lines == 2, report
