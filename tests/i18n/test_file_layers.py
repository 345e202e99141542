"""The layers beyond prompts, manifests and messages (issue 16): the channels' templates
(layer 4), the words the code reads (`lexicon`) and the workspace documents, under the same
discipline: swept by the scripted translator, checked before review, promoted by
`mark-synced`, then read by the code from the resources folder with no code change."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from metnos.faces.channels.render import render
from metnos.faces.cli.prompts import app
from metnos.features.languages.admin import LanguageAdmin
from metnos.features.proposals.telos import parse
from metnos.features.reminders import when
from metnos.ground.paths import resources_path
from metnos.ground.settings import get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.i18n.conftest import Instance

LAYERS = ("channels", "lexicon", "workspace")


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def sweep_french() -> None:
    cli("add-language", "fr")
    cli("translate-all", "--lang", "fr", *(f"--layer={layer}" for layer in LAYERS))


def test_a_new_language_gets_templates_words_and_documents(
        instance: Instance, translator_llm: ScriptedLLM,
        monkeypatch: pytest.MonkeyPatch) -> None:
    sweep_french()
    pending = instance.root / "channels" / "fr" / "_pending" / "telegram"
    assert (pending / "approval.j2.candidate").is_file()
    assert not (instance.root / "channels" / "fr" / "telegram").exists()  # not served yet
    review = cli("channels", "review", "telegram/approval", "--lang", "fr")
    assert "+✅ <b>Approuvé</b>" in review and "{{ title }}" in review

    for layer in LAYERS:
        cli(layer, "mark-synced", "--lang", "fr", "--all")
    rows = LanguageAdmin(instance.settings).status(LAYERS)
    french = {(r.layer, r.name): r.status for r in rows if r.lang == "fr"}
    assert set(french.values()) == {"synced"}, french
    assert {name for layer, name in french if layer == "lexicon"} >= {
        "reminders", "schedules", "household", "judge"}

    # once active, the code reads them from the resources folder
    monkeypatch.setenv("METNOS_I18N_LANGUAGES", '["it", "en", "fr"]')
    get_settings.cache_clear()
    card = render("telegram", "pairing", "fr", message="Bonjour", code="123456")
    assert card.startswith("Bonjour") and "Votre jumelage code" in card
    telos = (instance.root / "i18n" / "fr" / "workspace" / "TELOS.md").read_text("utf-8")
    aims = parse(telos)
    english = parse((resources_path("i18n") / "en" / "workspace" / "TELOS.md").read_text("utf-8"))
    assert len(aims) == 3 and not {text for text, _ in aims} & {text for text, _ in english}
    assert when.words("fr")["units"][("heures",)] == 3600  # the new language's words, read


def test_a_template_that_loses_a_construct_is_never_promoted(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    sweep_french()
    pending = instance.root / "channels" / "fr" / "_pending" / "telegram" / "pairing.j2.candidate"
    pending.write_text(pending.read_text("utf-8").replace("{{ code }}", "{{ kode }}"), "utf-8")
    result = CliRunner().invoke(app, ["channels", "mark-synced", "telegram/pairing",
                                      "--lang", "fr"])
    assert result.exit_code == 1 and "telegram/pairing" in result.output
    assert not (instance.root / "channels" / "fr" / "telegram" / "pairing.j2").exists()


def test_a_word_file_that_renames_a_key_of_the_code_is_never_promoted(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    sweep_french()
    pending = instance.root / "lexicon" / "fr" / "_pending" / "judge.toml.candidate"
    pending.write_text(pending.read_text("utf-8").replace("compose", "composer"), "utf-8")
    code, out = _run("lexicon", "mark-synced", "judge", "--lang", "fr")
    assert code == 1 and "priors.compose" in out
    done = cli("lexicon", "mark-synced", "--lang", "fr", "--all")
    assert "judge" in done  # skipped, with its reason; the others promoted
    assert not (instance.root / "lexicon" / "fr" / "judge.toml").exists()
    assert (instance.root / "lexicon" / "fr" / "reminders.toml").is_file()


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("layer", LAYERS)
def test_the_shipped_languages_are_recorded_and_pass_the_check(
        instance: Instance, layer: str) -> None:
    admin = LanguageAdmin(instance.settings)
    rows = admin.status([layer])
    assert rows and {r.status for r in rows} <= {"source", "synced"}, rows
    assert [i for i in admin.check() if i.layer == layer] == []
