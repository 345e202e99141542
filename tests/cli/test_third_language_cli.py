"""Acceptance (issue 16) in the terminal: a language added after install. `metnos chat` asks
for the approval of a request understood without a model, in that language, and `metnos
undo` restores the file and refuses a second undo in plain words of that language (over
real HTTP, a gateway on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.ground import i18n
from metnos.ground.i18n.lint import i18n_lint_text
from metnos.testing.llm_server import ScriptedLLM
from tests.support.fake_translator import spoken
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.support.third_language import household_in

runner = CliRunner()


@pytest.mark.parametrize("lang", ["fr", "ar"])
def test_a_new_language_in_the_terminal_asks_runs_and_undoes(
        make_home: MakeHome, scripted_llm: ScriptedLLM, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, lang: str) -> None:
    home = household_in(lang, make_home, scripted_llm, tmp_path, monkeypatch,
                        METNOS_GATEWAY_PORT=str(free_port()))
    notes = home.workspace / "notes.md"
    notes.write_text("# Notes\n", encoding="utf-8")
    yes = i18n.get("MSG_CHAT_APPROVE_YES", lang).split(",")[0].strip()
    with served_gateway(home):
        asked = runner.invoke(app, ["chat", "--ask", "--json",
                                    spoken("delete the file notes.md", lang)], input=f"{yes}\n")
        assert asked.exit_code == 0, asked.output
        assert i18n.get("MSG_CHAT_APPROVE_PROMPT", lang) in asked.stderr
        card = asked.stderr.split(i18n.get("MSG_CHAT_APPROVE_PROMPT", lang))[0]
        assert i18n_lint_text(card, lang).decision == "pass", card
        turn = json.loads(asked.stdout)
        [deleted] = turn["activity"]
        assert deleted["status"] == "done" and not notes.exists(), turn
        assert i18n_lint_text(deleted["text"], lang).decision == "pass", deleted

        undone = runner.invoke(app, ["undo", deleted["action_id"]])
        assert undone.exit_code == 0, undone.output
        assert notes.read_text(encoding="utf-8") == "# Notes\n"
        again = runner.invoke(app, ["undo", deleted["action_id"]])
        assert again.exit_code != 0
        for out in (undone.output, again.output):
            assert i18n_lint_text(out, lang).decision == "pass", out
        assert again.output.strip() != undone.output.strip()
