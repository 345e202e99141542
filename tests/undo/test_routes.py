"""`POST /api/actions/{id}/undo` on the real gateway, and `metnos undo` against it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from typer import Typer
from typer.testing import CliRunner

from metnos.faces.cli.undo import undo as undo_command
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.pg import free_port
from tests.undo.support import Actor, build_tree, tree_digest


@asynccontextmanager
async def client_for(home: Home, token: str | None = None) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {token or home.token}", "Accept-Language": "en"}
    async with gateway_client(home, prefect=False, headers=headers) as client:
        yield client


def home_actor(home: Home) -> Actor:
    return Actor(home.workspace, home.settings.state_dir, home.settings.keys_dir)


def undo_lines(home: Home) -> list[dict]:
    path = home.settings.audit_dir / "audit.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines()
            if json.loads(ln)["action"] == "undo"]


async def test_undo_route_answers_done_404_409_422_and_401(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    build_tree(home.workspace)
    original = tree_digest(home.workspace)
    actor = home_actor(home)
    moved, _ = await actor.aact("fs_move", {"src": "notes", "dst": "old/notes"})
    deleted, _ = await actor.aact("fs_delete", {"path": "a.md"})
    manifest = home.settings.state_dir / "before" / deleted / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"a.md"', '"b.txt"'))
    async with client_for(home) as client:
        resp = await client.post(f"/api/actions/{moved}/undo")
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["outcome"] == "done" and body["message"].startswith(f"Action {moved} undone")
        assert {i["path"]: i["status"] for i in body["items"]}["notes"] == "moved_back"
        again = await client.post(f"/api/actions/{moved}/undo")
        assert again.status_code == 409
        assert again.json()["error"]["key"] == "ERR_UNDO_ALREADY_DONE"
        unknown = await client.post(f"/api/actions/{'f' * 32}/undo")
        assert unknown.status_code == 404
        assert unknown.json()["error"]["message"].startswith("I have no record")
        tampered = await client.post(f"/api/actions/{deleted}/undo")
        assert tampered.status_code == 422
        assert tampered.json()["error"]["key"] == "ERR_UNDO_MANIFEST_INVALID"
    async with client_for(home, token="wrong") as client:
        assert (await client.post(f"/api/actions/{deleted}/undo")).status_code == 401
    assert [(ln["action_id"], ln["outcome"], ln["channel"]) for ln in undo_lines(home)] == [
        (moved, "done", "api"), (moved, "refused", "api"), ("f" * 32, "refused", "api"),
        (deleted, "refused", "api")]
    assert tree_digest(home.workspace) == {k: v for k, v in original.items() if k != "a.md"}


async def test_a_turn_of_renames_then_undo_through_the_gateway(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    """The adversary-free path of issue 3: an LLM renames in Full autonomy; undo restores."""
    home = make_home(llm=scripted_llm, autonomy="Full", lang="en")
    build_tree(home.workspace)
    original = tree_digest(home.workspace)
    scripted_llm.enqueue_tool_calls([
        ToolCall("fs_move", {"src": "a.md", "dst": "renamed/a-2024.md"}),
        ToolCall("fs_move", {"src": "photos", "dst": "renamed/photos"}),
        ToolCall("fs_write", {"path": "notes/n1.md", "content": "rewritten"})])
    scripted_llm.enqueue_text("Tidied up: two moves and a rewrite.")
    async with client_for(home) as client:
        resp = await client.post("/api/turns", json={"text": "tidy up", "lang": "en"})
        assert resp.json()["status"] == "completed", resp.text
        assert tree_digest(home.workspace) != original
        lines = (await client.get("/api/audit", params={"limit": 100})).json()
        done = [ln["action_id"] for ln in lines
                if ln["outcome"] == "done" and ln["action"].startswith("fs_")]
        assert len(done) == 3, lines
        for action_id in reversed(done):
            resp = await client.post(f"/api/actions/{action_id}/undo")
            assert resp.json()["outcome"] == "done", resp.text
    assert tree_digest(home.workspace) == original


def cli() -> Typer:
    app = Typer()
    app.command(name="undo")(undo_command)  # as the lead mounts it on `metnos`
    app.command(name="noop")(lambda: None)  # two commands: `undo` stays a sub-command
    return app


def test_metnos_undo_cli(served: Home) -> None:
    build_tree(served.workspace)
    original = tree_digest(served.workspace)
    action_id, _ = home_actor(served).act("fs_delete", {"path": "photos"})
    runner = CliRunner()
    result = runner.invoke(cli(), ["undo", action_id])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Action {action_id} undone.")
    assert tree_digest(served.workspace) == original
    result = runner.invoke(cli(), ["undo", action_id, "--json"])
    assert result.exit_code == 1 and "already been undone" in result.stderr
    result = runner.invoke(cli(), ["undo", "../../etc", "--json"])
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_metnos_undo_without_a_running_gateway_says_so(make_home: MakeHome) -> None:
    make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    result = CliRunner().invoke(cli(), ["undo", "abc"])
    assert result.exit_code == 1 and "Metnos is not running at" in result.stderr
