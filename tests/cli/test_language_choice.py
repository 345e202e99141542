"""Issue 27, loose ends: the language of a machine and a language Metnos does not have.

With `METNOS_LANG` unset, the POSIX message locale (`LC_ALL`, `LC_MESSAGES`, `LANG`) picks the
process language, the one of the `metnos serve` banner, its errors and every process it starts
(`en_US.UTF-8` → English, `it_IT` → Italian, a language Metnos has no messages in → the
default). `METNOS_LANG=xx` is never passed over: `metnos serve` refuses to start, saying why in
English; `metnos chat` and the other commands say so once and go on in English. Real
subprocesses of the installed `metnos` command, on a home that is not set up (no service is
needed to see which words they use).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metnos.faces.cli._lang import unspoken_vars
from metnos.ground import i18n
from metnos.ground.system_lang import DEFAULT_LANG, system_lang

METNOS = [sys.executable, "-m", "metnos.faces.cli.main"]
PROBE = ("from metnos.ground import i18n; from metnos.ground.settings import get_settings; "
         "print(get_settings().lang); print(i18n.get('MSG_SERVE_STOPPING'))")


def environment(home: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"METNOS_LANG", "LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"}}
    return {**env, "METNOS_HOME": str(home), **values}


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("values", "lang"), [
    ({"LANG": "en_US.UTF-8"}, "en"),
    ({"LANG": "it_IT.UTF-8"}, "it"),
    ({"LANG": "it_IT", "LC_ALL": "en_GB.UTF-8"}, "en"),  # LC_ALL first
    ({"LANG": "it_IT.UTF-8", "LC_MESSAGES": "en_US.UTF-8"}, "en"),
    ({"LANG": "sw_KE.UTF-8"}, DEFAULT_LANG),  # Metnos has no Swahili: the default
    ({"LANG": "C.UTF-8"}, DEFAULT_LANG),
    ({"LANG": "en_US.UTF-8", "METNOS_LANG": "it"}, "it"),  # METNOS_LANG wins
])
def test_the_machine_locale_picks_the_process_language(
        tmp_path: Path, values: dict[str, str], lang: str) -> None:
    done = run([sys.executable, "-c", PROBE], environment(tmp_path / "home", **values))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [lang, i18n.get("MSG_SERVE_STOPPING", lang)]


def test_system_lang_reads_posix_precedence() -> None:
    assert system_lang({"LANG": "en_US.UTF-8"}) == "en"
    assert system_lang({"LC_ALL": "", "LANG": "it_IT@euro"}) == "it"
    assert system_lang({"LANG": "xx_YY"}) == DEFAULT_LANG
    assert system_lang({}) == DEFAULT_LANG


def test_an_english_machine_gets_english_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run([*METNOS, "serve"], environment(home, LANG="en_US.UTF-8"))
    assert done.returncode == 1
    assert done.stderr.strip() == i18n.get("ERR_HOME_NOT_INITIALISED", "en", home=str(home))


@pytest.mark.parametrize("tag", ["xx", "tlh", "sw"])
def test_serve_refuses_a_language_it_does_not_have(tmp_path: Path, tag: str) -> None:
    done = run([*METNOS, "serve"], environment(tmp_path / "home", METNOS_LANG=tag,
                                               LANG="it_IT.UTF-8"))
    assert done.returncode == 1
    said = i18n.get("ERR_LANG_NOT_SPOKEN", "en", **unspoken_vars(tag))
    assert done.stderr.strip() == said  # in English, whatever the machine's language
    assert f"“{tag}”" in said and "English" in said and "Traceback" not in done.stderr


def test_chat_says_it_goes_on_in_english(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run([*METNOS, "chat", "hello"], environment(home, METNOS_LANG="xx"))
    assert done.returncode == 1  # not set up: said in English, after the note
    note = i18n.get("MSG_LANG_NOT_SPOKEN", "en", **unspoken_vars("xx"))
    assert done.stderr.splitlines() == [
        note, i18n.get("ERR_HOME_NOT_INITIALISED", "en", home=str(home))]
