"""The Vaglio on real proposals (real database, the service's registry, scanner and audit log,
the scripted LLM as the judge): the Laws refuse before anything else, the judge answers in a
context of its own (a malformed answer falls back), the bother budget and quiet hours act in
code before any model call, and only what passes is delivered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from metnos.faces.wiring import build_runtime
from metnos.features.proposals import store, vaglio
from metnos.features.proposals.judge import fallback
from metnos.features.proposals.telos import read_telos
from metnos.ground.db.engine import in_session
from metnos.testing.llm_server import ScriptedLLM
from metnos.turns.service import TurnService
from tests.proposals.support import (
    NIGHT,
    NOON,
    audit_of,
    draft,
    fresh,
    judge_requests,
    proposal_rows,
    round_at,
    submit,
)
from tests.support.home import Home, MakeHome

PINNED = {"METNOS_TIMEZONE": "UTC", "METNOS_NOTIFY_QUIET_HOURS": "21:00-07:00"}


@pytest.fixture
async def home(make_home: MakeHome, scripted_llm: ScriptedLLM) -> Home:
    return make_home(llm=scripted_llm, lang="en", **PINNED)


@pytest.fixture
async def service(home: Home) -> AsyncIterator[TurnService]:
    built = await build_runtime(home.settings)
    yield built
    built.engine.dispose()


def aligned(llm: ScriptedLLM, *values: float) -> None:
    llm.enqueue_text(json.dumps({"alignment": list(values)}))


async def test_a_proposal_breaking_a_law_never_reaches_anyone(
        service: TurnService, home: Home, scripted_llm: ScriptedLLM) -> None:
    other = draft("write Anna's notes", kind="routine",
                  action={"executor": "fs_write", "args": {"path": "n.md", "user": "anna"}})
    secret = draft("send the key", kind="routine", action={
        "executor": "fs_write", "args": {"path": "k.txt", "content": home.token}})
    unknown = draft("wipe the disk", kind="routine",
                    action={"executor": "disk_wipe", "args": {}})
    irreversible = draft("run a command", kind="routine",
                         action={"executor": "shell_run", "args": {"command": "ls"}})
    lawful = draft("read the notes", kind="routine",
                   action={"executor": "fs_read", "args": {"path": "notes.md"}})
    rows = submit(service, other, secret, unknown, irreversible, lawful)
    aligned(scripted_llm, 1, 1, 1)  # only the lawful one is ever judged
    await round_at(service, NOON)
    laws = [fresh(service, r).law_key for r in rows]
    assert laws == ["ERR_LAW_OTHER_USER", "ERR_LAW_SECRET_EXFILTRATION",
                    "ERR_LAW_NO_UNDO_RECORD", "ERR_LAW_NO_UNDO_RECORD", None]
    assert [fresh(service, r).status for r in rows] == ["refused"] * 4 + ["delivered"]
    assert all(fresh(service, r).alignment is None for r in rows[:4])  # never judged
    assert len(judge_requests(scripted_llm.requests)) == 1
    [row] = proposal_rows(service)  # one outbox row: the lawful proposal's
    assert fresh(service, rows[4]).outbox_id == row.id and home.token not in row.text
    for refused, law in zip(rows[:4], laws[:4], strict=True):
        [line] = audit_of(service, refused.id)
        assert (line["action"], line["decision"], line["reason"], line["outcome"]) == (
            "proposal.vaglio", "deny", law, "refused")


async def test_under_the_threshold_it_goes_to_the_silent_register(
        service: TurnService, scripted_llm: ScriptedLLM) -> None:
    [row] = submit(service, draft("rename the holiday photos"))
    aligned(scripted_llm, 0.2, 0.1, 0.0)
    await round_at(service, NOON)
    found = fresh(service, row)
    assert (found.status, found.judge, found.reason) == ("silent", "model",
                                                         vaglio.REASON_LOW)
    assert found.alignment == pytest.approx(0.1) and found.score == pytest.approx(0.1)
    assert proposal_rows(service) == []
    [line] = audit_of(service, row.id)
    assert (line["decision"], line["outcome"], line["reason"]) == ("info", "silent",
                                                                   vaglio.REASON_LOW)


async def test_the_judge_has_a_context_of_its_own_and_a_bad_answer_falls_back(
        service: TurnService, scripted_llm: ScriptedLLM) -> None:
    good, bad = submit(service, draft("archive tonight's photos"),
                       draft("tidy the invoices folder"))
    aligned(scripted_llm, 0.9, 0.6, 0.3)
    scripted_llm.enqueue_text("Sure! I'd say about 0.8 overall.")  # not the strict JSON
    await round_at(service, NOON)
    [first, second] = judge_requests(scripted_llm.requests)
    for request in (first, second):
        [message] = request["messages"]  # one message: the judge's prompt, no conversation
        assert message["role"] == "user" and "tools" not in request
        assert "Keep the family's files tidy and easy to find." in message["content"]
        assert "<untrusted-data source=\"proposal\"" in message["content"]
    assert "archive tonight's photos" in first["messages"][0]["content"]
    assert "tidy the invoices folder" in second["messages"][0]["content"]
    judged = fresh(service, good)
    assert judged.judge == "model" and judged.alignment == pytest.approx(0.6)
    fell = fresh(service, bad)
    telos = read_telos(service.settings.workspace, "en")
    expected = fallback(telos, store.text(fell, "en"), "archive", "en").alignment
    assert fell.judge == "fallback" and fell.alignment == pytest.approx(expected)


async def test_without_a_model_the_fallback_judges(make_home: MakeHome) -> None:
    home = make_home(lang="it", **PINNED)
    service = await build_runtime(home.settings)
    tidy, off = submit(service, draft("archiviare le fatture nelle cartelle in ordine"),
                       draft("comprare un gelato", kind="shopping"))
    await round_at(service, NOON)
    assert fresh(service, tidy).judge == fresh(service, off).judge == "fallback"
    high, low = fresh(service, tidy).alignment, fresh(service, off).alignment
    assert high is not None and low is not None and high > low
    assert fresh(service, off).status == "silent"
    service.engine.dispose()


async def test_the_bother_budget_silences_the_fourth_after_three_unanswered(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_EVOLUTION_BOTHER_FACTOR="0.75",
                     **PINNED)
    service = await build_runtime(home.settings)
    rows = []
    for n, what in enumerate(("sort the scans", "archive the bills", "file the receipts")):
        [row] = submit(service, draft(what))
        aligned(scripted_llm, 1, 1, 1)
        await round_at(service, NOON + timedelta(minutes=n))
        rows.append(fresh(service, row))
    assert [r.status for r in rows] == ["delivered"] * 3  # scores 1, 0.75, 0.5625
    assert [r.score for r in rows] == [1.0, 0.75, 0.5625]
    store.decide(service.engine, rows[0].id, "dismiss", user_id="owner")  # still counts
    [fourth] = submit(service, draft("rename the photos"))
    await round_at(service, NOON + timedelta(minutes=5))
    silenced = fresh(service, fourth)
    assert (silenced.status, silenced.reason, silenced.judge) == (
        "silent", vaglio.REASON_BOTHER, None)
    assert len(judge_requests(scripted_llm.requests)) == 3  # no model call for the fourth
    # an accepted schedule has its own quota: the bother budget does not touch it
    [run] = submit(service, draft("the morning mail digest", kind="schedule",
                                  origin="schedule", scheduled=True))
    aligned(scripted_llm, 1, 1, 1)
    await round_at(service, NOON + timedelta(minutes=6))
    assert (fresh(service, run).status, fresh(service, run).score) == ("delivered", 1.0)
    # the window slides: a day later the same budget is whole again
    [later] = submit(service, draft("sort the new scans"))
    aligned(scripted_llm, 1, 1, 1)
    await round_at(service, NOON + timedelta(hours=25))
    assert fresh(service, later).status == "delivered"
    service.engine.dispose()


async def test_the_schedules_quota(make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_EVOLUTION_SCHEDULE_QUOTA="1",
                     **PINNED)
    service = await build_runtime(home.settings)
    first, second = submit(service, draft("digest 1", kind="schedule", scheduled=True),
                           draft("digest 2", kind="schedule", scheduled=True))
    aligned(scripted_llm, 1, 1, 1)
    await round_at(service, NOON)
    assert fresh(service, first).status == "delivered"
    assert (fresh(service, second).status, fresh(service, second).reason) == (
        "silent", vaglio.REASON_QUOTA)
    assert len(judge_requests(scripted_llm.requests)) == 1
    service.engine.dispose()


async def test_nothing_is_judged_or_delivered_in_quiet_hours(
        service: TurnService, scripted_llm: ScriptedLLM) -> None:
    [early] = submit(service, draft("archive the photos"))
    aligned(scripted_llm, 1, 1, 1)
    await round_at(service, NIGHT - timedelta(hours=2))  # 20:30: judged, delivered
    assert fresh(service, early).status == "delivered"
    [late] = submit(service, draft("sort the scans"))
    await vaglio.judge_round(service.engine, service.settings, vaglio.Judges(
        service.registry, service.guard.scanner, service.port, service.audit),
        lang="en", now=NIGHT)  # nothing judged in quiet hours
    assert fresh(service, late).status == "new"
    assert len(judge_requests(scripted_llm.requests)) == 1
    await round_at(service, NIGHT)
    await round_at(service, NIGHT + timedelta(hours=3))  # 01:30, still quiet
    assert fresh(service, late).status == "new" and len(proposal_rows(service)) == 1
    aligned(scripted_llm, 1, 1, 1)
    await round_at(service, NIGHT + timedelta(hours=9))  # 07:30: judged and delivered
    assert fresh(service, late).status == "delivered" and len(proposal_rows(service)) == 2


async def test_queued_proposals_wait_for_the_end_of_quiet_hours(
        service: TurnService, scripted_llm: ScriptedLLM) -> None:
    from metnos.features.proposals import delivery

    [row] = submit(service, draft("archive the photos"))
    judges = vaglio.Judges(service.registry, service.guard.scanner, service.port,
                           service.audit)
    aligned(scripted_llm, 1, 1, 1)
    await vaglio.judge_round(service.engine, service.settings, judges, lang="en",
                             now=NIGHT - timedelta(hours=2))
    assert fresh(service, row).status == "queued"
    assert delivery.place(service.engine, service.settings, now=NIGHT) == []
    assert fresh(service, row).status == "queued" and proposal_rows(service) == []
    [placed] = delivery.place(service.engine, service.settings,
                              now=NIGHT + timedelta(hours=9))
    assert fresh(service, row).status == "delivered" and placed.kind == "proposal"
    assert placed.text == ("💡 A proposal: Shall I take care of this, as you usually do: "
                           "archive the photos?\nTo answer: metnos proposals accept "
                           f"{row.id} (or dismiss {row.id})")  # no chat yet: the CLI


async def test_unanswered_ones_are_ignored_and_never_made_again(
        service: TurnService, scripted_llm: ScriptedLLM) -> None:
    [row] = submit(service, draft("archive the photos"))
    aligned(scripted_llm, 1, 1, 1)
    await round_at(service, NOON)
    await round_at(service, NOON + timedelta(hours=47))
    assert fresh(service, row).status == "delivered"
    await round_at(service, NOON + timedelta(hours=49))
    gone = fresh(service, row)
    assert (gone.status, gone.weight) == ("ignored", 0.5)
    assert [line["action"] for line in audit_of(service, row.id)] == [
        "proposal.vaglio", "proposal.delivered", "proposal.ignored"]
    assert in_session(service.engine, store.submit, draft("archive the photos")) is None


async def test_an_introvert_batch_is_one_message(
        service: TurnService, scripted_llm: ScriptedLLM) -> None:
    rows = submit(service, draft("fuse pdf_ext and pdf_text", kind="fuse", origin="introvert",
                                 batch="night-1"),
                  draft("generalise the three list tools", kind="generalise",
                        origin="introvert", batch="night-1"))
    for _ in rows:
        aligned(scripted_llm, 1, 1, 1)
    await round_at(service, NOON)
    [row] = proposal_rows(service)
    assert row.text.splitlines()[:3] == [
        "💡 Proposals from tonight (2):",
        "1. Shall I take care of this, as you usually do: fuse pdf_ext and pdf_text?",
        "2. Shall I take care of this, as you usually do: generalise the three list tools?"]
    assert {fresh(service, r).outbox_id for r in rows} == {row.id}
