"""Generate only when nothing composes: the cost is proposed first (no model call), and an
accepted generation runs the seven stages with a scripted model, its tests in the real
sandbox; a failing or near-duplicate candidate is never proposed, an unsigned one never
admitted."""

from __future__ import annotations

import json

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import handler_for
from metnos.features.synt import cascade, generate, jobs
from metnos.ground.db.engine import session as db_session
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import load_registry
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome
from tests.synt.support import (
    add_proto,
    engine_of,
    install,
    job_for,
    last_audit,
    proto,
    script_generation,
)

PRICES = {"METNOS_LLM_INPUT_COST_PER_TOKEN": "0.000002",
          "METNOS_LLM_OUTPUT_COST_PER_TOKEN": "0.00001"}


def _proposals(engine: Engine, kind: str) -> list[Proposal]:
    with db_session(engine) as db:
        return list(db.exec(select(Proposal).where(col(Proposal.kind) == kind)).all())


def _accept(engine: Engine, row: Proposal) -> None:
    """What the owner's accept does (the proposals' owner sets the status, then the handler)."""
    with db_session(engine) as db:
        stored = db.get(Proposal, row.id)
        assert stored is not None
        stored.status = "accepted"
    handler = handler_for(row.kind)
    assert handler is not None
    handler(engine, row)


def _need(settings: Settings, engine: Engine) -> str:
    return add_proto(engine, want="count_words", have_kind="tst_note", want_kind="tst_count")


async def test_a_need_nothing_closes_is_proposed_for_generation_with_its_cost(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", **PRICES)
    engine = engine_of(home.settings)
    proto_id = _need(home.settings, engine)
    outcome = cascade.check(home.settings, engine, load_registry(home.settings))
    assert outcome.to_generate == [proto_id] and outcome.composed == []
    [row] = _proposals(engine, "generate")
    # 2 attempts × (14,400 prompt × 2e-6 + 6,200 completion × 1e-5) = 0.1816 USD
    assert row.vars == {"capability": "count_words", "cost": "0.18"}
    assert row.title_key == "PROPOSAL_SYNT_GENERATE"
    assert abs(row.payload["cost_usd"] - 0.1816) < 1e-9
    assert scripted_llm.requests == []  # nothing is spent before the owner accepts
    assert proto(engine, proto_id).status == "proposed"
    engine.dispose()


async def test_no_generation_is_proposed_above_the_cap(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_EVOLUTION_SYNT_MAX_COST_USD="0.1",
                     **PRICES)
    engine = engine_of(home.settings)
    proto_id = _need(home.settings, engine)
    assert cascade.check(home.settings, engine, load_registry(home.settings)).skipped == [
        proto_id]
    assert _proposals(engine, "generate") == []
    assert proto(engine, proto_id).status == "closed"
    assert last_audit(home.settings) == ("synt.generate", "deny", "SYNT_OVER_COST_CAP")
    engine.dispose()


async def test_an_unknown_price_is_said_in_the_proposal(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")  # the scripted model has no known price
    engine = engine_of(home.settings)
    proto_id = _need(home.settings, engine)
    assert cascade.check(home.settings, engine, load_registry(home.settings)).to_generate == [
        proto_id]
    [row] = _proposals(engine, "generate")
    assert row.title_key == "PROPOSAL_SYNT_GENERATE_UNPRICED" and row.vars["cost"] == "?"
    assert scripted_llm.requests == []
    engine.dispose()


async def test_an_accepted_generation_writes_a_candidate_tested_in_the_sandbox(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", **PRICES)
    settings, engine = home.settings, engine_of(home.settings)
    proto_id = _need(settings, engine)
    cascade.check(settings, engine, load_registry(settings))
    [row] = _proposals(engine, "generate")
    _accept(engine, row)
    assert proto(engine, proto_id).status == "generating"
    assert jobs.pending(settings) == [row.id]
    job = jobs.load(settings, row.id)
    assert (job.kind, job.proto, job.need.want_kind) == ("generate", proto_id, "tst_count")

    scripted_llm.enqueue_text("I think a word counter would do.")  # not JSON: retried once
    script_generation(scripted_llm)
    outcome = await generate.generate(settings, engine, load_registry(settings), job)
    assert outcome.ok, outcome
    assert len(scripted_llm.requests) == 7
    retry = json.dumps(scripted_llm.requests[1]["messages"])
    assert "not JSON" in retry  # the error was fed back
    folder = settings.home / "executors" / "word_counter"
    record = json.loads((folder / "CANDIDATE.json").read_text())
    tests = record["tests"]
    assert tests["sandbox"] == "bwrap" and (tests["passed"], tests["failed"]) == (2, 0)
    assert all(case["ok"] and case["duration_s"] > 0 for case in tests["cases"])
    assert record["need"]["proto"] == proto_id and record["calls"] == 7
    assert set(record["stages"]) == {"spec", "manifest", "profile", "code", "tests", "review"}
    assert "[sandbox]" in (folder / "manifest.toml").read_text()
    registry = load_registry(settings)
    assert "word_counter" not in registry  # never admitted unsigned
    assert registry.refusal("word_counter") == (
        "ERR_EXECUTOR_CANDIDATE", {"name": "word_counter"})
    assert proto(engine, proto_id).status == "generated"
    [candidate] = _proposals(engine, "candidate")
    assert candidate.payload == {"name": "word_counter", "proto": proto_id}
    assert jobs.pending(settings) == [] and jobs.load(settings, row.id).status == "done"
    engine.dispose()


async def test_a_candidate_whose_tests_fail_in_the_sandbox_is_never_proposed(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    settings, engine = home.settings, engine_of(home.settings)
    proto_id = _need(settings, engine)
    script_generation(scripted_llm, offset=1)  # counts one word too many
    outcome = await generate.generate(settings, engine, load_registry(settings),
                                      job_for(engine, proto_id))
    assert not outcome.ok and outcome.stage == "sandbox_tests"
    assert len(scripted_llm.requests) == 5  # no review of a failing candidate
    assert not (settings.home / "executors" / "word_counter").exists()
    [kept] = list((settings.home / "synt" / "failed").iterdir())
    record = json.loads((kept / "CANDIDATE.json").read_text())
    assert record["tests"]["failed"] == 2 and record["failed_at"] == "sandbox_tests"
    assert record["tests"]["cases"][0]["wrong"] == {"words": {"expected": 3, "got": 4}}
    assert _proposals(engine, "candidate") == []
    assert proto(engine, proto_id).status == "closed"
    assert last_audit(settings) == ("synt.candidate", "deny", "SYNT_FAILED_sandbox_tests")
    engine.dispose()


async def test_a_near_duplicate_of_an_admitted_executor_is_refused(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    settings, engine = home.settings, engine_of(home.settings)
    install(settings, "t_counter", {"file": "tst_note"}, {"n": "tst_count"},
            description="Count the words of a text file in the workspace.")
    proto_id = _need(settings, engine)
    script_generation(scripted_llm)
    outcome = await generate.generate(settings, engine, load_registry(settings),
                                      job_for(engine, proto_id))
    assert not outcome.ok and "near-duplicate of t_counter" in outcome.detail
    assert len(scripted_llm.requests) == 2  # stopped at the manifest: nothing more spent
    assert not (settings.home / "executors" / "word_counter").exists()
    assert _proposals(engine, "candidate") == []
    engine.dispose()


async def test_without_a_model_nothing_is_proposed_for_generation(
        make_home: MakeHome) -> None:
    home = make_home(lang="en")
    engine = engine_of(home.settings)
    proto_id = _need(home.settings, engine)
    assert cascade.check(home.settings, engine, load_registry(home.settings)).skipped == [
        proto_id]
    assert _proposals(engine, "generate") == []
    assert proto(engine, proto_id).status == "open"  # proposed once a model is configured
    engine.dispose()
