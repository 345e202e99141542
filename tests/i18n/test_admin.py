"""Latest-wins on real files: edit, sweep (scripted model), review, mark-synced, revert,
conflict; rejected candidates; an interrupted sweep finished by a rerun; add-language."""

from __future__ import annotations

import json
from typing import Any

import pytest

from metnos.features.languages.admin import LanguageAdmin, LanguagesError
from metnos.features.languages.translator import LLMTranslator
from metnos.ground import i18n
from metnos.ground.i18n.tags import LanguageTagError
from metnos.ground.settings import get_settings
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.executors.registry import _tool_spec
from metnos.mechanisms.llm.port import LLMPort
from metnos.testing.llm_server import ScriptedLLM
from tests.i18n.conftest import Instance

EDIT = "8. Always greet the household by name when you know it.\n"


def admin_and_translator() -> tuple[LanguageAdmin, LLMTranslator]:
    admin = LanguageAdmin(i18n_settings())
    return admin, LLMTranslator(LLMPort(admin.settings.llm, wait_initial_s=0.01), "wise", "en")


def i18n_settings() -> Any:
    return get_settings()


def edit_rules(instance: Instance, lang: str, line: str) -> str:
    path = instance.prompt(lang)
    before = path.read_text(encoding="utf-8")
    marker = "{% endblock %}"
    rules_end = before.index(marker, before.index("{% block rules %}"))
    path.write_text(before[:rules_end] + line + before[rules_end:], encoding="utf-8")
    return before


def planner_status(admin: LanguageAdmin) -> dict[str, str]:
    return {r.lang: r.status + ("*" if r.candidate == "current" else "")
            for r in admin.status(["prompts"]) if r.name == "planner" and r.lang in ("en", "it")}


async def test_edit_sweep_review_accept(instance: Instance, translator_llm: ScriptedLLM) -> None:
    edit_rules(instance, "en", EDIT)
    admin, translator = admin_and_translator()
    assert planner_status(admin) == {"en": "source", "it": "stale"}

    report = await admin.sweep(translator, layers=["prompts"])
    assert ("prompts", "planner", "it") in report.written
    pending = instance.root / "prompts" / "it" / "_pending" / "planner.j2.candidate"
    assert "8. [it] Always greet" in pending.read_text(encoding="utf-8")
    assert planner_status(admin) == {"en": "source", "it": "stale*"}

    review = admin.review("prompts", "planner", "it")
    assert "+8. [it] Always greet" in review.diff and not review.obsolete

    admin.mark_synced("prompts", "planner", "it")
    assert instance.prompt("it").read_text(encoding="utf-8") == review.candidate
    assert not pending.exists()
    fresh = LanguageAdmin(i18n_settings())
    assert planner_status(fresh) == {"en": "source", "it": "synced"}
    audit = (instance.home / "multilang" / "audit.jsonl").read_text().splitlines()
    assert [json.loads(line)["action"] for line in audit] == ["sweep", "mark-synced"]


async def test_revert_clears_staleness_and_obsoletes_the_candidate(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    original = edit_rules(instance, "en", EDIT)
    admin, translator = admin_and_translator()
    await admin.sweep(translator, layers=["prompts"])
    instance.prompt("en").write_text(original, encoding="utf-8")
    admin = LanguageAdmin(i18n_settings())
    rows = {r.lang: r for r in admin.status(["prompts"]) if r.name == "planner"}
    assert rows["it"].status == "synced" and rows["it"].candidate == "obsolete"
    with pytest.raises(LanguagesError) as caught:
        admin.mark_synced("prompts", "planner", "it")
    assert caught.value.key == "ERR_LANGS_CANDIDATE_OBSOLETE"
    admin, translator = admin_and_translator()
    report = await admin.sweep(translator, layers=["prompts"])  # the next sweep tidies up
    assert report.dropped == [("prompts", "planner", "it")] and not report.written
    assert admin.layer("prompts").candidate("planner", "it") is None


async def test_reformatting_is_not_an_edit(instance: Instance) -> None:
    path = instance.prompt("en")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\n", "  \r\n") + "\n\n", encoding="utf-8")
    assert planner_status(LanguageAdmin(i18n_settings())) == {"en": "source", "it": "synced"}


async def test_editing_both_languages_is_a_conflict_the_sweep_leaves_alone(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    edit_rules(instance, "en", EDIT)
    edit_rules(instance, "it", "8. Saluta sempre la famiglia per nome.\n")
    admin, translator = admin_and_translator()
    assert planner_status(admin) == {"en": "conflict", "it": "conflict"}
    report = await admin.sweep(translator, layers=["prompts"])
    assert ("prompts", "planner") in report.conflicts and not report.written
    assert translator_llm.requests == []
    assert any(i.problem == "conflict" for i in admin.check())
    admin.resolve("prompts", "planner", "it")
    assert planner_status(LanguageAdmin(i18n_settings())) == {"en": "stale", "it": "source"}


async def test_retro_translation_makes_italian_the_source(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    edit_rules(instance, "it", "8. Saluta sempre la famiglia per nome.\n")
    admin, translator = admin_and_translator()
    assert planner_status(admin) == {"en": "stale", "it": "source"}
    await admin.sweep(translator, layers=["prompts"])
    candidate = admin.review("prompts", "planner", "en").candidate or ""
    assert "8. [en] Saluta sempre" in candidate


@pytest.mark.parametrize("damage", ["rename_attribute", "unchanged", "control_char"])
async def test_broken_candidates_are_rejected_before_review(
        instance: Instance, translator_llm: ScriptedLLM, damage: str) -> None:
    edit_rules(instance, "en", EDIT)

    def broken(body: dict[str, Any]) -> str:
        source = body["messages"][-1]["content"]
        if damage == "rename_attribute":
            return source.replace("t.description", "t.descrizione")
        if damage == "unchanged":
            return source
        return source.replace("Always", "Sempre\u200b")

    translator_llm.respond_with(broken)
    admin, translator = admin_and_translator()
    report = await admin.sweep(translator, layers=["prompts"])
    assert report.written == [] and [r[:3] for r in report.rejected] == [
        ("prompts", "planner", "it")]
    assert not (instance.root / "prompts" / "it" / "_pending" / "planner.j2.candidate").exists()


async def test_add_language_is_idempotent_and_audited(instance: Instance) -> None:
    admin = LanguageAdmin(i18n_settings())
    first = admin.add_language("fr")
    assert first.changed and first.rows > 100 and (instance.root / "prompts" / "fr").is_dir()
    again = LanguageAdmin(i18n_settings()).add_language("fr")
    assert not again.changed
    with pytest.raises(LanguageTagError):
        admin.add_language("xx-nonsense")
    lines = [json.loads(line) for line in
             (instance.home / "multilang" / "audit.jsonl").read_text().splitlines()]
    assert [(x["code"], x["source_lang"], x["changed"]) for x in lines] == [
        ("fr", "en", True), ("fr", "en", False)]
    assert "fr" not in instance.settings.active_languages  # inactive until METNOS_LANG=fr


async def test_an_interrupted_message_sweep_is_finished_by_a_rerun(
        instance: Instance, translator_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # German has no glossary: the scripted translator marks each text "[de] ..."
    monkeypatch.setenv("METNOS_I18N_SWEEP_BATCH", "200")
    admin = LanguageAdmin(i18n_settings())
    admin.add_language("de")
    total = len(admin.layer("messages").resources())
    calls = {"n": 0}

    def dies_after_one(body: dict[str, Any]) -> str | None:
        calls["n"] += 1
        if calls["n"] > 1:
            return "this is not JSON"  # the model fails from the second batch on
        from tests.support.fake_translator import fake_translation
        return fake_translation(body)

    translator_llm.respond_with(dies_after_one)
    admin, translator = admin_and_translator()
    first = await admin.sweep(translator, layers=["messages"], langs=["de"])
    assert len(first.written) == 200 and len(first.failed) == total - 200

    from tests.support.fake_translator import fake_translation
    translator_llm.respond_with(fake_translation)
    admin, translator = admin_and_translator()
    second = await admin.sweep(translator, layers=["messages"], langs=["de"])
    assert len(second.written) == total - 200 and not second.failed
    done, skipped = admin.mark_all("messages", "de")
    assert done == total and skipped == []
    assert (instance.root / "i18n" / "de").is_dir()
    i18n.use_store(admin.store)
    italian = i18n.get("ERR_TURN_NOT_FOUND", "it", turn_id="t1")
    assert i18n.get("ERR_TURN_NOT_FOUND", "de", turn_id="t1") == italian  # fr still inactive
    monkeypatch.setenv("METNOS_LANG", "de")
    get_settings.cache_clear()
    assert i18n.get("ERR_TURN_NOT_FOUND", "de", turn_id="t1") == "[de] " + i18n.get(
        "ERR_TURN_NOT_FOUND", "en", turn_id="t1")
    status = {r.status for r in LanguageAdmin(i18n_settings()).status(["messages"])
              if r.lang == "de"}
    assert status == {"synced"}


async def test_manifest_translation_lives_beside_the_signed_manifest(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    admin = LanguageAdmin(i18n_settings())
    admin.add_language("de")
    manifest = instance.root / "executors" / "fs_find" / "manifest.toml"
    before = manifest.read_bytes()
    admin, translator = admin_and_translator()
    await admin.sweep(translator, layers=["manifests"], names=["fs_find"], langs=["de"])
    state = json.loads((manifest.parent / "manifest.lang_state.json").read_text())
    assert state["candidates"]["de"]["needs_review"] is True
    admin.mark_synced("manifests", "fs_find", "de")
    state = json.loads((manifest.parent / "manifest.lang_state.json").read_text())
    assert state["text"]["de"]["description"].startswith("[de] ")
    assert state["lang_state"]["de"]["source_lang"] == "it"
    assert manifest.read_bytes() == before  # the signed manifest is untouched
    store = LanguageAdmin(i18n_settings()).store
    assert str(store.lookup("EX_DESCRIPTION_fs_find", "de")).startswith("[de] ")
    i18n.use_store(store)
    tool = _tool_spec(parse_manifest(manifest), "de")  # what the planner is offered
    assert tool.description.startswith("[de] ") and "find-de" in tool.affinity


async def test_an_interrupted_promotion_is_not_taken_for_an_edit(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    edit_rules(instance, "en", EDIT)
    admin, translator = admin_and_translator()
    await admin.sweep(translator, layers=["prompts"])
    layer = admin.layer("prompts")
    cand = layer.candidate("planner", "it")
    assert cand is not None
    layer.promote("planner", "it", cand.value)  # the crash: text written, record not
    admin = LanguageAdmin(i18n_settings())
    assert planner_status(admin) == {"en": "source", "it": "stale*"}
    admin.mark_synced("prompts", "planner", "it")  # the rerun finishes the job
    assert planner_status(LanguageAdmin(i18n_settings())) == {"en": "source", "it": "synced"}


async def test_the_shipped_resources_are_recorded_and_consistent(instance: Instance) -> None:
    issues = LanguageAdmin(i18n_settings()).check()
    assert issues == [], "run `metnos-prompts check`; new resources: `metnos-prompts sync`"


async def test_the_generation_moves_when_a_translation_lands(
        instance: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the gateway's tool cache is keyed on: a reviewed description shows up live."""
    admin = LanguageAdmin(i18n_settings())
    monkeypatch.setattr(i18n, "REFRESH_S", 0.0)
    assert i18n.generation() == 0  # no store: the files serve, nothing to follow
    i18n.use_store(admin.store)
    before = i18n.generation()
    admin.store.set_text("EX_DESCRIPTION_fs_find", "fr", "Trouve des fichiers.", "executors")
    assert i18n.generation() != before
    assert i18n.lookup("EX_DESCRIPTION_fs_find", "fr") == "Trouve des fichiers."


async def test_sync_records_new_keys_and_forgets_removed_ones(instance: Instance) -> None:
    for lang, text in (("en", "A brand new message."), ("it", "Un messaggio nuovo.")):
        path = instance.root / "i18n" / lang / "core.toml"
        body = path.read_text(encoding="utf-8").replace("ERR_HTTP_404 =", "# ERR_HTTP_404 =")
        path.write_text(body + f'MSG_CORE_BRAND_NEW = "{text}"\n', encoding="utf-8")
    admin = LanguageAdmin(i18n_settings())
    assert {(i.name, i.problem) for i in admin.check()} == {("MSG_CORE_BRAND_NEW", "untracked")}
    assert admin.record_untracked() == 1
    state = json.loads((instance.root / "i18n" / "lang_state.json").read_text())["lang_state"]
    assert "MSG_CORE_BRAND_NEW" in state and "ERR_HTTP_404" not in state
    assert LanguageAdmin(i18n_settings()).check() == []
