"""The owner answers a delivered proposal: through the web API (the chat's card), the CLI
(`metnos proposals`, over real HTTP) and Telegram's buttons (a fake Bot API, the real
channel). Accepting runs the kind's handler exactly once; dismissing runs nothing; an unknown
kind is a clear error and the proposal stays open; someone else's tap is refused and
audited."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from metnos.faces.channels.telegram.sender import TelegramSender
from metnos.faces.cli.main import app as cli
from metnos.faces.gateway.outbox_delivery import Delivery
from metnos.faces.wiring import build_runtime
from metnos.features.proposals import store
from metnos.features.proposals.models import Proposal
from metnos.testing.telegram_server import FakeTelegram
from metnos.turns.service import TurnService
from tests.proposals.support import (
    NOON,
    audit_of,
    draft,
    fresh,
    proposal_rows,
    round_at,
    submit,
)
from tests.support.home import Home, MakeHome, gateway_client
from tests.telegram.support import TOKEN, buttons, telegram_gateway, until

ANNA, BOB = 7101, 8202
NO_QUIET = {"METNOS_NOTIFY_QUIET_HOURS": "", "METNOS_TIMEZONE": "UTC"}
ran: list[str] = []  # the proposals whose handler ran, in order


def good(what: str) -> str:
    """A proposal text the fallback judge finds aligned with the default TELOS.md."""
    return f"{what}: tidy the family's files, save time on routine chores"


def count(engine: Engine, proposal: Proposal) -> None:
    ran.append(proposal.id)


def broken(engine: Engine, proposal: Proposal) -> None:
    raise RuntimeError("the disk is full")


store.on_accept("routine", count)
store.on_accept("broken_kind", broken)


@pytest.fixture(autouse=True)
def _fresh_ran() -> Iterator[None]:
    ran.clear()
    yield
    ran.clear()


async def test_accept_and_dismiss_through_the_web_api(make_home: MakeHome) -> None:
    home = make_home(lang="en", **NO_QUIET)
    async with gateway_client(home, prefect=False) as client:
        service: TurnService = client.app.state.gateway.service  # type: ignore[attr-defined]
        yes, no, odd, bad = submit(
            service, draft(good("photos"), kind="routine"),
            draft(good("scans"), kind="routine"),
            draft(good("bills"), kind="no_such_kind"),
            draft(good("receipts"), kind="broken_kind"))
        await round_at(service, NOON)
        assert {fresh(service, r).status for r in (yes, no, odd, bad)} == {"delivered"}
        listed = (await client.get("/api/proposals")).json()
        assert {p["id"] for p in listed["proposals"]} == {yes.id, no.id, odd.id, bad.id}
        assert listed["labels"]["accept"] == "✅ Accept"
        card = (await client.get("/api/proposals", params={
            "outbox_id": fresh(service, yes).outbox_id})).json()["proposals"]
        assert [p["text"] for p in card] == [
            f"Shall I take care of this, as you usually do: {good('photos')}?"]

        resp = await client.post(f"/api/proposals/{yes.id}/accept")
        assert resp.status_code == 200, resp.text
        assert resp.json()["proposal"]["status"] == "accepted" and ran == [yes.id]
        again = await client.post(f"/api/proposals/{yes.id}/accept")
        assert again.status_code == 409 and ran == [yes.id]  # once
        assert again.json()["error"]["key"] == "ERR_PROPOSAL_ALREADY_DECIDED"

        resp = await client.post(f"/api/proposals/{no.id}/dismiss")
        assert resp.json()["proposal"]["status"] == "dismissed" and ran == [yes.id]

        unknown = await client.post(f"/api/proposals/{odd.id}/accept")
        assert unknown.status_code == 422
        assert "no_such_kind" in unknown.json()["error"]["message"]
        failed = await client.post(f"/api/proposals/{bad.id}/accept")
        assert failed.status_code == 502 and "the disk is full" in failed.text
        assert fresh(service, odd).status == fresh(service, bad).status == "delivered"
        missing = await client.post("/api/proposals/nope/accept")
        assert missing.status_code == 404
        left = (await client.get("/api/proposals")).json()["proposals"]
        assert {p["id"] for p in left} == {odd.id, bad.id}
    answers = {r.id: [(a["decision"], a["reason"], a["outcome"]) for a in audit_of(
        service, r.id) if a["action"] == "proposal.answer"] for r in (yes, no, odd)}
    assert answers == {
        yes.id: [("allow", "MSG_PROPOSAL_ACCEPTED", "accepted"),
                 ("error", "ERR_PROPOSAL_ALREADY_DECIDED", "failed")],
        no.id: [("allow", "MSG_PROPOSAL_DISMISSED", "dismissed")],
        odd.id: [("error", "ERR_PROPOSAL_KIND_UNKNOWN", "failed")]}


def test_the_cli_lists_answers_and_shows_the_silent_register(
        served: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METNOS_NOTIFY_QUIET_HOURS", "")
    runner = CliRunner()

    async def prepare() -> tuple[list[Proposal], Proposal]:
        service = await build_runtime(served.settings)
        rows = submit(service, draft(good("photos"), kind="routine"),
                      draft(good("scans"), kind="routine"))
        [quiet] = submit(service, draft("buy an ice cream", kind="shopping"))
        await round_at(service, NOON)
        service.engine.dispose()
        return rows, quiet

    rows, quiet = asyncio.run(prepare())
    listed = runner.invoke(cli, ["proposals"])
    assert listed.exit_code == 0, listed.output
    assert "photos: tidy the family's files" in listed.stdout and rows[0].id in listed.stdout
    assert "waiting for your answer" in listed.stdout and "buy an ice cream" not in listed.stdout
    done = runner.invoke(cli, ["proposals", "accept", rows[0].id])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == f"Proposal {rows[0].id}: accepted." and ran == [rows[0].id]
    twice = runner.invoke(cli, ["proposals", "accept", rows[0].id])
    assert twice.exit_code == 1 and "already been answered" in twice.output
    assert ran == [rows[0].id]
    gone = runner.invoke(cli, ["proposals", "dismiss", rows[1].id, "--json"])
    assert json.loads(gone.stdout)["status"] == "dismissed" and ran == [rows[0].id]
    assert runner.invoke(cli, ["proposals"]).stdout.strip() == "No proposal is waiting for you."
    silent = runner.invoke(cli, ["proposals", "silent"])
    assert silent.exit_code == 0, silent.output
    out = silent.stdout
    assert "buy an ice cream" in out and quiet.id in out
    assert "Not aligned enough with your aims." in out and "rules (no model)" in out
    [row] = json.loads(runner.invoke(cli, ["proposals", "silent", "--json"]).stdout)
    assert row["alignment"] == row["score"] == pytest.approx(0.3)  # the fallback's prior
    assert f"{row['alignment']:.2f}" in out
    aims = runner.invoke(cli, ["proposals", "telos"])
    assert "Keep the family's files tidy and easy to find." in aims.stdout


async def test_telegram_buttons_answer_once_and_only_for_the_owner(
        make_home: MakeHome, telegram: FakeTelegram) -> None:
    home = make_home(lang="en", METNOS_NOTIFY_CHANNEL="telegram", **NO_QUIET)
    # the first paired: the owner
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA) as (client, _):
        service: TurnService = client.app.state.gateway.service  # type: ignore[attr-defined]
        rows = submit(service, draft(good("fuse"), kind="routine", origin="introvert",
                                     batch="n1"),
                      draft(good("generalise"), kind="routine", origin="introvert",
                            batch="n1"))
        sender = TelegramSender(TOKEN, telegram.base_url)
        delivery = Delivery(service, None, sender)
        try:
            await delivery.propose(now=NOON)
            await delivery.tick()
        finally:
            await sender.close()
        [row] = proposal_rows(service)
        assert row.channel == "telegram" and row.address == f"telegram-{ANNA}"
        await until(telegram, lambda t: any("Proposals from tonight" in s
                                            for s in t.sent_texts(ANNA)), "the proposals")
        [sent] = [c for c in telegram.calls_of("sendMessage", ANNA)
                  if "Proposals from tonight" in str(c.params.get("text"))]
        data = [b["callback_data"] for b in buttons(sent)]
        assert data == [f"pr:{rows[0].id}:y", f"pr:{rows[0].id}:n",
                        f"pr:{rows[1].id}:y", f"pr:{rows[1].id}:n"]
        assert [b["text"] for b in buttons(sent)][:2] == ["✅ Accept 1", "✖ Not 1"]
        message_id = int(sent.result["message_id"])

        stranger = telegram.push_callback(BOB, data[2], message_id, chat_id=ANNA)
        await until(telegram, lambda t: _answered(t, stranger), "the stranger's alert")
        assert fresh(service, rows[1]).status == "delivered" and ran == []
        [refused] = [a for a in audit_of(service, rows[1].id)
                     if a["action"] == "proposal.answer"]
        assert (refused["decision"], refused["outcome"]) == ("deny", "refused")

        first = telegram.push_callback(ANNA, data[0], message_id, language_code="en")
        await until(telegram, lambda t: _answered(t, first), "the answer")
        assert fresh(service, rows[0]).status == "accepted" and ran == [rows[0].id]
        again = telegram.push_callback(ANNA, data[0], message_id, language_code="en")
        await until(telegram, lambda t: _answered(t, again), "the second answer")
        assert ran == [rows[0].id]  # the handler ran once
        edits = telegram.calls_of("editMessageReplyMarkup", ANNA)
        assert edits and [b["callback_data"] for b in buttons(edits[0])] == data[2:]

        no = telegram.push_callback(ANNA, data[3], message_id, language_code="en")
        await until(telegram, lambda t: _answered(t, no), "the dismissal")
        assert fresh(service, rows[1]).status == "dismissed" and ran == [rows[0].id]


def _answered(tg: FakeTelegram, query_id: str) -> bool:
    return any(c.params.get("callback_query_id") == query_id
               for c in tg.calls_of("answerCallbackQuery"))
