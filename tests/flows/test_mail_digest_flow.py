"""The `mail-digest` flow against the session's Prefect server and a real IMAP server on
loopback: it runs the chain as its tasks (a message when a request arrived, silence when
nothing is new), and a run that fails for good (the IMAP server is gone: the status read is
retried, then the flow once more) leaves the owner a notice and an audit line."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from prefect.client.schemas.objects import StateType
from sqlmodel import Session, col, select

from flows.mail_digest import mail_digest
from metnos.features.mail.digest import CHANNEL
from metnos.features.reminders.outbox import Outbox
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.models import Turn
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome
from tests.support.imap import SAMPLES, ImapServer, configure, start_imap
from tests.support.imap import imap_server as imap_server  # the fixture, for this module


@pytest.fixture
def empty_imap() -> Iterator[ImapServer]:
    """An empty mailbox: the first run has no unread mail to tell (issue 27)."""
    with start_imap(seed=False) as server:
        yield server


async def test_the_flow_says_a_request_and_is_silent_otherwise(
        make_home: MakeHome, scripted_llm: ScriptedLLM, empty_imap: ImapServer,
        prefect_api: str) -> None:
    imap_server = empty_imap
    home = make_home(llm=scripted_llm, lang="it")
    settings = configure(home, imap_server)
    scripted_llm.respond_with(lambda body: json.dumps(
        {"labels": {}} if "sort a household" in body["messages"][-1]["content"] else
        {"summaries": []}))  # the model labels nothing: the rules and extractive lines
    first = await mail_digest(return_state=True)
    assert first.type == StateType.COMPLETED and first.name == "Silent"
    imap_server.deliver("INBOX", SAMPLES["request_it"][2])
    state = await mail_digest(return_state=True)
    assert state.type == StateType.COMPLETED and state.name == "Sent", state.message
    engine = make_engine(database_url(settings))
    with Session(engine) as db:
        rows = db.exec(select(Outbox)).all()
        turns = db.exec(select(Turn).where(Turn.channel == CHANNEL)).all()
    assert len(rows) == 1 and "Giulia Rossi: Cena di sabato" in rows[0].text
    assert "📬 Un messaggio nuovo merita la tua attenzione:" in rows[0].text
    assert [t.status for t in turns] == ["completed", "completed"]
    assert all(t.flow_run_id is None or t.flow_run_id for t in turns)
    engine.dispose()


async def test_a_run_that_fails_for_good_is_reported_once(
        make_home: MakeHome, imap_server: ImapServer, prefect_api: str) -> None:
    home = make_home(lang="en")
    settings = configure(home, imap_server)
    imap_server.stop()  # the server is gone: every status read fails
    state = await mail_digest.with_options(retries=1, retry_delay_seconds=0)(
        return_state=True)
    assert state.type == StateType.FAILED
    engine = make_engine(database_url(settings))
    with Session(engine) as db:
        rows = db.exec(select(Outbox)).all()
        turns = db.exec(select(Turn).where(Turn.channel == CHANNEL)
                        .order_by(col(Turn.created_at))).all()
    assert [t.status for t in turns] == ["failed", "failed"]  # the run and its retry
    assert len(rows) == 1 and rows[0].user_id == "owner"  # reported once
    assert "The mail digest failed" in rows[0].text and "imap_status" in rows[0].text
    lines = [json.loads(x) for x in (settings.audit_dir / "audit.jsonl").read_text()
             .splitlines()]
    failed = [x for x in lines if x.get("action") == "mail.digest"
              and x.get("decision") == "error"]
    assert len(failed) == 1 and failed[0]["reason"] == "ERR_DIGEST_FAILED"
    engine.dispose()
