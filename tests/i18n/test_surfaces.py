"""`metnos-prompts check --surfaces LANG` (issue 16): every surface rendered in a new
language and linted; it passes once the language is swept and reviewed, and fails when one of
its messages is put back in English."""

from __future__ import annotations

import tomllib

import pytest
import tomlkit
from typer.testing import CliRunner

from metnos.faces.cli.prompts import app, served_pages
from metnos.faces.gateway.routes.docs import docs_dir, listing
from metnos.features.languages.admin import LAYERS
from metnos.features.languages.surfaces import surface_texts
from metnos.ground.settings import get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.i18n.conftest import Instance

# a long message of the CLI, of an approval card and of the web chat: each must be caught
ENGLISH_BACK = ("ERR_LANGS_SURFACES_INACTIVE", "CARD_WHY_ASK_LAW_UNTRUSTED_DATA",
                "WEB_DOCS_OTHER_LANGUAGE")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def add_and_review(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("add-language", lang)[0] == 0
    code, out = run("translate-all", "--lang", lang)
    assert code == 0, out
    for layer in LAYERS:
        group = () if layer == "prompts" else (layer,)
        assert run(*group, "mark-synced", "--lang", lang, "--all")[0] == 0
    monkeypatch.setenv("METNOS_I18N_LANGUAGES", f'["it", "en", "{lang}"]')
    get_settings.cache_clear()


@pytest.mark.parametrize("lang", ["fr", "ar"])
def test_a_reviewed_language_speaks_on_every_surface(
        instance: Instance, translator_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
        lang: str) -> None:
    code, out = run("check", "--surfaces", lang)
    assert code == 1 and f"add-language {lang}" in out  # not added yet: said plainly

    add_and_review(lang, monkeypatch)
    texts = surface_texts(lang, instance.root, served_pages)
    assert {t.surface for t in texts} >= {"web chat", "web pages", "telegram", "cli",
                                          "approval card", "planner reply"}
    code, out = run("check", "--surfaces", lang)
    assert code == 0, out

    for key in ENGLISH_BACK:  # one message back in English: caught, and named
        path, english = _put_back(instance, lang, key)
        code, out = run("check", "--surfaces", lang)
        assert code == 1 and key in out, out
        path.write_text(english, encoding="utf-8")
    assert run("check", "--surfaces", lang)[0] == 0


def test_an_inactive_language_is_refused_with_the_way_to_activate_it(
        instance: Instance, translator_llm: ScriptedLLM) -> None:
    assert run("add-language", "fr")[0] == 0
    code, out = run("check", "--surfaces", "fr")
    assert code == 1 and "METNOS_LANG=fr" in out


def test_documents_in_another_language_are_announced_and_marked(
        instance: Instance, translator_llm: ScriptedLLM,
        monkeypatch: pytest.MonkeyPatch) -> None:
    add_and_review("fr", monkeypatch)
    texts = surface_texts("fr", instance.root, served_pages)
    [index] = [t for t in texts if t.name == "docs_index.html.j2"]
    titles = [page.title for page in listing(docs_dir())["en"].values()]
    assert titles and not [t for t in titles if t in index.text]  # marked lang="en": left out
    assert "anglais" in index.text.lower()  # "... here they are in English", in French


def _put_back(instance: Instance, lang: str, key: str) -> tuple[object, str]:
    """Replace `key` in `lang`'s file by its English text; (path, the file before)."""
    for path in sorted((instance.root / "i18n" / lang).glob("*.toml")):
        before = path.read_text(encoding="utf-8")
        if key in tomllib.loads(before):
            english = next(tomllib.loads(p.read_text(encoding="utf-8"))[key]
                           for p in (instance.root / "i18n" / "en").glob("*.toml")
                           if key in tomllib.loads(p.read_text(encoding="utf-8")))
            document = tomlkit.parse(before)
            document[key] = english
            path.write_text(tomlkit.dumps(document), encoding="utf-8")
            return path, before
    raise AssertionError(f"{key} is not in {lang}")
