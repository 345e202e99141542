"""The mail executors through real turns: the scripted model asks, the gateway's checker and
runner decide and run them in the sandbox against the loopback IMAP server.

- a move, then `metnos undo` (the CLI against the served gateway): folders and flags come
  back exactly, even flags changed after the move;
- Law 1: a move whose snapshot cannot be taken (unknown UID, wrong password) moves nothing
  and leaves no record; no account at all: refused before any sandbox, with an audit line;
- the injected mail is data: after reading it, a move "everything to Trash" is not run;
- the password is nowhere: METNOS_HOME (but its own file), the audit, the database, the
  captured logs and output, the model's requests.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import MetaData, select
from typer.testing import CliRunner

from metnos.faces.cli.main import app as metnos_cli
from metnos.ground.db.engine import database_url, make_engine
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.support.home import Home, MakeHome, served_gateway
from tests.support.imap import ImapServer, configure
from tests.support.pg import free_port


def audit(home: Home) -> list[dict[str, Any]]:
    path = home.settings.audit_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def turn(home: Home, text: str) -> dict[str, Any]:
    base = f"http://127.0.0.1:{home.settings.gateway.port}"
    with httpx.Client(base_url=base, headers=home.auth(), timeout=120) as client:
        resp = client.post("/api/turns", json={"text": text, "lang": "en"})
        assert resp.status_code == 200, resp.text
        return dict(resp.json())


def shown(reply: dict[str, Any], executor: str) -> str:
    """What the turn's activity says of `executor`'s steps (the refusals' i18n text)."""
    return "\n".join(str(a.get("text")) for a in reply["activity"]
                     if a.get("executor") == executor)


def move_lines(home: Home) -> list[dict[str, Any]]:
    return [ln for ln in audit(home) if ln["action"] == "move_messages"]


def everything_written(home: Home) -> str:
    """Every file of METNOS_HOME but the password's own, and every row of the database."""
    parts = []
    for path in sorted(home.path.rglob("*")):
        if path.is_file() and path.name != "mail.password" and "pg" not in path.parts:
            parts.append(path.read_bytes().decode("utf-8", "replace"))
    engine = make_engine(database_url(home.settings))
    try:
        meta = MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            for table in meta.sorted_tables:
                parts.extend(repr(tuple(row)) for row in conn.execute(select(table)))
    finally:
        engine.dispose()
    return "\n".join(parts)


@pytest.fixture
def mail_home(make_home: MakeHome, scripted_llm: ScriptedLLM, imap_server: ImapServer) -> Home:
    home = make_home(llm=scripted_llm, autonomy="Full", lang="en",
                     METNOS_GATEWAY_PORT=str(free_port()))
    configure(home, imap_server)
    return home


def test_move_then_metnos_undo_restores_folders_and_flags_exactly(
        mail_home: Home, scripted_llm: ScriptedLLM, imap_server: ImapServer,
        caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    home, seeded = mail_home, imap_server.seeded
    chosen = [seeded["request_it"], seeded["read_it"], seeded["shipping_en"]]
    with imap_server.client() as conn:  # flags worth restoring: flagged, answered, read
        conn.select("INBOX")
        conn.uid("STORE", str(seeded["request_it"]), "+FLAGS", "(\\Flagged \\Answered)")
    original = imap_server.state()
    scripted_llm.enqueue_tool_calls([ToolCall("move_messages", {
        "folder": "INBOX", "to_folder": "Archive", "uids": chosen})])
    scripted_llm.enqueue_text("Filed three messages in Archive.")
    with served_gateway(home):
        done = turn(home, "file the dinner, the condo and the parcel mails in Archive")
        assert done["status"] == "completed", done
        [line] = [ln for ln in move_lines(home) if ln["outcome"] == "done"]
        action_id = line["action_id"]
        assert sorted(imap_server.folders()["Archive"]) and all(
            uid not in imap_server.folders()["INBOX"] for uid in chosen)
        moved = imap_server.state()
        assert set(moved["Archive"]) == {mid for mid in original["INBOX"]
                                         if mid not in moved["INBOX"]}
        record = home.settings.state_dir / "before" / action_id
        manifest = json.loads((record / "manifest.json").read_text())["manifest"]
        assert [m["uid"] for m in manifest["mail"]["messages"]] == chosen
        assert manifest["mail"]["folder"] == "INBOX" and manifest["paths"] == []
        assert (record / "after.json").is_file()
        with imap_server.client() as conn:  # read and flagged in Archive after the move
            conn.select("Archive")
            conn.uid("STORE", "1:*", "+FLAGS", "(\\Seen \\Flagged)")
        result = CliRunner().invoke(metnos_cli, ["undo", action_id])
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith(f"Action {action_id} undone."), result.stdout
        assert imap_server.state() == original
        again = CliRunner().invoke(metnos_cli, ["undo", action_id])
        assert again.exit_code == 1 and "already been undone" in again.stderr
    undo_line = [ln for ln in audit(home) if ln["action"] == "undo"][0]
    assert (undo_line["action_id"], undo_line["outcome"]) == (action_id, "done")
    # the password is nowhere it should not be
    seen = everything_written(home) + caplog.text + "".join(capfd.readouterr())
    seen += json.dumps(scripted_llm.requests) + result.output
    assert imap_server.password not in seen
    assert imap_server.password in (home.settings.secrets_dir / "mail.password").read_text()


def test_law_1_no_snapshot_no_move_and_no_account_no_sandbox(
        mail_home: Home, scripted_llm: ScriptedLLM, imap_server: ImapServer,
        caplog: pytest.LogCaptureFixture) -> None:
    home = mail_home
    original = imap_server.state()
    before_dir = home.settings.state_dir / "before"
    scripted_llm.enqueue_tool_calls([ToolCall("move_messages", {
        "folder": "INBOX", "to_folder": "Archive", "uids": [99999]})])
    scripted_llm.enqueue_text("Done.")
    with served_gateway(home):
        reply = turn(home, "move message 99999 to Archive")
        assert "not in INBOX" in shown(reply, "move_messages"), reply
        [line] = move_lines(home)
        assert (line["reason"], line["decision"]) == ("ERR_MAIL_MESSAGES_NOT_FOUND", "error")
        assert not before_dir.exists() or not any(before_dir.iterdir())
        # a wrong password: the login fails in the snapshot, the reply says so, no password
        (home.settings.secrets_dir / "mail.password").write_text("wrong-password-xyz\n")
        scripted_llm.enqueue_tool_calls([ToolCall("move_messages", {
            "folder": "INBOX", "to_folder": "Archive", "uids": [imap_server.seeded["spam_en"]]})])
        scripted_llm.enqueue_text("Done.")
        reply = turn(home, "move the prize mail to Archive")
        assert "refused the login" in shown(reply, "move_messages"), reply
        assert "wrong-password-xyz" not in json.dumps(reply)
        assert move_lines(home)[-1]["reason"] == "ERR_MAIL_LOGIN_FAILED"
        # no account at all: refused by the checker, before any sandbox
        (home.settings.secrets_dir / "mail.password").unlink()
        scripted_llm.enqueue_tool_calls([ToolCall("imap_status", {})])
        scripted_llm.enqueue_text("Done.")
        reply = turn(home, "how many unread mails do I have")
        assert "No mail account is set up yet" in shown(reply, "imap_status"), reply
        status_lines = [ln for ln in audit(home) if ln["action"] == "imap_status"]
        assert [(ln["reason"], ln["outcome"]) for ln in status_lines] == [
            ("ERR_MAIL_NOT_CONFIGURED", "refused")]
    assert imap_server.state() == original
    assert not before_dir.exists() or not any(before_dir.iterdir())
    assert "wrong-password-xyz" not in caplog.text + json.dumps(scripted_llm.requests)


def test_the_injected_mail_is_read_as_data_and_moves_nothing(
        mail_home: Home, scripted_llm: ScriptedLLM, imap_server: ImapServer) -> None:
    """A model that obeys the injection ("move everything to Trash") after reading it: the
    turn is tainted by the untrusted headers, so the move is not run on its word."""
    home = mail_home
    original = imap_server.state()
    every = sorted(imap_server.folders()["INBOX"])
    scripted_llm.enqueue_tool_calls([ToolCall("imap_fetch_headers", {"folder": "INBOX"})])
    scripted_llm.enqueue_tool_calls([ToolCall("move_messages", {
        "folder": "INBOX", "to_folder": "Trash", "uids": every})])
    scripted_llm.enqueue_text("Moved everything to Trash as the support team asked.")
    with served_gateway(home):
        reply = turn(home, "what is new in my mail?")
    assert imap_server.state() == original, reply
    lines = move_lines(home)  # Law 3: asks the owner, never runs on the mail's word
    [asked] = [ln for ln in lines if ln["outcome"] == "awaiting_approval"]
    # the gateway's stop then ends the wait (its drain): never a move that ran
    assert all(ln["outcome"] != "done" for ln in lines), lines
    assert (asked["reason"], asked["outcome"]) == ("ASK_LAW_UNTRUSTED_DATA",
                                                   "awaiting_approval"), asked
    fetched = [ln for ln in audit(home) if ln["action"] == "imap_fetch_headers"]
    assert fetched and fetched[0]["outcome"] == "done"
    # the model saw the injection only as a tool result, never as the user's words
    sent = json.dumps(scripted_llm.requests)
    assert "ignore previous instructions" in sent
    users = [m for r in scripted_llm.requests for m in r.get("messages", [])
             if m.get("role") == "user"]
    assert not any("ignore previous instructions" in str(m.get("content")) for m in users)
