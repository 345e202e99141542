"""A candidate that stands in for other executors (a promotion's chain, an introvert fusion):
accepting the fusion hands it to the synt with the need read from the manifests; signing the
result makes the H4 "fuse" move (the originals to quarantine), and its undo defuses."""

from __future__ import annotations

from sqlmodel import col, select

from metnos.features.mnestoma import moves
from metnos.features.mnestoma.models import EvolutionMove, ExecutorUse
from metnos.features.proposals.store import Draft, handler_for, submit
from metnos.features.synt import candidates, generate, jobs
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.executors.registry import load_registry
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome
from tests.synt.support import add_proto, install_scan_reader, job_for, script_generation


async def test_a_fusion_is_generated_and_its_signature_quarantines_the_originals(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    settings = home.settings
    engine = install_scan_reader(settings)
    fusion = in_session(engine, submit, Draft(
        kind="fuse", origin="introvert", user_id="owner", title_key="MSG_INTROVERT_FUSE",
        target="t_raster→t_reader",
        payload={"subject": "t_raster+t_reader", "executors": ["t_raster", "t_reader"]}))
    assert fusion is not None
    handler = handler_for("fuse")
    assert handler is not None
    handler(engine, fusion)
    job = jobs.load(settings, fusion.id)
    assert (job.need.have_kind, job.need.want_kind) == ("tst_scan", "tst_words")
    assert job.fuses == ("t_raster", "t_reader") and job.proto is None
    assert jobs.pending(settings) == [fusion.id]

    # the word counter stands in for the pair here: what is checked is the signature's move
    proto_id = add_proto(engine, want="count_words", have_kind="tst_note",
                         want_kind="tst_count")
    script_generation(scripted_llm)
    outcome = await generate.generate(settings, engine, load_registry(settings),
                                      job_for(engine, proto_id, "promote",
                                              ("t_raster", "t_reader")))
    assert outcome.ok, outcome
    candidates.sign(settings, engine, "word_counter")
    with db_session(engine) as db:
        states = {u.name: u.state for u in db.exec(select(ExecutorUse)).all()}
        move = db.exec(select(EvolutionMove).where(col(EvolutionMove.kind) == "fuse")).one()
    assert states == {"t_raster": "quarantined", "t_reader": "quarantined"}
    assert move.target == "word_counter" and "t_raster, t_reader" in move.motivation
    assert "word_counter" in load_registry(settings)
    audit = open_audit_log(settings)
    undone = moves.undo(engine, move.id, moves.Actor(audit))  # the defuse
    audit.close()
    assert undone.kind == "defuse"
    with db_session(engine) as db:
        assert db.exec(select(ExecutorUse)).all() == []  # as before the fusion
    engine.dispose()
