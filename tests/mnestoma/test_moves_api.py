"""The evolution API and `metnos evolution` through the real gateway: the owner's moves with a
motivation, the history, undo (byte-for-byte) and its refusals in the user's language, each
with its audit line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from metnos.faces.cli.evolution import app as evolution_cli
from metnos.features.mnestoma import moves
from metnos.ground.db.engine import database_url, make_engine
from metnos.mechanisms.audit import read_tail, verify_instance
from tests.support.home import Home, MakeHome, gateway_client

runner = CliRunner()


async def test_owner_moves_history_and_undo_through_the_api(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    engine = make_engine(database_url(home.settings))
    before = moves.dump(engine)
    async with gateway_client(home, prefect=False) as client:
        done = await client.post("/api/evolution/executors/web_fetch/quarantine",
                                 json={"why": "  I do not browse from here  "})
        assert done.status_code == 200, done.text
        move = done.json()["move"]
        assert (move["kind"], move["target"], move["motivation"]) == (
            "quarantine", "web_fetch", "I do not browse from here")
        assert done.json()["message"].endswith(f"metnos evolution undo {move['id']}")
        assert moves.states(engine) == {"web_fetch": "quarantined"}

        listed = (await client.get("/api/evolution/moves")).json()["moves"]
        assert [m["id"] for m in listed] == [move["id"]] and listed[0]["undone_by"] is None

        later = await client.post("/api/evolution/executors/web_fetch/archive",
                                  json={"why": "not at all"})
        refused = await client.post(f"/api/evolution/moves/{move['id']}/undo",
                                    headers={"Accept-Language": "it"})
        assert refused.status_code == 409
        error = refused.json()["error"]
        assert error["key"] == "ERR_EVOLUTION_UNDO_LATER"
        assert later.json()["move"]["id"] in error["message"]
        assert "Annulla prima quella" in error["message"]

        for move_id in (later.json()["move"]["id"], move["id"]):
            back = await client.post(f"/api/evolution/moves/{move_id}/undo")
            assert back.status_code == 200, back.text
        assert moves.dump(engine) == before
        listed = (await client.get("/api/evolution/moves")).json()["moves"]
        assert [m["kind"] for m in listed] == ["release", "restore", "archive", "quarantine"]
        assert listed[3]["undone_by"] == listed[0]["id"]

        again = await client.post(f"/api/evolution/moves/{move['id']}/undo")
        assert (again.status_code, again.json()["error"]["key"]) == (
            409, "ERR_EVOLUTION_ALREADY_UNDONE")
        assert (await client.post("/api/evolution/moves/nope/undo")).status_code == 404
        unknown = await client.post("/api/evolution/executors/no_such_tool/archive",
                                    json={"why": "x"})
        assert (unknown.status_code, unknown.json()["error"]["message"]) == (
            404, "There is no tool called no_such_tool.")
        bad_move = await client.post("/api/evolution/executors/fs_read/delete", json={"why": "x"})
        assert bad_move.json()["error"]["key"] == "ERR_EVOLUTION_MOVE_UNKNOWN"
        blank = await client.post("/api/evolution/executors/fs_read/archive", json={"why": " "})
        assert blank.status_code == 422
        wrong = await client.post("/api/evolution/executors/fs_read/release", json={"why": "x"})
        assert (wrong.status_code, wrong.json()["error"]["key"]) == (
            409, "ERR_EVOLUTION_STATE_ACTIVE")
        anonymous = await client.get("/api/evolution/moves", headers={"Authorization": ""})
        assert anonymous.status_code == 401
    lines = [r for r in read_tail(home.settings.audit_dir / "audit.jsonl", 100)
             if r["action"].startswith("evolution.")]
    assert [(r["action"], r["decision"]) for r in lines] == [
        ("evolution.quarantine", "allow"), ("evolution.archive", "allow"),
        ("evolution.undo", "deny"), ("evolution.restore", "allow"),
        ("evolution.release", "allow"), ("evolution.undo", "deny"), ("evolution.undo", "deny"),
        ("evolution.archive", "deny"), ("evolution.move", "deny"), ("evolution.archive", "deny"),
        ("evolution.release", "deny")]
    assert {r["sender"] for r in lines} == {"owner"} and {r["channel"] for r in lines} == {"api"}
    assert verify_instance(home.settings).ok
    engine.dispose()


def test_metnos_evolution_against_a_served_gateway(served: Home) -> None:
    done = runner.invoke(evolution_cli, ["quarantine", "shell_run", "--why", "too powerful",
                                         "--json"])
    assert done.exit_code == 0, done.output
    move = json.loads(done.stdout)["move"]
    table = runner.invoke(evolution_cli, ["history"])
    assert table.exit_code == 0
    assert move["id"] in table.stdout and "too powerful" in table.stdout
    assert "quarantine" in table.stdout and "Taken back" in table.stdout
    back = runner.invoke(evolution_cli, ["undo", move["id"]])
    assert back.exit_code == 0 and back.stdout.startswith(f"Move {move['id']} taken back")
    again = runner.invoke(evolution_cli, ["undo", move["id"]])
    assert again.exit_code == 1
    assert f"Move {move['id']} has already been taken back" in again.stderr
    listed = json.loads(runner.invoke(evolution_cli, ["history", "--json"]).stdout)
    assert [m["kind"] for m in listed] == ["release", "quarantine"]
    assert listed[1]["undone_by"] == listed[0]["id"]
    missing_why = runner.invoke(evolution_cli, ["archive", "shell_run"])
    assert missing_why.exit_code != 0
