""""As usual?" (issue 30): a person who files the day's photos around noon on five days gets
one proposal, in the lead time before noon of the next day, never in quiet hours; accepting it
runs their own words as a turn through the policy (it asks before moving files named by what
it found, as a typed message does; approved, the photos really move); dismissed twice, it
goes silent. The real gateway, database and sandbox, the delivery loop's round at chosen
times; the scripted model plans the turns (and, asked by the Vaglio, answers something the
judge does not take, so the judge without a model decides)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import update
from sqlmodel import Session, col, select

from metnos.features.proposals import habits
from metnos.features.proposals.models import Proposal
from metnos.features.reminders.outbox import Outbox
from metnos.ground import i18n
from metnos.ground.db.models import Turn
from metnos.testing.llm_server import ScriptedLLM
from metnos.turns.service import TurnService
from tests.approvals.test_approval_flow import answer
from tests.gateway.test_turns import wait_closed
from tests.proposals.support import round_at
from tests.support.home import Home, MakeHome, gateway_client

ASK = "archivia le foto di oggi"
TODAY = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
HABIT = [-15, -14, -13, -12, -11]  # days (from today) the person filed the photos...
MINUTES = [-10, 5, 0, 12, -3]  # ...at these minutes from noon (UTC, the home's zone)
ENV = {"METNOS_TIMEZONE": "UTC", "METNOS_NOTIFY_QUIET_HOURS": "",
       "METNOS_POLICY_REVERSIBLE_WITHOUT_ASKING": "true"}


def script_filing(llm: ScriptedLLM, workspace: Path, name: str) -> None:
    """A photo in the inbox, and the model's calls that file it under foto/."""
    (workspace / "inbox").mkdir(exist_ok=True)
    (workspace / "inbox" / name).write_bytes(b"\xff\xd8\xff photo")
    llm.enqueue_tool_call("fs_find", {"pattern": "inbox/*.jpg"})
    llm.enqueue_tool_call("fs_move", {"src": f"inbox/{name}", "dst": f"foto/2026/{name}"})
    llm.enqueue_text("Fatto.")


async def build_habit(client: httpx.AsyncClient, service: TurnService, home: Home,
                      llm: ScriptedLLM) -> None:
    """Five real turns, then dated back to their evenings (the clock the habit reads)."""
    for n, (day, minute) in enumerate(zip(HABIT, MINUTES, strict=True)):
        script_filing(llm, home.workspace, f"foto-{n}.jpg")
        body = (await client.post("/api/turns", json={"text": ASK, "lang": "it"})).json()
        await answer(client, body, "approve")  # the move, after the names it found: asks
        turn = await wait_closed(client, body["turn_id"])
        assert [(x["executor"], x["outcome"]) for x in turn["steps"]] == [
            ("fs_find", "done"), ("fs_move", "done")], turn
        with Session(service.engine) as db:
            db.execute(update(Turn).where(col(Turn.id) == body["turn_id"]).values(
                created_at=TODAY + timedelta(days=day, minutes=minute)))
            db.commit()


def offers(service: TurnService) -> list[Proposal]:
    with Session(service.engine) as db:
        return list(db.exec(select(Proposal).where(Proposal.kind == habits.KIND)
                            .order_by(col(Proposal.created_at))))


async def round_on(service: TurnService, llm: ScriptedLLM, day: int, minute: int, *,
                   judged: bool = True) -> None:
    """The delivery loop's round at `day`, `minute` from noon; `judged`: a new offer is
    expected, whose judge asks the model first."""
    if judged:
        llm.enqueue_text("(not a judgement)")
    await round_at(service, TODAY + timedelta(days=day, minutes=minute))


@asynccontextmanager
async def with_habit(home: Home, llm: ScriptedLLM
                     ) -> AsyncIterator[tuple[httpx.AsyncClient, TurnService]]:
    """The home's gateway (plain runner), after five noons of filing photos."""
    async with gateway_client(home, prefect=False) as client:
        service: TurnService = client.app.state.gateway.service  # type: ignore[attr-defined]
        await build_habit(client, service, home, llm)
        yield client, service


async def test_a_habit_is_offered_once_before_its_time_and_accepting_runs_it(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="it", autonomy="Full", **ENV)
    async with with_habit(home, scripted_llm) as (client, service):
        with Session(service.engine) as db:
            [habit] = habits.find_habits(db, service.settings, TODAY - timedelta(days=9),
                                         service.registry.changes_something)
        assert (habit.key, habit.time(), habit.text) == ("fs_move|dir:foto", "12:00", ASK)

        await round_at(service, TODAY + timedelta(days=-9, minutes=-45))  # too early
        assert offers(service) == []
        await round_on(service, scripted_llm, -9, -20)  # in the lead time
        await round_on(service, scripted_llm, -9, -10, judged=False)  # the same day: once
        [offer] = offers(service)
        assert (offer.origin, offer.status) == ("trace", "delivered"), offer
        with Session(service.engine) as db:
            [sent] = db.exec(select(Outbox).where(Outbox.id == offer.outbox_id)).all()
        assert i18n.get("MSG_PROPOSAL_AS_USUAL", "it", time="12:00", text=ASK) in sent.text

        script_filing(scripted_llm, home.workspace, "oggi.jpg")
        resp = await client.post(f"/api/proposals/{offer.id}/accept")
        assert resp.status_code == 200, resp.text
        pending = await _waiting(client)  # the accepted turn asks, as a typed one does
        assert pending["executor"] == "fs_move"
        decided = await client.post(f"/api/approvals/{pending['approval_id']}",
                                    json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        await _until_reply(service)
    assert (home.workspace / "foto" / "2026" / "oggi.jpg").exists()
    assert not (home.workspace / "inbox" / "oggi.jpg").exists()
    lines = service.audit.tail(50)
    moved = [x for x in lines if x["action"] == "fs_move" and x["channel"] == "proposal"]
    assert [x["decision"] for x in moved] == ["ask", "allow"], moved  # through the policy
    assert any(x["action"] == "proposal.answer" and x["outcome"] == "accepted" for x in lines)


async def test_in_quiet_hours_it_goes_to_the_silent_register(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Full",
                     **{**ENV, "METNOS_NOTIFY_QUIET_HOURS": "11:30-12:30"})
    async with with_habit(home, scripted_llm) as (client, service):
        await round_on(service, scripted_llm, -9, -20, judged=False)
        [quiet] = offers(service)
    assert (quiet.status, quiet.reason) == ("silent", habits.REASON_QUIET)
    assert quiet.outbox_id is None  # never delivered


async def test_dismissed_twice_it_is_not_offered_again(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Full", **ENV)
    async with with_habit(home, scripted_llm) as (client, service):
        for day in (-9, -6):  # days apart: the bother budget of one day is spent by then
            await round_on(service, scripted_llm, day, -20)
            offer = offers(service)[-1]
            assert offer.status == "delivered", offer
            resp = await client.post(f"/api/proposals/{offer.id}/dismiss")
            assert resp.status_code == 200, resp.text
        await round_on(service, scripted_llm, -3, -20, judged=False)
        last = offers(service)[-1]
    assert (last.status, last.reason) == ("silent", habits.REASON_DISMISSED)
    assert [o.status for o in offers(service)] == ["dismissed", "dismissed", "silent"]


async def _waiting(client: httpx.AsyncClient) -> dict[str, Any]:
    for _ in range(300):
        found = (await client.get("/api/approvals")).json()["approvals"]
        if found:
            return dict(found[0])
        await asyncio.sleep(0.1)
    raise AssertionError("the accepted habit's turn never asked")


async def _until_reply(service: TurnService) -> None:
    """The accepted habit's turn ends and its reply goes where the offer went."""
    for _ in range(300):
        with Session(service.engine) as db:
            done = db.exec(select(Outbox).where(Outbox.kind == "message")).all()
        if done:  # after the approval: the turn's final words, not its question
            assert done[0].text == i18n.get("MSG_PROPOSAL_AS_USUAL_DONE", "it", reply="Fatto.")
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the accepted habit's reply never came")
