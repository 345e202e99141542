"""The soft/hard language intents: rule resolution, the summary line, the runbook's camelCase
configuration read from metnos.toml, and the artifact check on real files (real detector)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metnos.ground.i18n import intents
from metnos.ground.i18n.intents import artifact_intent, matching_rule, summary
from metnos.ground.keys import ensure_keypair
from metnos.ground.paths import resources_path
from metnos.ground.settings import I18nSettings, Settings, get_settings
from metnos.ground.settings.intents import ArtifactRule, ArtifactsIntent
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.llm.planner import planner_messages
from metnos.turns import language

IT_TEXT = ("La lista della spesa per la settimana: latte, pane, uova e un po' di frutta "
           "fresca. Ricordarsi di passare dal fornaio prima di cena.")
EN_TEXT = ("The shopping list for the week: milk, bread, eggs and some fresh fruit. "
           "Remember to stop by the baker before dinner.")

RUNBOOK_TOML = """
[i18n.communication]
language = "pt-BR"
intent = "soft"

[i18n.artifacts]
language = "preserve-existing"
intent = "hard"
generateTranslations = false
translationTargets = []

[[i18n.artifacts.rules]]
id = "api-docs-en"
pathPrefix = "docs/api"
fileExtensions = [".md", ".mdx"]
language = "en"
intent = "hard"
generateTranslations = true
translationTargets = ["pt-BR"]
reason = "Public API docs are canonical in English; pt-BR is an opt-in artifact."
"""


def i18n_with(*rules: ArtifactRule, **artifacts: object) -> I18nSettings:
    return I18nSettings(artifacts=ArtifactsIntent(rules=rules, **artifacts))  # type: ignore[arg-type]


def rule(id: str, **fields: object) -> ArtifactRule:  # noqa: A002 - the runbook's name
    return ArtifactRule.model_validate({"id": id, **fields})


# -- rules -----------------------------------------------------------------------------------
def test_rules_apply_in_order_and_the_first_match_wins() -> None:
    rules = (rule("api-en", pathPrefix="docs/api", extensions=[".md", "MDX"], language="en"),
             rule("docs-it", pathPrefix="docs", language="it"),
             rule("text-any", extensions=["txt"], language="preserve-existing"))
    assert matching_rule("docs/api/intro.md", rules) is rules[0]
    assert matching_rule("docs/api/intro.MDX", rules) is rules[0]
    assert matching_rule("docs/api/intro.txt", rules) is rules[1]  # prefix AND extension
    assert matching_rule("docs/apix/intro.md", rules) is rules[1]  # whole path components
    assert matching_rule("docs", rules) is rules[1]
    assert matching_rule("notes/a.txt", rules) is rules[2]
    assert matching_rule("notes/a.md", rules) is None
    assert matching_rule("notes/.txt", rules) is None  # a dot file is not a .txt file
    # the same rules in another order: another winner, deterministically
    assert matching_rule("docs/api/intro.md", (rules[1], rules[0])) is rules[1]


def test_artifact_intent_resolves_the_language_of_a_file() -> None:
    settings = i18n_with(rule("api-en", pathPrefix="docs/api", language="en",
                              generateTranslations=True, translationTargets=["pt-BR"]))
    new = artifact_intent("notes/new.md", "it", settings)
    assert (new.language, new.basis, new.rule_id, new.intent) == ("it", "session", None, "hard")
    kept = artifact_intent("notes/old.md", "it", settings, existing_language="en")
    assert (kept.language, kept.basis) == ("en", "existing")
    assert kept.accepts("en") and not kept.accepts("it")  # no translation opted in
    api = artifact_intent("docs/api/x.md", "it", settings, existing_language="it")
    assert (api.language, api.basis, api.rule_id) == ("en", "configured", "api-en")
    assert api.accepts("en") and not api.accepts("it")
    assert not api.accepts("pt")  # an existing file is not overwritten by its translation
    new_api = artifact_intent("docs/api/y.md", "it", settings)
    assert new_api.accepts("pt") and new_api.accepts("pt-BR") and not new_api.accepts("fr")


def test_preserve_existing_leaves_new_files_free_and_a_tag_fixes_them() -> None:
    preserve = artifact_intent("a.md", "it", i18n_with(language="preserve-existing"))
    assert (preserve.language, preserve.basis) == (None, "none") and preserve.accepts("en")
    fixed = artifact_intent("a.md", "it", i18n_with(language="en"), existing_language="it")
    assert (fixed.language, fixed.basis) == ("en", "configured")
    soft = artifact_intent("a.md", "it", i18n_with(intent="soft"), existing_language="it")
    assert soft.accepts("en")  # a soft artifact intent never asks


def test_code_and_data_are_technical_unless_a_rule_selects_them() -> None:
    plain = i18n_with()
    for path in ("tools/build.py", "data/x.json", "logs/run.log"):
        found = artifact_intent(path, "it", plain, existing_language="it")
        assert (found.language, found.basis) == (None, "technical"), path
    for path in ("README", "notes/a.MD", "docs/x.rst"):
        assert artifact_intent(path, "it", plain).language == "it", path
    ruled = i18n_with(rule("py-en", extensions=[".py"], language="en"))
    assert artifact_intent("tools/build.py", "it", ruled).language == "en"


# -- summary and configuration ---------------------------------------------------------------
def test_summary_line_has_the_runbook_format() -> None:
    assert summary(I18nSettings(), "it") == (
        "comm=it/soft artifact=preserve-existing-or-user-language/hard "
        "translations=off rules=0")
    two = i18n_with(rule("a", extensions=[".md"]), rule("b", pathPrefix="x"),
                    generateTranslations=True, language="en")
    assert summary(two, "pt-BR") == "comm=pt-BR/soft artifact=en/hard translations=on rules=2"


def test_camel_case_configuration_from_metnos_toml(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METNOS_HOME", str(tmp_path))
    monkeypatch.setenv("METNOS_LANG", "it")
    (tmp_path / "metnos.toml").write_text(RUNBOOK_TOML, encoding="utf-8")
    get_settings.cache_clear()
    try:
        settings = get_settings()
    finally:
        get_settings.cache_clear()
    i18n = settings.i18n
    [api] = i18n.artifacts.rules
    assert (api.path_prefix, api.extensions, api.translation_targets) == (
        "docs/api", (".md", ".mdx"), ("pt-BR",))
    assert api.generate_translations is True and i18n.artifacts.generate_translations is False
    comm = intents.communication_language(i18n, "it")
    assert comm == "pt-BR"  # a configured tag wins over the session's language
    assert summary(i18n, comm) == (
        "comm=pt-BR/soft artifact=preserve-existing/hard translations=off rules=1")
    assert intents.planner_vars(i18n, "it") == {
        "comm_language": "português (Brasil)", "artifact_policy": "preserve-existing",
        "translations": False, "artifact_rules": [api]}


def test_audit_policy_writes_one_summary_line(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, lang="en")
    ensure_keypair(settings.keys_dir, "audit")
    with open_audit_log(settings) as audit:
        line = intents.audit_policy(audit, settings)
        [record] = audit.tail(5)
    assert line == ("comm=en/soft artifact=preserve-existing-or-user-language/hard "
                    "translations=off rules=0")
    assert (record["action"], record["decision"], record["reason"]) == (
        "i18n.intent_policy", "info", line)


def test_planner_vars_follow_the_session_under_auto_user_profile() -> None:
    assert intents.planner_vars(I18nSettings(), "it")["comm_language"] == "italiano"
    assert intents.planner_vars(I18nSettings(), "en")["comm_language"] == "English"


def test_the_planner_prompt_carries_the_intents() -> None:
    policy = i18n_with(rule("api-en", pathPrefix="docs/api", extensions=[".md"], language="en",
                            generateTranslations=True))
    [system, _] = planner_messages("ciao", "it", [], intents=policy)
    assert "Rispondi in italiano, a meno che" in system["content"]
    assert "sotto `docs/api`, .md: lingua `en`, traduzioni consentite" in system["content"]
    [system, _] = planner_messages("hi", "en", [], intents=I18nSettings(
        communication={"language": "pt-BR"}))  # type: ignore[arg-type]
    assert "Reply in português (Brasil), unless" in system["content"]


# -- the artifact check on real files --------------------------------------------------------
@pytest.fixture
def fs_write():  # type: ignore[no-untyped-def]
    return parse_manifest(resources_path("executors") / "fs_write" / "manifest.toml")


def settings_in(tmp_path: Path, **i18n: object) -> Settings:
    settings = Settings(home=tmp_path, lang="it", i18n=I18nSettings(**i18n))  # type: ignore[arg-type]
    settings.workspace.mkdir(parents=True, exist_ok=True)
    return settings


def test_writing_english_over_an_italian_file_is_a_mismatch(tmp_path: Path, fs_write) -> None:  # type: ignore[no-untyped-def]
    settings = settings_in(tmp_path)
    (settings.workspace / "spesa.md").write_text(IT_TEXT, encoding="utf-8")
    found = language.check_artifact(settings, "en", fs_write,
                                    {"path": "spesa.md", "content": EN_TEXT})
    assert found is not None and found.written == "en"
    assert (found.intent.language, found.intent.basis) == ("it", "existing")
    decision = found.decision("fs_write", "it")
    assert decision.verdict == "ask" and decision.key == "ASK_I18N_ARTIFACT_EXISTING"
    assert decision.message("it") == ("Così scriverei spesa.md in inglese, ma il file è in "
                                      "italiano. Procedo lo stesso?")
    assert "expected=it detected=en" in found.audit_reason()
    # the same language, a text too short to tell, or intents off: no question
    assert language.check_artifact(settings, "en", fs_write,
                                   {"path": "spesa.md", "content": IT_TEXT}) is None
    assert language.check_artifact(settings, "en", fs_write,
                                   {"path": "spesa.md", "content": "ok, thanks"}) is None
    off = settings_in(tmp_path, intents_enabled=False)
    assert language.check_artifact(off, "en", fs_write,
                                   {"path": "spesa.md", "content": EN_TEXT}) is None


def test_a_new_file_follows_the_session_language_and_rules(tmp_path: Path, fs_write) -> None:  # type: ignore[no-untyped-def]
    settings = settings_in(tmp_path, artifacts=ArtifactsIntent(rules=(
        rule("api-en", pathPrefix="docs/api", language="en"),)))
    found = language.check_artifact(settings, "it", fs_write,
                                    {"path": "nuovo.md", "content": EN_TEXT})
    assert found is not None and found.decision("fs_write", "en").message("en") == (
        "This would write the new file nuovo.md in English, but we are speaking Italian. "
        "Shall I go ahead anyway?")
    assert language.check_artifact(settings, "it", fs_write,
                                   {"path": "docs/api/x.md", "content": EN_TEXT}) is None
    ruled = language.check_artifact(settings, "en", fs_write,
                                    {"path": "docs/api/x.md", "content": IT_TEXT})
    assert ruled is not None and ruled.decision("fs_write", "en").key == "ASK_I18N_ARTIFACT_RULE"


def test_ui_locale_and_accept_language(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, lang="it", i18n=I18nSettings(languages=["en"]))
    assert language.accept_languages("fr;q=0.9, en-GB;q=0.95, *;q=0.5, de;q=0") == [
        "en-GB", "fr"]
    assert language.ui_locale("en-US", "it", settings) == "en"
    assert language.ui_locale(None, "fr-FR, en;q=0.8", settings) == "en"
    assert language.ui_locale("xx-!!", None, settings) == "it"  # METNOS_LANG
    assert language.legacy_language(Settings(
        home=tmp_path, lang="en", i18n=I18nSettings(workspace_language="it-CH"))) == "it"
