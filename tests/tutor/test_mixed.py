"""Mixed requests in a real turn (SPEC §10), over HTTP through the gateway and the Prefect
flow, without a model: the Tutor explains, quotes the operative clause verbatim and asks once;
a yes in the same conversation runs the clause as a normal turn (the embedded planner plans
it and the policy asks before deleting), a no runs nothing; an expired confirmation, one of
another conversation, one asked before the catalog changed, one already used never run; an
unsafe split asks for two messages; an approval card waiting is never replaced."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update
from sqlmodel import Session, col, select

from metnos.features.tutor.compile import compile_catalog
from metnos.features.tutor.confirm_models import TutorConfirmation
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.models import ChatMessage, utcnow
from metnos.ground.paths import resources_path
from metnos.mechanisms.audit import read_tail
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.tutor_catalog import install_catalog

CASES = {
    "it": {"text": "Spiegami le approvazioni e poi cancella vecchia_relazione.pdf",
           "clause": "cancella vecchia_relazione.pdf", "path": "vecchia_relazione.pdf",
           "yes": "Sì!", "no": "no grazie"},
    "en": {"text": "Explain the approvals and then delete old_report.pdf",
           "clause": "delete old_report.pdf", "path": "old_report.pdf",
           "yes": "yes", "no": "No."},
}


def _home(make_home: MakeHome, compiled_catalog: Path, lang: str, **kw: Any) -> Home:
    home = make_home(lang=lang, **kw)
    install_catalog(compiled_catalog, home.path)
    return home


def _lines(home: Home, action: str) -> list[dict[str, Any]]:
    return [r for r in read_tail(home.settings.audit_dir / "audit.jsonl", 400)
            if r.get("action") == action]


def _rows(home: Home) -> list[TutorConfirmation]:
    with Session(make_engine(database_url(home.settings))) as db:
        return list(db.exec(select(TutorConfirmation)
                            .order_by(col(TutorConfirmation.created_at))).all())


def _change(home: Home, **values: Any) -> None:
    with Session(make_engine(database_url(home.settings))) as db:
        db.exec(update(TutorConfirmation).values(**values))  # type: ignore[call-overload]
        db.commit()


def _user_said(home: Home, turn_id: str) -> list[str | None]:
    with Session(make_engine(database_url(home.settings))) as db:
        return [m.content for m in db.exec(select(ChatMessage).where(
            col(ChatMessage.turn_id) == turn_id, col(ChatMessage.role) == "user")).all()]


async def _say(client: httpx.AsyncClient, text: str, session_id: str | None = None,
               deny: bool = True) -> dict[str, Any]:
    resp = await client.post("/api/turns", json={"text": text, "session_id": session_id})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    if deny and body["status"] == "awaiting_approval":  # the clause reached the policy: no
        for approval in body["approvals"]:
            denied = await client.post(f"/api/approvals/{approval['approval_id']}",
                                       json={"decision": "deny"})
            assert denied.status_code == 200, denied.text
    if deny:
        await wait_closed(client, body["turn_id"])
    return body


def _asked(body: dict[str, Any], lang: str) -> None:
    case = CASES[lang]
    question = i18n.get("TUTOR_MIXED_CONFIRM", lang, clause=case["clause"])
    assert body["status"] == "completed" and body["approvals"] == []
    assert body["reply"].endswith(question), body["reply"]
    assert "](/docs/" in body["reply"]  # the explanation, from the docs, with its sources


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_explained_confirmed_once_then_run_as_a_normal_turn(
        make_home: MakeHome, compiled_catalog: Path, prefect_api: str, lang: str) -> None:
    home = _home(make_home, compiled_catalog, lang)
    case = CASES[lang]
    async with gateway_client(home) as client:
        body = await _say(client, case["text"])
        _asked(body, lang)
        session = body["session_id"]
        [row] = _rows(home)
        assert row.clause == case["clause"] and row.session_id == session
        assert row.user_id == "owner" and row.consumed_at is None
        assert row.expires_at - row.created_at == timedelta(seconds=300)
        asked = _lines(home, "tutor.confirm_asked")
        assert asked[-1]["turn_id"] == body["turn_id"] and asked[-1]["action_id"] == row.id

        # the yes: the clause, exactly, is the turn's text; the planner plans it and the
        # policy asks before deleting (nothing is bypassed)
        ran = await _say(client, case["yes"], session)
        assert ran["status"] == "awaiting_approval", ran["reply"]
        [approval] = ran["approvals"]
        assert approval["executor"] == "fs_delete"
        assert Path(approval["args"]["path"]).name == case["path"]
        consumed = _lines(home, "tutor.confirm_consumed")
        assert consumed[-1]["turn_id"] == ran["turn_id"] and consumed[-1]["decision"] == "allow"
        [row] = _rows(home)
        assert row.outcome == "ran" and row.consumed_at is not None
        await wait_closed(client, ran["turn_id"])
        assert _user_said(home, ran["turn_id"]) == [case["clause"]]  # as the turn's text

        # a second yes finds it used: nothing runs again
        again = await _say(client, case["yes"], session)
        assert again["status"] == "completed" and again["approvals"] == []
        refused = _lines(home, "tutor.confirm_refused")
        assert refused[-1]["reason"] == "consumed" and refused[-1]["decision"] == "deny"
        assert refused[-1]["turn_id"] == again["turn_id"]


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_a_no_runs_nothing(make_home: MakeHome, compiled_catalog: Path, prefect_api: str,
                                 lang: str) -> None:
    home = _home(make_home, compiled_catalog, lang)
    case = CASES[lang]
    async with gateway_client(home) as client:
        body = await _say(client, case["text"])
        _asked(body, lang)
        declined = await _say(client, case["no"], body["session_id"])
        assert declined["reply"] == i18n.get("TUTOR_MIXED_DECLINED", lang)
        assert declined["approvals"] == []
        assert _lines(home, "tutor.confirm_declined")[-1]["turn_id"] == declined["turn_id"]
        late = await _say(client, case["yes"], body["session_id"])
        assert late["status"] == "completed" and late["approvals"] == []
    assert [r.outcome for r in _rows(home)] == ["declined"]


async def test_expired_or_asked_before_the_catalog_changed_never_runs(
        make_home: MakeHome, compiled_catalog: Path, prefect_api: str, tmp_path: Path) -> None:
    home = _home(make_home, compiled_catalog, "en")
    case = CASES["en"]
    async with gateway_client(home) as client:
        body = await _say(client, case["text"])
        _asked(body, "en")
        _change(home, expires_at=utcnow() - timedelta(seconds=1))
        late = await _say(client, case["yes"], body["session_id"])
        assert late["reply"] == i18n.get("TUTOR_MIXED_EXPIRED", "en")
        assert late["approvals"] == []
        assert _lines(home, "tutor.confirm_refused")[-1]["reason"] == "expired"

        body = await _say(client, case["text"])
        _asked(body, "en")
        docs = tmp_path / "docs"  # the published docs change: a new catalog is admitted
        shutil.copytree(resources_path("docs"), docs)
        with (docs / "en" / "quick-tour.md").open("a", encoding="utf-8") as page:
            page.write("\n\n## A new section\n\nMetnos now explains this too.\n")
        compile_catalog(home.path, docs_dir=docs)
        changed = await _say(client, case["yes"], body["session_id"])
        assert changed["reply"] == i18n.get("TUTOR_MIXED_CHANGED", "en")
        assert changed["approvals"] == []
        assert _lines(home, "tutor.confirm_refused")[-1]["reason"] == "catalog"
    assert [r.outcome for r in _rows(home)] == ["expired", "catalog"]


async def test_bound_to_its_conversation(make_home: MakeHome, compiled_catalog: Path,
                                         prefect_api: str) -> None:
    home = _home(make_home, compiled_catalog, "en")
    case = CASES["en"]
    async with gateway_client(home) as client:
        body = await _say(client, case["text"])
        _asked(body, "en")
        elsewhere = await _say(client, "yes")  # a new conversation: a normal turn
        assert elsewhere["session_id"] != body["session_id"]
        assert elsewhere["approvals"] == []
        refused = _lines(home, "tutor.confirm_refused")[-1]
        assert refused["reason"] == "session" and refused["session_id"] == elsewhere["session_id"]
        [row] = _rows(home)
        assert row.consumed_at is None  # still its own conversation's
        ran = await _say(client, "go ahead", body["session_id"])
        assert [a["executor"] for a in ran["approvals"]] == ["fs_delete"]


async def test_any_other_message_drops_it(make_home: MakeHome, compiled_catalog: Path,
                                          prefect_api: str) -> None:
    home = _home(make_home, compiled_catalog, "en")
    async with gateway_client(home) as client:
        body = await _say(client, CASES["en"]["text"])
        _asked(body, "en")
        await _say(client, "What does quick-tour.md contain?", body["session_id"])
        late = await _say(client, "yes", body["session_id"])
        assert late["approvals"] == []
    assert [r.outcome for r in _rows(home)] == ["dropped"]


@pytest.mark.parametrize(("lang", "text", "reason"), [
    ("en", "Explain the approvals, then delete a.pdf and then delete b.pdf", "operative_clauses"),
    ("it", "Spiegami le approvazioni e poi cancella a.pdf e poi cancella b.pdf",
     "operative_clauses"),
    ("en", "Explain how to delete a file and then do it", "uncertain"),
    ("it", "Spiegami le approvazioni e poi cancellalo", "refers_back"),
])
async def test_an_unsafe_split_asks_for_two_messages(
        make_home: MakeHome, compiled_catalog: Path, prefect_api: str, lang: str, text: str,
        reason: str) -> None:
    home = _home(make_home, compiled_catalog, lang)
    async with gateway_client(home) as client:
        body = await _say(client, text)
        assert body["reply"] == i18n.get("TUTOR_MIXED_SEPARATELY", lang)
        assert body["approvals"] == []
        answered = _lines(home, "tutor.answered")[-1]
        assert answered["outcome"] == f"unsafe:{reason}"
    assert _rows(home) == []


@pytest.mark.parametrize(("lang", "text"), [
    ("en", "find my invoices then move them to archive and then tell me how many"),
    pytest.param(
        "it", "cancella a.pdf, poi cancella b.pdf e poi dimmi cosa resta",
        marks=pytest.mark.xfail(strict=False, reason=(
            "issue 27 regression, left open: with the person-phrased keywords in the catalog "
            "'dimmi cosa resta' binds to a docs section, so the Tutor asks to send the question "
            "and the request separately instead of leaving the chain to the loop"))),
])
async def test_a_chain_of_the_users_own_actions_stays_the_loops(
        make_home: MakeHome, compiled_catalog: Path, prefect_api: str, lang: str,
        text: str) -> None:
    home = _home(make_home, compiled_catalog, lang)
    async with gateway_client(home) as client:
        body = await _say(client, text)
        assert body["reply"] != i18n.get("TUTOR_MIXED_SEPARATELY", lang)
    assert not _lines(home, "tutor.answered") and _rows(home) == []


async def test_an_open_approval_card_is_not_replaced(make_home: MakeHome, compiled_catalog: Path,
                                                     prefect_api: str) -> None:
    home = _home(make_home, compiled_catalog, "en")
    async with gateway_client(home) as client:
        waiting = await _say(client, "Delete notes.md", deny=False)
        assert waiting["status"] == "awaiting_approval"
        body = await _say(client, CASES["en"]["text"], waiting["session_id"])
        asked = i18n.get("TUTOR_MIXED_CONFIRM", "en", clause=CASES["en"]["clause"])
        assert asked not in body["reply"]  # no confirmation asked: the loop took the message
        aside = _lines(home, "tutor.stepped_aside")[-1]
        assert aside["reason"] == "open_dialogue" and aside["turn_id"] == body["turn_id"]
        assert not _lines(home, "tutor.confirm_asked")
        [card] = waiting["approvals"]
        denied = await client.post(f"/api/approvals/{card['approval_id']}",
                                   json={"decision": "deny"})
        assert denied.status_code == 200, denied.text
        await wait_closed(client, waiting["turn_id"])
    assert _rows(home) == []


async def test_with_a_model_the_loop_gets_the_clause_as_the_turns_text(
        make_home: MakeHome, scripted_llm: ScriptedLLM, compiled_catalog: Path,
        prefect_api: str) -> None:
    home = _home(make_home, compiled_catalog, "en", llm=scripted_llm)
    case = CASES["en"]
    done = "There is no old_report.pdf in the workspace."
    # the loop's calls carry the tools; a Tutor composition by the model, if any, does not
    # (it gets an answer of its own: a failed call would rightly open the model's breaker)
    scripted_llm.respond_with(lambda body: done if body.get("tools") else
                              "The workspace is the folder Metnos may touch.")
    async with gateway_client(home) as client:
        body = await _say(client, case["text"])
        question = i18n.get("TUTOR_MIXED_CONFIRM", "en", clause=case["clause"])
        assert body["reply"].endswith(question), body["reply"]
        assert not [r for r in scripted_llm.requests if r.get("tools")]  # the loop: not yet
        ran = await _say(client, "yes", body["session_id"])
        assert ran["reply"] == done
    [request] = [r for r in scripted_llm.requests if r.get("tools")]
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert users[-1] == case["clause"]  # exactly the clause, never rephrased
    assert users[:-1] == [case["text"]]  # the request it came from, in the history
