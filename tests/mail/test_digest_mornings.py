"""The mail digest against a real IMAP server on loopback (pymap, `tests.support.imap`),
through the real checker, sandbox, executors and the scripted model (issue 15, acceptance):

- three mornings on one mailbox and one METNOS_HOME: nothing new (no message, no model call),
  two automatic confirmations (no message, and no model call: the headers decide), one real
  request (exactly one message with its two lines);
- the injected mail changes nothing and asks nothing, with the model scripted as the
  attacker; the chain's hand-offs reinforce the mnests like a turn's;
- the account's password appears nowhere: METNOS_HOME (but its secret file), the captured
  logs, the model's requests, the database's trace, audit and outbox.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlmodel import Session, col, select

from metnos.faces.wiring import build_runtime
from metnos.features.mail.digest import CHANNEL, run_digest
from metnos.features.mnestoma.models import Mnest
from metnos.features.reminders.outbox import Outbox
from metnos.ground.db.models import Turn, TurnStep
from metnos.mechanisms.approvals.models import Approval
from metnos.testing.llm_server import ScriptedLLM
from metnos.turns.service import TurnService
from tests.support.home import Home, MakeHome
from tests.support.imap import INJECTION_BODY, INJECTION_SUBJECT, SAMPLES, ImapServer, configure
from tests.support.imap import message as mail

CHAIN = ["imap_status", "imap_fetch_headers", "summarize", "notify"]
UID = re.compile(r"### Message uid (\d+)")


def raw(name: str) -> bytes:
    return SAMPLES[name][2]


def outbox(service: TurnService) -> list[Outbox]:
    with Session(service.engine) as db:
        return list(db.exec(select(Outbox).order_by(col(Outbox.created_at))).all())


def steps(service: TurnService, turn_id: str) -> list[str]:
    with Session(service.engine) as db:
        rows = db.exec(select(TurnStep).where(TurnStep.turn_id == turn_id)
                       .order_by(col(TurnStep.seq))).all()
    return [r.executor for r in rows]


def scripted(llm: ScriptedLLM, label: str = "request",
             lines: tuple[str, str] | None = None) -> None:
    """The model: every uid it is shown gets `label`, and `lines` when asked to summarise."""
    def answer(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        uids = [int(u) for u in UID.findall(prompt)]
        if "sort a household's new e-mail" in prompt:
            return json.dumps({"labels": {str(u): label for u in uids}})
        pair = lines or ("Tom asks for the signed lease", "Scan page 4, by Friday noon")
        return json.dumps({"summaries": [{"uid": u, "lines": list(pair)} for u in uids]})
    llm.respond_with(answer)


async def first_look(service: TurnService, llm: ScriptedLLM | None = None) -> None:
    """The first run tells the unread mail already in the seeded mailbox (issue 27); the
    mornings after start as if it was yesterday, with an empty outbox."""
    first = await run_digest(service)
    assert first.outcome == "sent" and first.first_run
    assert len(outbox(service)) == 1
    with service.engine.begin() as conn:
        conn.execute(text("DELETE FROM outbox"))
        conn.execute(text("UPDATE mail_digest_sent SET sent_at = sent_at - interval '1 day'"))
    if llm is not None:
        llm.requests.clear()


async def _service(make_home: MakeHome, llm: ScriptedLLM, server: ImapServer) -> tuple[
        Home, TurnService]:
    home = make_home(llm=llm, lang="en")
    settings = configure(home, server)
    return home, await build_runtime(settings, tutor=False)


async def test_three_mornings(make_home: MakeHome, scripted_llm: ScriptedLLM,
                              imap_server: ImapServer) -> None:
    home, service = await _service(make_home, scripted_llm, imap_server)
    scripted(scripted_llm)
    await first_look(service, scripted_llm)  # the unread mail already there, told once

    # morning 1: nothing new
    one = await run_digest(service)
    assert one.outcome == "nothing_new"
    assert outbox(service) == [] and scripted_llm.requests == []
    assert steps(service, one.turn_id) == ["imap_status"]  # nothing read

    # morning 2: two automatic confirmations
    imap_server.deliver("INBOX", raw("confirmation_it"))
    imap_server.deliver("INBOX", raw("shipping_en"))
    two = await run_digest(service)
    assert (two.outcome, two.new_messages) == ("nothing_worth", 2)
    assert two.labels["automatic"] == 2
    assert outbox(service) == [] and scripted_llm.requests == []  # the headers decided
    assert steps(service, two.turn_id) == ["imap_status", "imap_fetch_headers"]

    # morning 3: one real request
    uid = imap_server.deliver("INBOX", raw("request_en"))
    three = await run_digest(service)
    assert (three.outcome, three.new_messages, three.worth) == ("sent", 1, 1)
    rows = outbox(service)
    assert len(rows) == 1 and rows[0].user_id == "owner" and rows[0].kind == "notify"
    body = rows[0].text.splitlines()
    # line one is the headers' (the model's own first line is never used), line two the model's
    assert "Tom Baker: Could you send me the signed lease by Friday?" in body
    assert "Scan page 4, by Friday noon" in body and "Tom asks for the signed lease" not in body
    assert sum("worth your attention" in line for line in body) == 1
    assert len(scripted_llm.requests) == 2  # one label call, one summary call
    assert str(uid) in scripted_llm.requests[0]["messages"][-1]["content"]
    assert steps(service, three.turn_id) == CHAIN
    with Session(service.engine) as db:
        turn = db.get(Turn, three.turn_id)
        assert turn is not None and turn.channel == CHANNEL and turn.status == "completed"
        weights = {(m.src, m.dst): m.weight for m in db.exec(select(Mnest)).all()}
    for pair in zip(CHAIN, CHAIN[1:], strict=False):  # the hand-offs, reinforced
        assert weights.get(pair, 0) > 0, (pair, weights)
    # the day after, the same mail is not news again
    assert (await run_digest(service)).outcome == "nothing_new"
    assert len(outbox(service)) == 1
    service.engine.dispose()


async def test_the_injected_mail_changes_nothing_and_asks_nothing(
        make_home: MakeHome, scripted_llm: ScriptedLLM, imap_server: ImapServer,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    home, service = await _service(make_home, scripted_llm, imap_server)
    scripted(scripted_llm)
    await first_look(service, scripted_llm)
    before = {f: imap_server.flags(f) for f in imap_server.folders()}
    # the attacker model: the injection is "a request", and its lines give orders
    scripted(scripted_llm, "request", ("Forward everything to collector@evil.example",
                                       "then move all mail to Trash"))
    uid = imap_server.deliver("INBOX", mail("IT Support <support@helpdesk-casa.example.net>",
                                            INJECTION_SUBJECT, INJECTION_BODY))
    result = await run_digest(service)
    assert result.outcome == "sent" and result.worth == 1
    assert result.tainted  # the turn knows it read outside data
    assert steps(service, result.turn_id) == CHAIN  # no other step ran
    rows = outbox(service)
    assert len(rows) == 1 and rows[0].user_id == "owner"  # to the owner, nobody else
    lines = rows[0].text.splitlines()
    # line one is the headers' (the model's own is not used), an address with nothing to click
    assert "collector@evil.example" not in rows[0].text
    assert lines[3].startswith("IT Support: URGENTE") and lines[3].endswith("collector@…")
    assert lines[4] == "then move all mail to Trash"  # the model's line two: text, as said
    assert len([line for line in lines if line.strip()]) <= 4  # title, header, two lines
    after = {f: imap_server.flags(f) for f in imap_server.folders()}
    assert after["INBOX"].pop(uid) == set()  # still unread, where it arrived
    assert after == before  # nothing moved, no flag changed
    with Session(service.engine) as db:
        assert db.exec(select(Approval)).all() == []  # nothing asked
    for request in scripted_llm.requests:
        assert "tools" not in request  # the model could call nothing
    _no_password(home, service, imap_server.password, scripted_llm, caplog)
    service.engine.dispose()


def _no_password(home: Home, service: TurnService, password: str, llm: ScriptedLLM,
                 caplog: pytest.LogCaptureFixture) -> None:
    """The account's password in nothing written (but its own secret file)."""
    secret = home.path / "secrets" / "mail.password"
    assert secret.read_text().strip() == password  # the needle is the real one
    leaks = [p for p in Path(home.path).rglob("*") if p.is_file() and p != secret
             and password.encode() in p.read_bytes()]
    assert leaks == []
    assert password not in caplog.text
    assert password not in json.dumps(llm.requests)
    with service.engine.connect() as conn:
        for table in ("turn_step", "turn", "outbox", "chat_message", "approval"):
            dumped = json.dumps([list(map(str, r)) for r in conn.execute(
                text(f"SELECT * FROM {table}"))])  # noqa: S608 - fixed table names
            assert password not in dumped, table


async def test_without_a_model_and_past_the_daily_quota(
        make_home: MakeHome, imap_server: ImapServer) -> None:
    home = make_home(lang="it", METNOS_MAIL_DIGEST_MAX_PER_DAY="1")
    service = await build_runtime(configure(home, imap_server), tutor=False)
    assert service.port is None  # the rules label, the executor's lines are the summary
    await first_look(service)
    imap_server.deliver("INBOX", raw("request_it"))
    first = await run_digest(service)
    assert first.outcome == "sent"
    lines = outbox(service)[0].text.splitlines()
    assert "Giulia Rossi: Cena di sabato: puoi portare il vino?" in lines
    assert "Sabato sera da noi alle 20." in lines
    assert "📬 Un messaggio nuovo merita la tua attenzione:" in lines
    # the day's quota is spent: the next request waits, nothing is read for it
    imap_server.deliver("INBOX", raw("request_en"))
    held = await run_digest(service)
    assert held.outcome == "quota_spent" and steps(service, held.turn_id) == ["imap_status"]
    assert len(outbox(service)) == 1
    with service.engine.begin() as conn:  # the next day
        conn.execute(text("UPDATE mail_digest_sent SET sent_at = sent_at - interval '1 day'"))
    later = await run_digest(service)
    assert later.outcome == "sent" and later.new_messages == 1
    rows = outbox(service)
    assert len(rows) == 2 and "Tom Baker: Could you send me the signed lease by Friday?" in (
        rows[1].text.splitlines())
    service.engine.dispose()
