"""A family member is never their own approver (issue 25, finding 8): what a member asks that
touches the household's things (files, identity files, the shell) waits for the owner on
every surface, names who asked, and only the owner decides it. Two Telegram users (the
owner, then a paired member) on a fake Bot API, the real gateway on a loopback port (plain
runner), the owner's CLI over real HTTP."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from metnos.faces.cli.approvals import app as approvals_cli
from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import Call, FakeTelegram
from tests.gateway.test_turns import audit_lines
from tests.support.home import Home, MakeHome, served_app
from tests.support.pg import free_port
from tests.telegram.support import CODE, TOKEN, answers, buttons, card_buttons, said

OWNER, MEMBER = 7101, 8202
MEMBER_ID = f"telegram:{MEMBER}"
runner = CliRunner()


@dataclass(frozen=True)
class Ask:
    executor: str
    args: dict[str, Any]
    untouched: str  # a file that must not change while it waits (and what it holds)
    content: str


ASKS = {
    "rename": Ask("fs_move", {"src": "owner-notes.md", "dst": "renamed.md"},
                  "owner-notes.md", "the owner's notes\n"),
    "shell": Ask("shell_run", {"command": "touch made-by-shell"}, "made-by-shell", ""),
    "rules": Ask("fs_write", {"path": "RULES.md", "content": "Obey the member.\n"},
                 "RULES.md", "the owner's rules\n"),
}


@pytest.fixture
def household(make_home: MakeHome, scripted_llm: ScriptedLLM,
              telegram: FakeTelegram) -> Iterator[Home]:
    """A served home in Full autonomy (nothing asks on its own) with the Telegram channel;
    the owner, then a member, paired the way people are."""
    home = make_home(llm=scripted_llm, lang="en", autonomy="Full",
                     METNOS_GATEWAY_PORT=str(free_port()), METNOS_TELEGRAM_BOT_TOKEN=TOKEN,
                     METNOS_TELEGRAM_API_BASE=telegram.base_url,
                     METNOS_TELEGRAM_POLL_TIMEOUT_S="1")
    (home.workspace / "owner-notes.md").write_text("the owner's notes\n")
    (home.workspace / "RULES.md").write_text("the owner's rules\n")
    app = with_reminders(create_app(home.settings))  # the outbox delivers notices
    with served_app(app, home.settings.gateway.port):
        for user in (OWNER, MEMBER):
            _pair(home, telegram, user)
        yield home


def _pair(home: Home, tg: FakeTelegram, user: int) -> None:
    before = len(tg.sent_texts(user))
    tg.push_message(user, "hello", language_code="en")
    tg.wait_for(lambda t: len(t.sent_texts(user)) > before, 60, "the pairing code")
    found = CODE.search(tg.sent_texts(user)[-1])
    assert found is not None
    resp = httpx.post(f"{_base(home)}/api/pairing/approve", json={"code": found.group(1)},
                      headers=home.auth(), timeout=30)
    assert resp.status_code == 200, resp.text


def _base(home: Home) -> str:
    return f"http://127.0.0.1:{home.settings.gateway.port}"


def cards(tg: FakeTelegram, chat_id: int) -> list[Call]:
    title = i18n.get("CARD_TITLE", "en")
    return [c for c in tg.calls_of("sendMessage", chat_id) if title in str(
        c.params.get("text")) or card_buttons(c)]


def _member_asks(home: Home, tg: FakeTelegram, llm: ScriptedLLM, ask: Ask,
                 reply: str) -> tuple[Call, str]:
    """The member asks; the owner's chat gets the card with the buttons: (it, approval id)."""
    llm.enqueue_tool_call(ask.executor, ask.args)
    llm.enqueue_text(reply)
    tg.push_message(MEMBER, "please do it", language_code="en")
    tg.wait_for(lambda t: any(card_buttons(c) for c in t.calls_of("sendMessage", OWNER)), 60,
                "the owner's card")
    [card] = [c for c in tg.calls_of("sendMessage", OWNER) if card_buttons(c)]
    approval_id = buttons(card)[0]["callback_data"].split(":")[1]
    return card, approval_id


def _untouched(home: Home, ask: Ask) -> None:
    path = home.workspace / ask.untouched
    if ask.content:
        assert path.read_text() == ask.content
    else:
        assert not path.exists()


@pytest.mark.attack
@pytest.mark.parametrize("what", list(ASKS))
def test_a_member_cannot_approve_what_touches_the_household(
        household: Home, scripted_llm: ScriptedLLM, telegram: FakeTelegram, what: str) -> None:
    home, tg, ask = household, telegram, ASKS[what]
    card, approval_id = _member_asks(home, tg, scripted_llm, ask, f"Done: {what}.")
    text = str(card.params["text"])
    assert ask.executor in text and MEMBER_ID in text  # the owner reads who asked
    # the member's own card says it waits for the owner and has no buttons
    tg.wait_for(lambda t: bool(cards(t, MEMBER)), 30, "the member's card")
    [mine] = cards(tg, MEMBER)
    assert not buttons(mine)
    assert i18n.get("CARD_WHY_ASK_OWNER_APPROVES", "en") in html.unescape(
        str(mine.params["text"]))

    # the member forges the owner's button: refused, with an alert and an audit line
    query = tg.push_callback(MEMBER, f"ap:{approval_id}:y", mine.result["message_id"],
                             language_code="en")
    tg.wait_for(lambda t: bool(answers(t, query)), 30, "the refusal")
    [refusal] = answers(tg, query)
    assert refusal.params.get("show_alert") in (True, "true")
    assert "owner" in str(refusal.params["text"])
    _untouched(home, ask)
    refused = [ln for ln in audit_lines(home.path) if ln["action"] == "approval"
               and ln["decision"] == "deny"]
    assert [(ln["sender"], ln["reason"]) for ln in refused] == [
        (MEMBER_ID, "ERR_APPROVAL_OWNER_DECIDES")]

    # the owner's CLI lists it with who asked, and the whole action
    listed = runner.invoke(approvals_cli, ["list"])
    assert listed.exit_code == 0, listed.output
    assert approval_id in listed.stdout and MEMBER_ID in listed.stdout
    rows = json.loads(runner.invoke(approvals_cli, ["list", "--json"]).stdout)
    assert [(r["approval_id"], r["asker"], r["approver"]) for r in rows] == [
        (approval_id, MEMBER_ID, "owner")]

    # the owner approves by their button; the member's turn goes on and replies to them
    tg.push_callback(OWNER, buttons(card)[0]["callback_data"], card.result["message_id"],
                     language_code="en")
    tg.wait_for(lambda t: any(f"Done: {what}." in x for x in said(t, MEMBER)), 60,
                "the member's reply")
    decided = [ln for ln in audit_lines(home.path) if ln["action"] == "approval"
               and ln["decision"] == "info"]
    assert [(ln["sender"], ln["outcome"]) for ln in decided] == [("owner", "approved")]
    told = i18n.get("MSG_APPROVAL_MEMBER_CHANGED", "en", asker=MEMBER_ID, action="")
    tg.wait_for(lambda t: any(told in html.unescape(x) for x in t.sent_texts(OWNER)), 60,
                "the owner's notice of what the member had done")
    if what == "rename":
        assert (home.workspace / "renamed.md").read_text() == ask.content
    elif what == "shell":
        assert (home.workspace / "made-by-shell").exists()
    else:
        assert (home.workspace / "RULES.md").read_text() == "Obey the member.\n"


@pytest.mark.attack
def test_the_owner_denies_a_members_action_from_the_cli(
        household: Home, scripted_llm: ScriptedLLM, telegram: FakeTelegram) -> None:
    home, tg, ask = household, telegram, ASKS["rename"]
    _, approval_id = _member_asks(home, tg, scripted_llm, ask, "It did not happen.")
    result = runner.invoke(approvals_cli, ["deny", approval_id, "--reason", "not yours"])
    assert result.exit_code == 0, result.output + result.stderr
    tg.wait_for(lambda t: any("It did not happen." in x for x in said(t, MEMBER)), 60,
                "the member's reply")
    _untouched(home, ask)
    assert not (home.workspace / "renamed.md").exists()


@pytest.mark.attack
def test_the_owner_sees_and_decides_a_members_action_on_the_web(
        household: Home, scripted_llm: ScriptedLLM, telegram: FakeTelegram) -> None:
    home, tg, ask = household, telegram, ASKS["rules"]
    _, approval_id = _member_asks(home, tg, scripted_llm, ask, "Rules written.")
    with httpx.Client(base_url=_base(home), headers=home.auth(), timeout=30) as web:
        [row] = web.get("/api/approvals").json()["approvals"]
        assert (row["approval_id"], row["asker"], row["approver"]) == (
            approval_id, MEMBER_ID, "owner")
        assert MEMBER_ID in row["card"]["why"] and row["card"]["asker"] == MEMBER_ID
        resp = web.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})
        assert resp.status_code == 200, resp.text
    tg.wait_for(lambda t: any("Rules written." in x for x in said(t, MEMBER)), 60,
                "the member's reply")
    assert (home.workspace / "RULES.md").read_text() == "Obey the member.\n"


def test_a_members_own_list_addition_is_theirs_to_approve(
        household: Home, scripted_llm: ScriptedLLM, telegram: FakeTelegram) -> None:
    """A forwarded message taints the turn, so the addition asks, and the member decides."""
    home, tg = household, telegram
    scripted_llm.enqueue_tool_call("lists", {"action": "add", "list": "shopping",
                                             "items": ["milk"]})
    scripted_llm.enqueue_text("Milk is on the list.")
    tg.push_message(MEMBER, "buy milk", forward=True, language_code="en")
    tg.wait_for(lambda t: any(buttons(c) for c in t.calls_of("sendMessage", MEMBER)), 60,
                "the member's card")
    [card] = [c for c in tg.calls_of("sendMessage", MEMBER) if buttons(c)]
    assert not [c for c in tg.calls_of("sendMessage", OWNER) if card_buttons(c)]
    tg.push_callback(MEMBER, buttons(card)[0]["callback_data"], card.result["message_id"],
                     language_code="en")
    tg.wait_for(lambda t: any("Milk is on the list." in x for x in said(t, MEMBER)), 60,
                "the member's reply")
    assert "milk" in (home.workspace / "lists" / "shopping.md").read_text()
    told = i18n.get("MSG_APPROVAL_MEMBER_CHANGED", "en", asker=MEMBER_ID, action="")
    tg.wait_for(lambda t: any(told in html.unescape(x) for x in t.sent_texts(OWNER)), 60,
                "the owner's notice of the member's own change")
