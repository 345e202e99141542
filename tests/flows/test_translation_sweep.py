"""The nightly `translation-sweep` flow against the session's Prefect server."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.translation_sweep import translation_sweep
from metnos.ground.settings import get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.i18n.conftest import copy_resources
from tests.support.fake_translator import fake_translation


async def test_the_sweep_writes_candidates_for_what_an_edit_made_stale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefect_api: str) -> None:
    root = copy_resources(tmp_path / "res")
    (tmp_path / "home").mkdir()
    planner = root / "prompts" / "en" / "planner.j2"
    planner.write_text(planner.read_text().replace(
        "Keep answers short and friendly.", "Keep answers short, warm and friendly."))
    catalog = root / "i18n" / "en" / "core.toml"
    catalog.write_text(catalog.read_text().replace(
        'ERR_HTTP_404 = "There is nothing at this address."',
        'ERR_HTTP_404 = "There is nothing at this address, sorry."'))
    with ScriptedLLM() as llm:
        llm.respond_with(fake_translation)
        for name, value in {"METNOS_HOME": str(tmp_path / "home"),
                            "METNOS_I18N_RESOURCES_DIR": str(root),
                            "METNOS_LLM_MODEL": "openai/scripted",
                            "METNOS_LLM_API_BASE": llm.api_base,
                            "METNOS_LLM_API_KEY": "sk-test"}.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        result = await translation_sweep()
        again = await translation_sweep()  # nothing left: candidates exist already
    get_settings.cache_clear()
    assert result["written"] == 2 and result["rejected"] == 0 and result["failed"] == 0
    assert result["layers"]["prompts"]["details"]["written"] == [["prompts", "planner", "it"]]
    assert result["layers"]["messages"]["details"]["written"] == [
        ["messages", "ERR_HTTP_404", "it"]]
    pending = root / "prompts" / "it" / "_pending" / "planner.j2.candidate"
    assert "[it]" in pending.read_text()
    assert again["written"] == 0 and len(llm.requests) == 2
