"""The nightly introvert steps: each proposes on a planted case, never across traces, and
specialising needs a measured benefit."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.engine import Engine

from metnos.features.mnestoma import introvert
from metnos.features.mnestoma.models import ExecutorUse, Trace
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatMessage, TurnStep, get_or_create_session, record_turn_start
from metnos.mechanisms.executors.manifest import Manifest, parse_manifest
from tests.mnestoma.traces_fixture import engine_of, plant
from tests.support.home import MakeHome

TEXT_IN = {"path": ("path", "file")}
TEXT_OUT = {"content": ("string", "text")}


def manifest(root: Path, name: str, *, network: bool = False, risk: str = "low",
             effect: str | None = None, inputs: dict[str, tuple[str, str]] = TEXT_IN,
             outputs: dict[str, tuple[str, str]] = TEXT_OUT) -> Manifest:
    """A real manifest.toml for `name`, parsed as the registry parses it."""
    lines = [f'name = "{name}"', 'version = "0.1.0"', f'risk = "{risk}"', "reversible = true",
             "side_effects = false"]
    lines += [f'effect = "{effect}"'] if effect else []
    lines += ["[sandbox]", f"network = {str(network).lower()}"]
    for table, fields in (("inputs", inputs), ("outputs", outputs)):
        for field, (kind_type, kind) in fields.items():
            lines += [f"[{table}.{field}]", f'type = "{kind_type}"', f'kind = "{kind}"',
                      'description = { it = "x", en = "x" }']
            lines += ['access = "read"'] if kind_type == "path" else []
    lines += ["[description]", 'it = "Fa una cosa."', 'en = "Does a thing."',
              "[affinity]", "it = []", "en = []", "[utterances]", "it = []", "en = []"]
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.toml").write_text("\n".join(lines) + "\n")
    (folder / "main.py").write_text("")
    return parse_manifest(folder / "manifest.toml")


def store_traces(engine: Engine, *groups: list[str]) -> None:
    with db_session(engine) as db:
        for members in groups:
            db.add(Trace(generation=1, label=" · ".join(members[:3]), members=members,
                         weight=float(len(members))))


def calls(engine: Engine, executor: str, digests: list[str], *, think: int) -> None:
    """One turn per call of `executor` (that ran), asked by model call `think` (0: none)."""
    with db_session(engine) as db:
        chat = get_or_create_session(db, None, user_id="owner", channel="test", lang="en")
        for n, digest in enumerate(digests):
            turn = record_turn_start(db, session_id=chat.id, channel="test", sender="owner",
                                     text="rename the scan", lang="en")
            db.add(TurnStep(turn_id=turn.id, seq=1, executor=executor, args_digest=digest,
                            decision="allow", outcome="done", think=think, call_id=f"c{n}"))
            db.add(ChatMessage(session_id=chat.id, turn_id=turn.id, role="assistant",
                               tool_calls=[{"id": f"c{n}", "name": executor,
                                            "arguments": json.dumps({"path": "inbox/scan.pdf"})}]))
        used = db.get(ExecutorUse, executor) or ExecutorUse(name=executor)
        used.invocations = 100
        db.add(used)


def test_fuse_proposes_a_dominant_hand_off_of_one_trace_and_never_across(
        make_home: MakeHome, tmp_path: Path) -> None:
    home = make_home(lang="en")
    kinds = {"scan": "pdf", "ocr": "pdf_image", "tag": "image", "pack": "folder",
             "post": "message", "ring": "url"}  # shapes all different: nothing to generalise
    pool = {name: manifest(tmp_path, name, inputs={"x": ("path", kind)},
                           network=name == "post", effect="notify" if name == "ring" else None)
            for name, kind in kinds.items()}
    with engine_of(home.settings) as engine:
        plant(engine, {("scan", "ocr"): 9.0, ("scan", "tag"): 1.0,  # ocr: 90 % of scan's
                       ("ocr", "post"): 8.0,  # dominant, but post needs the network
                       ("tag", "pack"): 9.0,  # dominant, but across two traces
                       ("pack", "ring"): 9.0})  # dominant, but ring has a host effect
        store_traces(engine, ["scan", "ocr", "post", "tag"], ["pack", "ring"])
        report = introvert.run(engine, home.settings, pool)
        again = introvert.run(engine, home.settings, pool)
    assert [(p.kind, p.payload["executors"]) for p in report.proposals] == [
        ("fuse", ["scan", "ocr"])]
    fused = report.proposals[0]
    assert fused.origin == "introvert" and fused.status == "new" and fused.user_id == "owner"
    assert fused.payload["share_out"] == 0.9 and fused.payload["share_in"] == 1.0
    assert fused.title_key == "MSG_INTROVERT_FUSE" and fused.vars["share"] == 90
    assert again.proposals == [] and again.repeated == 1  # never proposed twice
    lines = (home.settings.audit_dir / "audit.jsonl").read_text().splitlines()
    assert sum(json.loads(line)["action"] == "introvert" for line in lines) == 2


def test_generalise_needs_three_of_one_shape_in_one_trace(
        make_home: MakeHome, tmp_path: Path) -> None:
    home = make_home(lang="en")
    csv = {"rows": ("string", "text")}
    pool = {name: manifest(tmp_path, name, outputs=csv)
            for name in ("bank_a", "bank_b", "bank_c", "bank_d")}
    pool["bank_e"] = manifest(tmp_path, "bank_e", outputs={"rows": ("string", "table")})
    with engine_of(home.settings) as engine:
        plant(engine, {("bank_a", "bank_b"): 1.0, ("bank_b", "bank_e"): 1.0,
                       ("bank_c", "bank_d"): 1.0})
        # a, b (and e, another shape) in one trace; c and d, the same shape, in another
        store_traces(engine, ["bank_a", "bank_b", "bank_e"], ["bank_c", "bank_d"])
        assert introvert.run(engine, home.settings, pool).proposals == []
        store_traces_two = [["bank_a", "bank_b", "bank_c", "bank_e"], ["bank_d"]]
        with db_session(engine) as db:
            for members in store_traces_two:
                db.add(Trace(generation=2, label=members[0], members=members, weight=1.0))
        report = introvert.run(engine, home.settings, pool)
    assert [(p.kind, p.payload["executors"]) for p in report.proposals] == [
        ("generalise", ["bank_a", "bank_b", "bank_c"])]
    assert report.proposals[0].payload["batch"] == report.batch


def test_specialise_only_with_its_measured_benefit(make_home: MakeHome, tmp_path: Path) -> None:
    home = make_home(lang="en")
    pool = {"rename": manifest(tmp_path, "rename"), "look": manifest(tmp_path, "look")}
    with engine_of(home.settings) as engine:
        plant(engine, {("look", "rename"): 2.0})
        store_traces(engine, ["rename", "look"])
        calls(engine, "rename", ["d1"] * 14 + ["d2"] * 5, think=1)  # 19 calls: too few
        assert introvert.run(engine, home.settings, pool).proposals == []
        calls(engine, "rename", ["d1"] * 12 + [f"x{n}" for n in range(9)], think=0)
        # 40 calls, d1 in 26 (65 %), but those asked by a model only 14 times: measured
        report = introvert.run(engine, home.settings, pool)
        assert [p.kind for p in report.proposals] == ["specialise"]
        benefit = report.proposals[0].payload["benefit"]
        assert benefit == {"share": 0.65, "calls": 40, "same": 26, "model_calls_saved": 14}
        assert report.proposals[0].payload["args"] == {"path": "inbox/scan.pdf"}

    other = make_home(lang="en")  # the same share, all from the embedded planner: no saving
    with engine_of(other.settings) as engine:
        store_traces(engine, ["rename", "look"])
        calls(engine, "rename", ["d1"] * 20 + ["d2"] * 5, think=0)
        assert introvert.run(engine, other.settings, pool).proposals == []
