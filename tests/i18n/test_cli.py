"""`metnos-prompts` as a person types it: clear errors in the user's language, exit codes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.prompts import app
from metnos.ground.settings import get_settings
from tests.i18n.conftest import Instance


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def test_bad_input_gets_a_clear_message_in_the_user_language(instance: Instance) -> None:
    code, out = run("add-language", "xx-nonsense")
    assert code == 1 and "non è un codice di lingua" in out
    code, out = run("status", "--layer", "bogus")
    assert code == 1 and "Non esiste lo strato bogus" in out
    code, out = run("review", "planner", "--lang", "de")
    assert code == 1 and "add-language de" in out
    code, out = run("mark-synced", "--lang", "it")
    assert code == 2 and "--all" in out
    code, out = run("manifests", "review", "no_such_tool", "--lang", "it")
    assert code == 1 and "no_such_tool" in out


def test_check_exits_one_on_a_conflict(instance: Instance) -> None:
    assert run("check")[0] == 0
    for lang, extra in (("en", "Be brief."), ("it", "Sii breve.")):
        path = instance.prompt(lang)
        path.write_text(path.read_text().replace("{% endblock %}", extra + "\n{% endblock %}", 1))
    code, out = run("check")
    assert code == 1 and "conflict" in out and "planner" in out


def test_frontier_is_never_used_silently(instance: Instance,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METNOS_LLM_MODEL", "openai/some-local-model")
    get_settings.cache_clear()
    code, out = run("translate", "planner", "--lang", "it", "--quality", "frontier")
    assert code == 1 and "frontier" in out.lower()
    code, out = run("translate-all", "--quality", "best")
    assert code == 1 and "best" in out


def test_add_language_twice_says_so(instance: Instance) -> None:
    code, first = run("add-language", "fr", "--source-lang", "it")
    assert code == 0 and "fr" in first and "METNOS_LANG=fr" in first
    code, again = run("add-language", "fr")
    assert code == 0 and "già stata aggiunta" in again
