"""The mail before-record: the host checks the snapshot's answer before signing it, and a
record that was tampered with after signing is refused by the undo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.features.mail.record import (
    SnapshotFailed,
    checked_snapshot,
    is_mail_record,
    publish,
    record_before,
    sign,
)
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult
from metnos.mechanisms.sandbox.profile import SandboxProfile
from metnos.mechanisms.undo import UndoError, verify_before

ARGS = {"folder": "INBOX", "to_folder": "Archive", "uids": [101, 108]}
SNAPSHOT = {"mode": "snapshot", "folder": "INBOX", "to_folder": "Archive", "uidvalidity": 7,
            "messages": [{"uid": 101, "flags": ["\\Flagged"], "message_id": "<a@x>"},
                         {"uid": 108, "flags": ["\\Seen"], "message_id": "<b@x>"}]}


def request(tmp_path: Path) -> SandboxRequest:
    return SandboxRequest(exec_dir=tmp_path, entry="main.py", profile=SandboxProfile(),
                          workspace=tmp_path, args=dict(ARGS), action_id="a" * 32,
                          account={"host": "127.0.0.1", "port": 143, "security": "plain",
                                   "username": "u", "password": "the-password-123"})


def test_a_snapshot_is_signed_before_the_move_and_tampering_is_refused(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    state = tmp_path / "state"
    signed, move = record_before(state, request(tmp_path), "move_messages",
                                 SandboxResult(ok=True, result=SNAPSHOT), key)
    assert move.args == {**ARGS, "mode": "move", "uidvalidity": 7}
    assert move.account is not None and "the-password-123" not in repr(move)
    path = state / "before" / ("a" * 32) / "manifest.json"
    assert "the-password-123" not in path.read_text()
    assert signed["manifest"]["mail"]["account"] == {"host": "127.0.0.1", "port": 143,
                                                     "username": "u"}
    assert is_mail_record(state, "a" * 32)
    manifest = verify_before(state, "a" * 32, key.public_key())
    assert manifest["mail"]["messages"][0] == {"uid": 101, "flags": ["\\Flagged"],
                                               "message_id": "<a@x>"}
    doc = json.loads(path.read_text())
    doc["manifest"]["mail"]["to_folder"] = "Trash"  # an undo that would move them elsewhere
    path.write_text(json.dumps(doc))
    with pytest.raises(UndoError) as raised:
        verify_before(state, "a" * 32, key.public_key())
    assert raised.value.key == "ERR_UNDO_MANIFEST_INVALID"
    with pytest.raises(FileExistsError):  # a record is never written over
        publish(state, "a" * 32, sign({"x": 1}, key))


@pytest.mark.parametrize("bad", [
    {**SNAPSHOT, "folder": "Spam"},
    {**SNAPSHOT, "messages": SNAPSHOT["messages"][:1]},
    {**SNAPSHOT, "uidvalidity": 0},
    {**SNAPSHOT, "messages": [{"uid": 101, "flags": ["\\Seen) (x"], "message_id": ""},
                              SNAPSHOT["messages"][1]]},
])
def test_a_snapshot_that_does_not_fit_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        checked_snapshot(bad, ARGS)


def test_a_failed_snapshot_keeps_its_reason_and_writes_nothing(tmp_path: Path) -> None:
    failed = SandboxResult(ok=False, error_key="ERR_MAIL_LOGIN_FAILED",
                           error_vars={"host": "127.0.0.1"})
    with pytest.raises(SnapshotFailed) as raised:
        record_before(tmp_path / "state", request(tmp_path), "move_messages", failed,
                      Ed25519PrivateKey.generate())
    assert (raised.value.key, raised.value.vars) == ("ERR_MAIL_LOGIN_FAILED",
                                                     {"host": "127.0.0.1"})
    assert not (tmp_path / "state" / "before").exists() or not any(
        (tmp_path / "state" / "before").iterdir())
