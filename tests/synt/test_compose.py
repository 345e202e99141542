"""Compose first: a chain of admitted executors found in code closes a need, no model asked;
accepted, it is a move, a hint for the model, and after enough uses a promotion proposal."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos.features.mnestoma import moves
from metnos.features.mnestoma.models import EvolutionMove, ExecutorUse
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import handler_for
from metnos.features.synt import _common, cascade, composition
from metnos.features.synt.compose import Need, find_chain, pool
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.audit.log import audit_log_path, read_tail
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.executors.registry import ExecutorSpec, Registry, load_registry
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client
from tests.synt.support import add_proto, install_scan_reader, manifest_toml, proto

NEED = Need(src="", capability="read_scan", have_kind="tst_scan", want_kind="tst_words")


def _ran(engine: Engine, turn_id: str) -> list[str]:
    """The executors a turn ran, in order (what the lead passes to `observe`)."""
    with db_session(engine) as db:
        rows = db.exec(select(TurnStep).where(col(TurnStep.turn_id) == turn_id,
                                              col(TurnStep.outcome) == "done")
                       .order_by(col(TurnStep.seq))).all()
    return [row.executor for row in rows]


def _manifest(name: str, inputs: dict[str, str], outputs: dict[str, str],
              risk: str = "low") -> Manifest:
    return Manifest.model_validate(tomllib.loads(manifest_toml(name, inputs, outputs,
                                                               risk=risk)))


def _pool() -> dict[str, Manifest]:
    return {"t_raster": _manifest("t_raster", {"path": "tst_scan"}, {"image": "tst_picture"}),
            "t_reader": _manifest("t_reader", {"image": "tst_picture"}, {"text": "tst_words"}),
            "t_other": _manifest("t_other", {"path": "tst_note"}, {"text": "tst_words"})}


def test_a_two_step_chain_closes_the_need() -> None:
    chain = find_chain(NEED, _pool())
    assert chain is not None and chain.executors == ("t_raster", "t_reader")


def test_shortest_first_then_lowest_risk() -> None:
    manifests = {**_pool(),
                 "t_direct": _manifest("t_direct", {"path": "tst_scan"},
                                       {"text": "tst_words"}, risk="high")}
    assert find_chain(NEED, manifests).executors == ("t_direct",)  # type: ignore[union-attr]
    manifests["t_safe"] = _manifest("t_safe", {"path": "tst_scan"}, {"out": "tst_words"})
    assert find_chain(NEED, manifests).executors == ("t_safe",)  # type: ignore[union-attr]


def test_the_source_and_unfillable_inputs_are_never_used() -> None:
    manifests = _pool()
    assert find_chain(Need("t_raster", "read_scan", "tst_scan", "tst_words"), manifests) is None
    manifests["t_reader"] = _manifest("t_reader", {"image": "tst_picture",
                                                   "glossary": "tst_lexicon"},
                                      {"text": "tst_words"})
    assert find_chain(NEED, manifests) is None  # nothing before gives a tst_lexicon
    assert find_chain(Need("", "x", "", "tst_words"), manifests) is None  # no kinds, no search


def test_quarantined_executors_are_left_out_of_the_pool(tmp_path: Path) -> None:
    specs = [ExecutorSpec(m, tmp_path / n, hashlib.sha256(n.encode()).hexdigest())
             for n, m in _pool().items()]
    assert find_chain(NEED, pool(Registry(specs), {"t_reader"})) is None
    assert find_chain(NEED, pool(Registry(specs))) is not None


async def test_a_chain_of_the_pool_is_proposed_with_no_model_call_accepted_and_promoted(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_EVOLUTION_PROMOTE_AFTER="2",
                     METNOS_NOTIFY_QUIET_HOURS="")
    settings = home.settings
    engine = install_scan_reader(settings)
    proto_id = add_proto(engine, want="read_scan", have_kind="tst_scan", want_kind="tst_words")
    add_proto(engine, want="not_yet", have_kind="tst_scan", want_kind="tst_words", count=4)
    with db_session(engine) as db:  # a quarantined executor is not part of the pool
        db.add(ExecutorUse(name="fs_read", state="quarantined"))

    outcome = cascade.check(settings, engine, load_registry(settings))
    assert outcome.composed == [proto_id] and outcome.to_generate == []
    assert scripted_llm.requests == []  # code, not a model guess
    assert proto(engine, proto_id).status == "proposed"
    with db_session(engine) as db:
        row = db.exec(select(Proposal).where(col(Proposal.kind) == "compose")).one()
    assert row.payload == {"chain": ["t_raster", "t_reader"], "proto": proto_id}
    assert row.vars["chain"] == "t_raster → t_reader" and row.status == "new"
    assert cascade.check(settings, engine, load_registry(settings)).composed == []  # once

    handler = handler_for("compose")
    assert handler is not None
    handler(engine, row)
    assert proto(engine, proto_id).status == "composed"
    with db_session(engine) as db:
        move = db.exec(select(EvolutionMove).where(col(EvolutionMove.kind) == "compose")).one()
    assert move.target == "t_raster → t_reader"
    assert move.before["proto_mnest"]["rows"] == [[proto_id, "proposed"]]  # the undo's
    lines = read_tail(audit_log_path(settings), 5)
    assert any(line["action"] == "evolution.compose" and line["action_id"] == move.id
               and move.audit_seq == line["seq"] for line in lines)
    assert composition.hints(engine, ["t_raster", "t_reader", "fs_read"], "en") == [
        "To turn tst_scan into tst_words: t_raster → t_reader."]
    assert composition.hints(engine, ["t_raster"], "en") == []  # only for the tools offered

    (home.workspace / "scan.pdf").write_text("x")
    async with gateway_client(home, prefect=False) as client:
        for turn in range(2):
            scripted_llm.enqueue_tool_call("t_raster", {"path": "scan.pdf"})
            scripted_llm.enqueue_tool_call("t_reader", {"image": "scan.pdf"})
            scripted_llm.enqueue_text(f"Read it ({turn}).")
            resp = await client.post("/api/turns", json={"text": "read the scan"})
            assert resp.status_code == 200, resp.text
            turn_id = resp.json()["turn_id"]
            await wait_closed(client, turn_id)
            assert _ran(engine, turn_id) == ["t_raster", "t_reader"]
            system = scripted_llm.requests[-1]["messages"][0]
            assert system["role"] == "system"  # the accepted composition, as a hint
            assert "To turn tst_scan into tst_words: t_raster → t_reader." in system["content"]
            with db_session(engine) as db:  # the closed turn's memory hook counted its use
                made = list(db.exec(select(Proposal).where(col(Proposal.kind) == "promote")))
            assert len(made) == turn  # promote_after=2: the second use proposes it
    assert [p.kind for p in made] == ["promote"] and made[0].title_key == \
        "PROPOSAL_SYNT_PROMOTE_UNPRICED"
    assert made[0].payload["chain"] == ["t_raster", "t_reader"] and made[0].origin == \
        "composition"
    assert made[0].user_id == _common.OWNER
    audit = open_audit_log(settings)  # the composition is taken back like any move
    undone = moves.undo(engine, move.id, moves.Actor(audit))
    audit.close()
    assert undone.undoes == move.id and proto(engine, proto_id).status == "proposed"
    assert composition.hints(engine, ["t_raster", "t_reader"], "en") == []
    engine.dispose()
