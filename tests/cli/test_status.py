"""`metnos status` against a served gateway (uvicorn on loopback, real HTTP): the model's state
with its fix (the CLI is the owner), the sandbox; and Metnos not running, with how to start it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port

runner = CliRunner()


def test_not_running_says_so_and_how_to_start(make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 1
    url = f"http://127.0.0.1:{home.settings.gateway.port}"
    assert i18n.get("ERR_CHAT_NOT_RUNNING", "en", url=url) in result.output
    result = runner.invoke(app, ["status", "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout) == {"gateway": "down", "url": url}


def test_a_wrong_key_is_shown_with_its_fix(make_home: MakeHome) -> None:
    with ScriptedLLM(api_key="sk-right") as server:
        home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                         METNOS_LLM_MODEL="openai/scripted", METNOS_LLM_API_BASE=server.api_base,
                         METNOS_LLM_API_KEY="sk-wrong")
        with served_gateway(home):
            result = runner.invoke(app, ["status"])
            as_json = runner.invoke(app, ["status", "--json"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Metnos is running at http://127.0.0.1:")
    assert lines[1] == i18n.get("MSG_STATUS_MODEL", "en", line=i18n.get(
        "ERR_LLM_AUTH_FAILED", "en", model="openai/scripted", status=401))
    assert lines[2] == i18n.get("MSG_STATUS_FIX", "en",
                                fix=i18n.get("MSG_MODEL_FIX_API_KEY", "en"))
    assert i18n.get("MSG_STATUS_SANDBOX_OK", "en") in lines or \
        i18n.get("MSG_STATUS_SANDBOX_DEGRADED", "en") in lines
    assert len(lines) <= 8  # one short screen
    assert "sk-wrong" not in result.stdout
    data = json.loads(as_json.stdout)
    assert data["gateway"] == "up" and data["health"]["model"] == "misconfigured"
    assert (data["model"]["model"], data["model"]["setting"]) == ("misconfigured",
                                                                  "[llm] api_key")


def test_no_model_is_the_built_in_planner(make_home: MakeHome) -> None:
    home = make_home(lang="it", METNOS_GATEWAY_PORT=str(free_port()))
    with served_gateway(home):
        result = runner.invoke(app, ["status"], env={"METNOS_LANG": "it"})
    assert result.exit_code == 0, result.output
    assert i18n.get("MSG_STATUS_MODEL", "it", line=i18n.get("MSG_MODEL_EMBEDDED", "it")) \
        in result.stdout.splitlines()
    assert "Per correggere" not in result.stdout
