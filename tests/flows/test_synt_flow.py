"""The `synt` flow against the session's Prefect server: a first run proposes (a composition
for a need the pool closes, a generation with its cost for one it does not, no model call);
after the owner accepts the generation, the next run writes the candidate, tested in the
sandbox and not admitted."""

from __future__ import annotations

import json

from sqlmodel import col, select

from flows.synt import synt
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import handler_for
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms.executors.registry import load_registry
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome
from tests.synt.support import add_proto, install_scan_reader, proto, script_generation


async def test_the_synt_flow_composes_proposes_and_generates(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_LLM_INPUT_COST_PER_TOKEN="0.000002",
                     METNOS_LLM_OUTPUT_COST_PER_TOKEN="0.00001")
    settings = home.settings
    engine = install_scan_reader(settings)
    composable = add_proto(engine, want="read_scan", have_kind="tst_scan",
                           want_kind="tst_words")
    new = add_proto(engine, want="count_words", have_kind="tst_note", want_kind="tst_count")

    first = await synt()
    assert first["proposed"] == {"composed": [composable], "to_generate": [new], "skipped": []}
    assert first["generated"] == [] and scripted_llm.requests == []

    with db_session(engine) as db:
        row = db.exec(select(Proposal).where(col(Proposal.kind) == "generate")).one()
        row.status = "accepted"  # the owner's answer (the proposals' owner records it)
    handler = handler_for("generate")
    assert handler is not None
    handler(engine, row)
    script_generation(scripted_llm)
    second = await synt()
    assert second["generated"] == [{"ok": True, "name": "word_counter", "stage": None,
                                    "detail": ""}]
    assert len(scripted_llm.requests) == 6
    record = json.loads((home.path / "executors" / "word_counter" / "CANDIDATE.json")
                        .read_text())
    assert record["tests"]["sandbox"] == "bwrap" and record["tests"]["passed"] == 2
    assert "word_counter" not in load_registry(settings)
    assert proto(engine, new).status == "generated"
    third = await synt()  # nothing left to do
    assert third["generated"] == [] and third["proposed"]["to_generate"] == []
    engine.dispose()
