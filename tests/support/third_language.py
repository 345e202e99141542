"""A household in a language added after install (issue 16), set up the way the owner does
it: a fresh instance, `metnos-prompts add-language LANG`, the sweep with the scripted
translator (`tests/support/fake_translator.py`), `mark-synced --all` on every layer, then
METNOS_LANG=LANG and no model (the embedded planner). Nothing under `metnos/`, `flows/`,
`tasks/` or an executor's `main.py` changes on the way (`code_fingerprint`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.cli.prompts import app as prompts_cli
from metnos.languages.admin import LAYERS
from metnos.settings import get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.i18n.conftest import copy_resources
from tests.support.fake_translator import fake_translation
from tests.support.home import Home, MakeHome

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
    root = copy_resources(tmp_path / "res")
    before = code_fingerprint(root)
    home = make_home(llm=scripted_llm, lang="en", METNOS_I18N_RESOURCES_DIR=str(root), **env)
    scripted_llm.respond_with(fake_translation)
    prompts("add-language", lang)
    prompts("translate-all", "--lang", lang)
    accepted = prompts("mark-synced", "--lang", lang, "--all")  # every layer at once
    assert all(f"{layer}:" in accepted for layer in LAYERS), accepted
    scripted_llm.respond_with(None)
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("METNOS_LANG", lang)
    get_settings.cache_clear()
    prompts("check", "--surfaces", lang)  # no English left on any surface
    assert code_fingerprint(root) == before
    return Home(get_settings(), home.token)


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
