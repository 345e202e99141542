"""`metnos approvals` against a real gateway on a loopback port (uvicorn in a thread)."""

from __future__ import annotations

import json

import httpx
from typer.testing import CliRunner

from metnos.faces.cli.approvals import app
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import Home

runner = CliRunner()


def _ask(home: Home, llm: ScriptedLLM, name: str) -> dict[str, object]:
    (home.workspace / f"{name}.txt").write_text(name)
    llm.enqueue_tool_call("fs_move", {"src": f"{name}.txt", "dst": f"{name}-moved.txt"})
    llm.enqueue_text(f"Finished with {name}.")
    url = f"http://127.0.0.1:{home.settings.gateway.port}/api/turns"
    resp = httpx.post(url, json={"text": "move it", "lang": "en"}, headers=home.auth(),
                      timeout=60)
    body: dict[str, object] = resp.json()
    assert body["status"] == "awaiting_approval", body
    return body


def test_list_approve_deny(served: Home, scripted_llm: ScriptedLLM) -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0 and "Nothing is waiting" in result.stdout

    first = _ask(served, scripted_llm, "one")
    approval_id = first["approvals"][0]["approval_id"]  # type: ignore[index]
    result = runner.invoke(app, ["list"])
    assert approval_id in result.stdout and 'fs_move(dst="one-moved.txt", src="one.txt")' \
        in result.stdout

    result = runner.invoke(app, ["approve", approval_id])
    assert result.exit_code == 0, result.output
    assert f"Approval {approval_id}: approved." in result.stdout
    assert "Finished with one." in result.stdout  # the resumed turn's reply
    assert "I moved one.txt to one-moved.txt" in result.stdout  # and what ran, beside it
    assert (served.workspace / "one-moved.txt").exists()

    again = runner.invoke(app, ["approve", approval_id])
    assert again.exit_code == 1 and "already decided" in again.stderr

    second = _ask(served, scripted_llm, "two")
    denied_id = second["approvals"][0]["approval_id"]  # type: ignore[index]
    result = runner.invoke(app, ["deny", denied_id, "--reason", "no", "--json"])
    data = json.loads(result.stdout)
    assert data["approval"]["status"] == "denied" and data["turn"]["reply"] == "Finished with two."
    assert [a["status"] for a in data["turn"]["activity"]] == ["denied"]
    assert (served.workspace / "two.txt").exists()

    result = runner.invoke(app, ["list", "--all", "--json"])
    assert {a["status"] for a in json.loads(result.stdout)} == {"used", "denied"}
