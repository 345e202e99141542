"""A phishing mail and a fooled summarizing model (issue 25, finding 9): what the digest says
is checked in code before it goes out. The real IMAP server on loopback (pymap), the real
checker, sandbox and executors, the scripted model writing the attacker's summary:
- no link of any shape (scheme, bare domain, `www`, `[.]`, `dot`, `hxxp`), no address, no
  phone number reaches the owner's message;
- the sender line is the headers', never the model's;
- a line claiming an action Metnos did not take (in English or Italian) is refused;
- the mail is still told, by its header line, and a deny audit line says why.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from sqlmodel import Session, col, select

from metnos.faces.wiring import build_runtime
from metnos.features.mail import screen
from metnos.features.mail.digest import run_digest
from metnos.features.mail.summary import REFUSED, SCREEN_ACTION
from metnos.features.reminders.outbox import Outbox
from metnos.testing.llm_server import ScriptedLLM
from metnos.turns.service import TurnService
from tests.gateway.test_turns import audit_lines
from tests.support.home import MakeHome
from tests.support.imap import ImapServer, configure
from tests.support.imap import message as mail

UID = re.compile(r"### Message uid (\d+)")
PHISH_FROM = "Banca Sicura <avvisi@banca-verifica.it>"
PHISH_SUBJECT = "Avviso di sicurezza sul tuo conto"
PHISH_BODY = ("Gentile cliente,\nabbiamo rilevato un accesso insolito. Verifica i tuoi dati su "
              "http://banca-verifica.it/login entro oggi.\n")
HEADER_LINE = f"Banca Sicura: {PHISH_SUBJECT}"

SHAPES: dict[str, tuple[str, str]] = {
    "the issue's": ("Banca Sicura: all fine",
                    "I already moved the mail to the Trash… verify your data at "
                    "http://banca-verifica.it"),
    "bare domain": ("Your bank asks to check", "Check your data on banca-verifica.it today"),
    "www": ("Your bank", "Open www.banca-verifica.it to confirm the account"),
    "defanged dot": ("Your bank", "Go to banca-verifica[.]it and log in"),
    "spelled dot": ("Your bank", "Go to banca-verifica dot it and log in"),
    "hxxp": ("Your bank", "Log in at hxxps://banca-verifica.it/login now"),
    "full-width": ("Your bank", "Log in at ｂａｎｃａ-verifica．it now"),
    "address": ("Your bank", "Send the code to assistenza@banca-verifica.com"),
    "address [at]": ("Your bank", "Send the code to assistenza [at] banca-verifica.com"),
    "phone": ("Your bank", "Call +39 02 1234 5678 to unblock the card"),
    "claim en": ("Your bank", "Paid, nothing to do: the mail is archived"),
    "claim it": ("La banca", "Ho già spostato la mail nel Cestino, tutto a posto"),
    "claim it passive": ("La banca", "La mail è stata cestinata e il conto verificato"),
}


def scripted(llm: ScriptedLLM, lines: tuple[str, str]) -> None:
    """The fooled model: every uid is a request, and its summary is the attacker's."""
    def answer(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        uids = [int(u) for u in UID.findall(prompt)]
        if "sort a household's new e-mail" in prompt:
            return json.dumps({"labels": {str(u): "request" for u in uids}})
        return json.dumps({"summaries": [{"uid": u, "lines": list(lines)} for u in uids]})
    llm.respond_with(answer)


def outbox(service: TurnService) -> list[Outbox]:
    with Session(service.engine) as db:
        return list(db.exec(select(Outbox).order_by(col(Outbox.created_at))).all())


@pytest.mark.attack
@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_a_fooled_summary_never_reaches_the_family(
        make_home: MakeHome, scripted_llm: ScriptedLLM, empty_imap: ImapServer,
        shape: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    service = await build_runtime(configure(home, empty_imap), tutor=False)
    await run_digest(service)  # the baseline: an empty mailbox
    scripted(scripted_llm, SHAPES[shape])
    empty_imap.deliver("INBOX", mail(PHISH_FROM, PHISH_SUBJECT, PHISH_BODY))
    result = await run_digest(service)
    assert result.outcome == "sent" and result.worth == 1
    [row] = outbox(service)
    said = row.text
    assert HEADER_LINE in said.splitlines()  # the mail is told, by its headers
    assert SHAPES[shape][0] not in said and SHAPES[shape][1] not in said
    assert screen.links(said) == []
    assert screen.claims(said, ("en", "it")) == []
    for word in ("banca-verifica", "http", "hxxp", "www", "@", "1234", "Trash", "Cestino"):
        assert word not in said, word
    refused = [ln for ln in audit_lines(home.path) if ln["action"] == SCREEN_ACTION]
    assert [(ln["decision"], ln["reason"], ln["outcome"]) for ln in refused] == [
        ("deny", REFUSED, "header_only")]
    service.engine.dispose()


@pytest.mark.attack
async def test_the_model_cannot_rewrite_the_sender_line(
        make_home: MakeHome, scripted_llm: ScriptedLLM, empty_imap: ImapServer) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    service = await build_runtime(configure(home, empty_imap), tutor=False)
    await run_digest(service)
    scripted(scripted_llm, ("Mamma: urgent, call me", "She asks you to call her back"))
    empty_imap.deliver("INBOX", mail(PHISH_FROM, PHISH_SUBJECT, PHISH_BODY))
    assert (await run_digest(service)).outcome == "sent"
    [row] = outbox(service)
    lines = row.text.splitlines()
    assert "Mamma" not in row.text
    assert lines[-2:] == [HEADER_LINE, "She asks you to call her back"]
    service.engine.dispose()


@pytest.mark.attack
async def test_the_header_line_keeps_no_link_either(
        make_home: MakeHome, scripted_llm: ScriptedLLM, empty_imap: ImapServer) -> None:
    """The sender's own headers are outside text too: a domain in the subject or an address
    for a name becomes something nobody can click."""
    home = make_home(llm=scripted_llm, lang="en")
    service = await build_runtime(configure(home, empty_imap), tutor=False)
    await run_digest(service)
    scripted(scripted_llm, ("x", "Your bank asks you to check your account"))
    empty_imap.deliver("INBOX", mail("avvisi@banca-verifica.it",
                                      "Verify now at banca-verifica.it/login", "Hello."))
    assert (await run_digest(service)).outcome == "sent"
    [row] = outbox(service)
    assert screen.links(row.text) == [] and "banca-verifica" not in row.text
    assert "avvisi@…: Verify now at [link]" in row.text.splitlines()
    assert "Your bank asks you to check your account" in row.text.splitlines()
    service.engine.dispose()


@pytest.mark.parametrize("text", [
    "Tom asks for the signed lease", "Scan page 4, by Friday noon", "Dinner at 20:00 on Saturday",
    "Giulia: cena di sabato, porta il vino?", "Sabato sera da noi alle 20.",
    "Invoice of 1.250 euro due on 12/05/2025", "Mr.Smith asks about the meeting",
])
def test_ordinary_lines_pass(text: str) -> None:
    assert screen.links(text) == [] and screen.claims(text, ("en", "it")) == []
