"""A private copy of the resources (prompts/, i18n/, executors/) and an empty METNOS_HOME, so
tests can add languages, edit texts and accept translations without touching the repo."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.ground.paths import resources_path
from metnos.ground.settings import Settings, get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.support.fake_translator import fake_translation

_IGNORE = shutil.ignore_patterns("__pycache__", "_pending")


@dataclass
class Instance:
    root: Path
    home: Path

    @property
    def settings(self) -> Settings:
        return get_settings()

    def prompt(self, lang: str, role: str = "planner") -> Path:
        return self.root / "prompts" / lang / f"{role}.j2"


def copy_resources(target: Path) -> Path:
    for name in ("prompts", "i18n", "executors", "channels", "lexicon", "planner"):
        shutil.copytree(resources_path(name), target / name, ignore=_IGNORE)
    return target


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Instance]:
    root, home = copy_resources(tmp_path / "res"), tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("METNOS_HOME", str(home))
    monkeypatch.setenv("METNOS_I18N_RESOURCES_DIR", str(root))
    monkeypatch.setenv("METNOS_LANG", "it")
    for name in ("METNOS_LLM_MODEL", "METNOS_LLM_API_BASE", "METNOS_LLM_API_KEY",
                 "METNOS_LLM_MODEL_WISE", "METNOS_LLM_MODEL_FRONTIER"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield Instance(root, home)
    i18n.use_store(None)
    get_settings.cache_clear()


@pytest.fixture
def translator_llm(instance: Instance, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLM]:
    """A scripted model that translates (see tests/support/fake_translator.py)."""
    with ScriptedLLM() as llm:
        llm.respond_with(fake_translation)
        monkeypatch.setenv("METNOS_LLM_MODEL", "openai/scripted")
        monkeypatch.setenv("METNOS_LLM_API_BASE", llm.api_base)
        monkeypatch.setenv("METNOS_LLM_API_KEY", "sk-test")
        get_settings.cache_clear()
        yield llm
