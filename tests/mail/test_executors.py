"""The three mail executors in the real sandbox against the real loopback IMAP server: what
they read, that reading never marks anything read, how they fail (no account, a wrong
password, a folder that does not exist) and that the password never comes back out."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from metnos.features.mail.account import load_account
from metnos.ground.paths import resources_path
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.policy.secret_scan import SecretScanner
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, run_sandboxed
from tests.support.home import MakeHome
from tests.support.imap import INJECTION_SUBJECT, SAMPLES, ImapServer, configure, message

ROOT = Path(__file__).resolve().parents[2]
EXECUTORS = resources_path("executors")


async def run(settings: Settings, name: str, args: dict[str, Any],
              account: dict[str, Any] | None = None) -> SandboxResult:
    manifest = parse_manifest(EXECUTORS / name / "manifest.toml")
    return await run_sandboxed(SandboxRequest(
        exec_dir=EXECUTORS / name, entry=manifest.entry, profile=manifest.sandbox,
        workspace=settings.workspace, args=args, action_id="test-run",
        account=account if account is not None else load_account(settings).envelope()))


@pytest.fixture
def settings(make_home: MakeHome, imap_server: ImapServer) -> Settings:
    return configure(make_home(lang="en"), imap_server)


async def test_status_counts_every_folder_and_marks_nothing_read(
        settings: Settings, imap_server: ImapServer) -> None:
    before = {name: imap_server.flags(name) for name in imap_server.folders()}
    result = await run(settings, "imap_status", {})
    assert result.ok, (result.error_key, result.stderr_tail)
    folders = {f["name"]: f for f in result.result["folders"]}
    inbox = [n for n, (_k, folder, _r, _f) in SAMPLES.items() if folder == "INBOX"]
    assert set(folders) == {"INBOX", "Archive", "Receipts", "Trash"}
    assert (folders["INBOX"]["messages"], folders["INBOX"]["unseen"]) == (len(inbox),
                                                                          len(inbox) - 1)
    assert folders["INBOX"]["uidnext"] == max(imap_server.folders()["INBOX"]) + 1
    assert folders["Receipts"] == {**folders["Receipts"], "messages": 1, "unseen": 0}
    assert result.result["unseen"] == len(inbox) - 1
    only = await run(settings, "imap_status", {"folders": ["inbox"]})
    assert [f["name"] for f in only.result["folders"]] == ["INBOX"]
    missing = await run(settings, "imap_status", {"folders": ["Nowhere"]})
    assert (missing.ok, missing.error_key) == (False, "ERR_MAIL_FOLDER_NOT_FOUND")
    assert {name: imap_server.flags(name) for name in imap_server.folders()} == before


async def test_fetch_headers_reads_new_messages_without_setting_seen(
        settings: Settings, imap_server: ImapServer) -> None:
    before = imap_server.flags("INBOX")
    result = await run(settings, "imap_fetch_headers", {"folder": "INBOX"})
    assert result.ok, (result.error_key, result.stderr_tail)
    got = {m["uid"]: m for m in result.result["messages"]}
    seeded = imap_server.seeded
    assert list(got) == sorted(before) and result.result["untrusted"] is True
    assert result.result["last_uid"] == max(before) and result.result["more"] is False
    confirmation = got[seeded["confirmation_it"]]
    assert (confirmation["auto_submitted"], confirmation["precedence"]) == ("auto-generated",
                                                                          "bulk")
    assert "noreply@negozio.example.it" in confirmation["from"]
    assert confirmation["list_unsubscribe"] == "<mailto:unsubscribe@negozio.example.it>"
    assert got[seeded["shipping_en"]]["list_id"].startswith("Shipping notices")
    assert got[seeded["spam_en"]]["spam_flag"] == "NO"
    assert got[seeded["read_it"]]["subject"] == "Riunione di condominio – lunedì"  # RFC 2047
    assert got[seeded["read_it"]]["seen"] is True
    assert got[seeded["request_it"]]["snippet"].startswith("Ciao! Sabato sera da noi alle 20.")
    assert "signed lease" in got[seeded["request_en"]]["snippet"]
    assert "<" not in got[seeded["request_en"]]["snippet"]  # text/plain chosen, no markup
    assert got[seeded["injection"]]["subject"] == INJECTION_SUBJECT  # data, passed as it is
    assert all(m["message_id"].startswith("<") for m in got.values())
    # since_uid and limit: the next ones, oldest first, and whether more are waiting
    first = sorted(before)[0]
    page = await run(settings, "imap_fetch_headers",
                     {"folder": "INBOX", "since_uid": first, "limit": 2})
    assert [m["uid"] for m in page.result["messages"]] == sorted(before)[1:3]
    assert page.result["more"] is True
    unread = await run(settings, "imap_fetch_headers", {"folder": "INBOX", "unseen": True})
    assert seeded["read_it"] not in [m["uid"] for m in unread.result["messages"]]
    # an HTML-only message: the snippet is its text, the markup and hidden parts gone
    html_only = imap_server.deliver("INBOX", _html_only())
    latest = await run(settings, "imap_fetch_headers",
                       {"folder": "INBOX", "since_uid": html_only - 1})
    [shown] = latest.result["messages"]
    assert shown["snippet"] == "Il pacco è in consegna oggi."
    assert imap_server.flags("INBOX") == {**before, html_only: set()}  # nothing became \Seen
    nothing = await run(settings, "imap_fetch_headers", {"folder": "INBOX",
                                                         "since_uid": html_only})
    assert nothing.result["messages"] == [] and nothing.result["last_uid"] == html_only


def _html_only() -> bytes:
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "Corriere <info@corriere.example.it>", "a@b.c", "x"
    msg["Message-ID"] = "<html-only@corriere.example.it>"
    msg.set_content("<html><head><style>p{}</style></head><body><p>Il pacco è in "
                    "<b>consegna</b> oggi.</p><script>alert(1)</script></body></html>",
                    subtype="html")
    return msg.as_bytes()


async def test_wrong_password_fails_clearly_and_never_shows_the_password(
        settings: Settings, imap_server: ImapServer) -> None:
    account = load_account(settings).envelope()
    wrong = {**account, "password": "not-the-password-0123"}
    result = await run(settings, "imap_status", {}, account=wrong)
    assert (result.ok, result.error_key) == (False, "ERR_MAIL_LOGIN_FAILED")
    assert result.error_vars == {"host": "127.0.0.1"}
    assert "not-the-password-0123" not in json.dumps(result.error_vars) + result.stderr_tail
    missing = await run(settings, "imap_status", {}, account={})
    assert missing.error_key == "ERR_MAIL_ACCOUNT_MISSING"
    plain = await run(settings, "imap_status", {}, account={**account, "host": "imap.example"})
    assert plain.error_key == "ERR_MAIL_PLAIN_REFUSED"
    closed = await run(settings, "imap_status", {}, account={**account, "port": 1})
    assert closed.error_key == "ERR_MAIL_UNREACHABLE"
    # a host in the arguments is not an argument at all
    redirected = await run(settings, "imap_status", {"host": "evil.example"})
    assert (redirected.error_key, redirected.error_vars) == ("ERR_EXECUTOR_ARG_INVALID",
                                                             {"arg": "host"})


async def test_a_password_echoed_into_a_result_comes_back_redacted(
        settings: Settings, imap_server: ImapServer) -> None:
    """A sender who knows (or guesses) the password and mails it: the executor scrubs it
    from its reply, and the host's secret scanner knows secrets/mail.password too."""
    imap_server.deliver("INBOX", message("x@evil.example", f"pw {imap_server.password}",
                                         f"the password is {imap_server.password}"))
    result = await run(settings, "imap_fetch_headers", {"folder": "INBOX"})
    assert result.ok
    assert imap_server.password not in json.dumps(result.result)
    scanner = SecretScanner.for_instance(settings)
    echoed = {"text": f"see {imap_server.password} here"}
    shown, names = scanner.redact(echoed)
    assert names == ["secrets/mail.password"], names
    assert imap_server.password not in json.dumps(shown)


def test_the_shared_imap_module_imports_only_the_standard_library() -> None:
    """The sandbox binds metnos/features/mail/imap.py alone, beside the protocol helper: it may
    import nothing of metnos but that helper, as the sandbox names it."""
    import sys

    tree = ast.parse((ROOT / "metnos" / "features" / "mail" / "imap.py").read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert names - {"__future__", "metnos_sandbox_protocol"} <= set(sys.stdlib_module_names), names
