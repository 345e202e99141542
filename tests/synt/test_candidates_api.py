"""A candidate through the gateway (owner only): never callable unsigned; signed, the registry
reloads and the next turn calls it; rejected, it is gone and its need closed. The CLI and the
`/synt` page show the same."""

from __future__ import annotations

import json
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import col, select
from typer.testing import CliRunner

from metnos.faces.cli.synt import app as synt_cli
from metnos.features.synt import generate
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep
from metnos.mechanisms.audit.log import audit_log_path, read_tail
from metnos.mechanisms.executors import versions
from metnos.mechanisms.executors.registry import load_registry
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client, served_gateway
from tests.support.pg import free_port
from tests.synt.support import (
    add_proto,
    engine_of,
    job_for,
    last_audit,
    proto,
    script_generation,
)

URL = "/api/synt/candidates"


async def _candidate(home: Home, llm: ScriptedLLM) -> tuple[Engine, str]:
    engine = engine_of(home.settings)
    proto_id = add_proto(engine, want="count_words", have_kind="tst_note",
                         want_kind="tst_count", status="generating")
    script_generation(llm)
    outcome = await generate.generate(home.settings, engine, load_registry(home.settings),
                                      job_for(engine, proto_id))
    assert outcome.ok, outcome
    llm.reset()
    return engine, proto_id


async def _count_words_turn(client: httpx.AsyncClient, llm: ScriptedLLM,
                            engine: Engine) -> TurnStep:
    llm.enqueue_tool_call("word_counter", {"path": "notes/a.txt"})
    llm.enqueue_text("Done.")
    resp = await client.post("/api/turns", json={"text": "count the words of notes/a.txt"})
    assert resp.status_code == 200, resp.text
    turn_id = resp.json()["turn_id"]
    await wait_closed(client, turn_id)
    with db_session(engine) as db:
        return db.exec(select(TurnStep).where(col(TurnStep.turn_id) == turn_id)).one()


async def test_unsigned_is_not_callable_signed_is_callable_by_the_next_turn(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    engine, proto_id = await _candidate(home, scripted_llm)
    (home.workspace / "notes").mkdir()
    (home.workspace / "notes" / "a.txt").write_text("one two three four")
    async with gateway_client(home, prefect=False) as client:
        listed = (await client.get(URL)).json()["candidates"]
        assert [(r["name"], r["passed"], r["failed"]) for r in listed] == [
            ("word_counter", 2, 0)]
        shown = (await client.get(f"{URL}/word_counter")).json()
        assert 'name = "word_counter"' in shown["manifest"] and "words" in shown["code"]
        assert shown["tests"]["sandbox"] == "bwrap" and shown["profile"]["network"] is False
        page = await client.get("/synt")
        assert page.status_code == 200 and "word_counter" in page.text
        assert 'action="/synt/word_counter/sign"' in page.text and "Sign" in page.text

        step = await _count_words_turn(client, scripted_llm, engine)
        assert step.executor == "word_counter" and step.outcome != "done"  # not admitted

        assert (await client.post(f"{URL}/word_counter/sign",
                                  headers={"Authorization": "Bearer wrong"})).status_code == 401
        signed = await client.post(f"{URL}/word_counter/sign")
        assert signed.status_code == 200, signed.text
        assert signed.json()["admitted"] is True
        step = await _count_words_turn(client, scripted_llm, engine)
        assert step.outcome == "done" and step.result is not None
        assert step.result["words"] == 4
        assert (await client.get(URL)).json()["candidates"] == []
    folder = home.path / "executors" / "word_counter"
    assert not (folder / "CANDIDATE.json").exists()
    assert (home.path / "synt" / "signed" / "word_counter.json").is_file()
    marks = versions.read_marks(versions.marks_path(home.settings.keys_dir))
    assert marks["word_counter"].version == "0.1.0"  # the owner's signature is its high-water
    assert proto(engine, proto_id).status == "closed"
    assert any(line["action"] == "synt.sign" for line in read_tail(audit_log_path(
        home.settings), 20))
    engine.dispose()


async def test_a_rejected_candidate_is_gone_and_its_need_closed(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    engine, proto_id = await _candidate(home, scripted_llm)
    async with gateway_client(home, prefect=False) as client:
        resp = await client.post(f"{URL}/word_counter/reject")
        assert resp.status_code == 200, resp.text
        assert (await client.get(URL)).json()["candidates"] == []
        missing = await client.get(f"{URL}/word_counter")
        assert missing.status_code == 404
        assert missing.json()["error"]["key"] == "ERR_SYNT_CANDIDATE_NOT_FOUND"
        page = await client.get("/synt")
        assert "Nessuno strumento candidato ti aspetta." in page.text
    assert not (home.path / "executors" / "word_counter").exists()
    [kept] = list((home.path / "synt" / "rejected").iterdir())
    assert (kept / "main.py").is_file() and "word_counter" not in load_registry(home.settings)
    assert proto(engine, proto_id).status == "closed"
    assert last_audit(home.settings) == ("synt.reject", "deny", "word_counter")
    engine.dispose()


async def test_the_cli_lists_reviews_and_signs_through_the_gateway(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    engine, _ = await _candidate(home, scripted_llm)
    runner = CliRunner()
    with served_gateway(home):
        listed = runner.invoke(synt_cli, ["list"])
        assert listed.exit_code == 0, listed.output
        assert "word_counter" in listed.stdout and "count_words" in listed.stdout
        review = runner.invoke(synt_cli, ["review", "word_counter"])
        assert "== Code ==" in review.stdout and "== Tests in the sandbox ==" in review.stdout
        signed = runner.invoke(synt_cli, ["sign", "word_counter", "--json"])
        assert signed.exit_code == 0, signed.output
        data: dict[str, Any] = json.loads(signed.stdout)
        assert data["status"] == "signed"
        again = runner.invoke(synt_cli, ["sign", "word_counter"])
        assert again.exit_code == 1
        assert "There is no candidate executor called word_counter." in again.stderr
    assert "word_counter" in load_registry(home.settings)
    engine.dispose()
