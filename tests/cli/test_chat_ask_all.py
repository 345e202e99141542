"""`metnos chat --ask-all` (issue 27): the conversation asks before every change, even a
rename Supervised would run with Undo; without it, the rename runs and says how to undo."""

from __future__ import annotations

import json
import time

import httpx
from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port

runner = CliRunner()


def finished(url: str, headers: dict[str, str], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not httpx.get(url, headers=headers).json()["finished_at"]:
        assert time.monotonic() < deadline, f"{url} never finished"
        time.sleep(0.05)


def test_ask_all_makes_a_rename_wait_and_without_it_the_rename_runs(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_POLICY_REVERSIBLE_WITHOUT_ASKING="true")
    (home.workspace / "draft.md").write_text("words\n")
    with served_gateway(home):
        scripted_llm.enqueue_tool_call("fs_move", {"src": "draft.md", "dst": "final.md"})
        scripted_llm.enqueue_text("Handled.")
        result = runner.invoke(app, ["chat", "--no-ask", "--ask-all", "--json",
                                     "rename draft.md to final.md"])
        assert result.exit_code == 0, result.output
        turn = json.loads(result.stdout)
        assert turn["status"] == "awaiting_approval", turn
        assert (home.workspace / "draft.md").exists()
        base = f"http://127.0.0.1:{home.settings.gateway.port}"
        session = httpx.get(f"{base}/api/sessions/{turn['session_id']}",
                            headers=home.auth()).json()
        assert session["ask_all"] is True, session
        [approval] = httpx.get(f"{base}/api/approvals", headers=home.auth()).json()["approvals"]
        assert approval["reason_key"] == "ASK_POLICY_ASK_ALL", approval
        httpx.post(f"{base}/api/approvals/{approval['approval_id']}", headers=home.auth(),
                   json={"decision": "deny"})
        # the denied turn resumes and asks the model once more: let it finish before the
        # next turn's answers are queued, or it takes them
        finished(f"{base}/api/turns/{turn['turn_id']}", home.auth())

        scripted_llm.enqueue_tool_call("fs_move", {"src": "draft.md", "dst": "final.md"})
        scripted_llm.enqueue_text("Handled.")
        result = runner.invoke(app, ["chat", "--no-ask", "rename draft.md to final.md"])
        assert result.exit_code == 0, result.output
        assert (home.workspace / "final.md").read_text() == "words\n"
        assert "Approve?" not in result.stdout
