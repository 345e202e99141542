"""A household in a language added after install (issue 16), set up the way the owner does
it: a fresh instance, `metnos-prompts add-language LANG`, the sweep with the scripted
translator (`tests/support/fake_translator.py`), `mark-synced --all` on every layer, then
METNOS_LANG=LANG and no model (the embedded planner). Nothing under `metnos/`, `flows/`,
`tasks/` or an executor's `main.py` changes on the way (`code_fingerprint`).

The owner's steps run once per language and test session (a sweep takes minutes): the first
test of a language keeps a copy of its resources folder and home, and the others start from
a copy of those (under pytest-xdist, in the session's common temp dir, one worker at a time:
`machine_lock`), on a fresh database, then check every surface as the first did."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.prompts import app as prompts_cli
from metnos.features.languages.admin import LAYERS
from metnos.ground.settings import get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.i18n.conftest import copy_resources
from tests.support.fake_translator import fake_translation
from tests.support.home import Home, MakeHome
from tests.support.system import machine_lock

ROOT = Path(__file__).resolve().parents[2]
LLM_ENV = ("METNOS_LLM_MODEL", "METNOS_LLM_API_BASE", "METNOS_LLM_API_KEY",
           "METNOS_LLM_MODEL_WISE", "METNOS_LLM_MODEL_FRONTIER")


def prompts(*args: str) -> str:
    result = CliRunner().invoke(prompts_cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def household_in(lang: str, make_home: MakeHome, scripted_llm: ScriptedLLM, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch, **env: str) -> Home:
    """A fresh instance (installed in English) that now speaks `lang`; its resources folder
    is a copy of the shipped one, where `metnos-prompts` writes."""
    root, saved = tmp_path / "res", _saved(tmp_path, lang)
    with machine_lock(f"third-language-{lang}-{saved.parents[1].name}"):
        if (saved / "done").exists():
            shutil.copytree(saved / "res", root, symlinks=True)
            shutil.copytree(saved / "home", tmp_path / "home", symlinks=True)
            home = make_home(llm=scripted_llm, lang="en", METNOS_I18N_RESOURCES_DIR=str(root),
                             **env)  # the copied home, its own database
        else:
            home = _add_language(lang, make_home, scripted_llm, root, **env)
            shutil.rmtree(saved, ignore_errors=True)
            shutil.copytree(root, saved / "res", symlinks=True)
            shutil.copytree(home.path, saved / "home", symlinks=True)
            (saved / "done").touch()
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("METNOS_LANG", lang)
    get_settings.cache_clear()
    prompts("check", "--surfaces", lang)  # no English left on any surface
    return Home(get_settings(), home.token)


def _add_language(lang: str, make_home: MakeHome, scripted_llm: ScriptedLLM, root: Path,
                  **env: str) -> Home:
    """The owner's steps: add the language, translate every layer, accept every layer."""
    copy_resources(root)
    before = code_fingerprint(root)
    home = make_home(llm=scripted_llm, lang="en", METNOS_I18N_RESOURCES_DIR=str(root), **env)
    scripted_llm.respond_with(fake_translation)
    prompts("add-language", lang)
    prompts("translate-all", "--lang", lang)
    accepted = prompts("mark-synced", "--lang", lang, "--all")  # every layer at once
    assert all(f"{layer}:" in accepted for layer in LAYERS), accepted
    scripted_llm.respond_with(None)
    assert code_fingerprint(root) == before
    return home


def _saved(tmp_path: Path, lang: str) -> Path:
    """Where the test session keeps `lang`'s household: `tmp_path` is <basetemp>/<test>,
    and under pytest-xdist every worker's basetemp is <session root>/popen-gwN."""
    basetemp = tmp_path.parent
    session = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    return session / "third_language" / lang


def code_fingerprint(root: Path) -> str:
    """One hash of the code a language must not touch: the repository's `metnos/`, `flows/`
    and `tasks/`, and every executor's `main.py` in the resources folder."""
    digest = hashlib.sha256()
    files = [p for base in ("metnos", "flows", "tasks") for p in (ROOT / base).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    files += list((root / "executors").glob("*/main.py"))
    for path in sorted(files):
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
