"""Checks on translation candidates: what a sweep candidate must pass before review."""

from __future__ import annotations

from metnos.features.languages.checks import (
    CHECKS,
    Problem,
    check_document,
    check_lexicon,
    check_message,
    check_prompt,
    check_prose,
    describe,
    enforced,
)
from metnos.ground import i18n
from metnos.ground.paths import resources_path

SRC = "Could not read the file {path}."


def checks(problems: list[Problem]) -> dict[str, bool]:
    """check name → enforced."""
    return {p.check: p.enforced for p in problems}


def test_a_good_translation_has_no_problem() -> None:
    assert check_message(SRC, "Impossibile leggere il file {path}.") == []
    assert check_message("\n  Done: {n} files.\n", "\n  Fatto: {n} file.\n") == []


def test_a_renamed_placeholder_is_rejected() -> None:
    found = check_message(SRC, "Impossibile leggere il file {percorso}.")
    assert found == [Problem("placeholders", "{path} missing, {percorso} unexpected", True)]
    assert checks(check_message(SRC, "Impossibile leggere il file.")) == {"placeholders": True}
    assert "placeholders_syntax" in checks(check_message(SRC, "Impossibile {path leggere."))


def test_unnamed_placeholders_are_rejected() -> None:
    assert checks(check_message("Hello {name}.", "Ciao {name} {}.")) == \
        {"placeholders_unnamed": True}
    assert "placeholders_unnamed" in checks(check_message("Hello {name}.", "Ciao {0}."))
    # escaped braces are text, not placeholders
    assert check_message("Use {{}} here.", "Usa {{}} qui.") == []


def test_an_unchanged_translation_is_rejected_unless_it_need_not_change() -> None:
    assert checks(check_message(SRC, SRC)) == {"unchanged": True}
    assert checks(check_message(SRC, SRC.upper().replace("{PATH}", "{path}"))) == \
        {"unchanged": True}
    for same in ("OK", "{path}", "Metnos", "Email", "Metnos {version}", "`ls -la`", "v1.2"):
        assert check_message(same, same) == [], same


def test_newlines_and_outer_spaces_must_match() -> None:
    assert checks(check_message("Done.\n", "Fatto.")) == {"newline_end": True,
                                                          "newline_count": True}
    assert checks(check_message("\nDone.", "Fatto.")) == {"newline_begin": True,
                                                          "newline_count": True}
    assert checks(check_message("a b.\nc d.", "a b. c d.")) == {"newline_count": True}
    assert checks(check_message("  Done.", "Fatto.")) == {"space_begin": True}
    assert checks(check_message("Done: ", "Fatto:")) == {"space_end": True}


def test_control_and_zero_width_characters_are_rejected() -> None:
    found = check_message("Read the file.", "Leggi\u200b il\x07 file.")
    assert found == [Problem("control_chars", "control or zero-width characters "
                                              "U+0007, U+200B", True)]


def test_warnings_do_not_reject() -> None:
    found = check_message("Delete the file.", "Elimina  il file eliminare eliminare")
    assert checks(found) == {"double_space": False, "end_punctuation": False,
                             "duplicate_words": False}
    assert enforced(found) == []


def test_end_punctuation_knows_cjk_forms() -> None:
    assert check_message("Done.", "完了。") == []
    assert check_message("Really?", "本当？") == []
    assert check_message("Wait...", "Aspetta…") == []
    assert checks(check_message("Done.", "Fatto!")) == {"end_punctuation": False}


def test_plural_tables() -> None:
    source = {"one": "One file.", "other": "{count} files."}
    assert check_message(source, {"one": "Un file.", "many": "{count} di file.",
                                  "other": "{count} file."}) == []
    assert checks(check_message(source, {"one": "Un file."})) == {"plural_other": True}
    assert "plural_category" in checks(check_message(source, {"single": "x", "other": "y"}))
    renamed = check_message(source, {"one": "Un file.", "other": "{numero} file."})
    assert renamed == [Problem("placeholders", "[other] {count} missing, {numero} unexpected")]
    added = check_message(source, {"one": "Un file {name}.", "other": "{count} file."})
    assert added == [Problem("placeholders", "[one] {name} unexpected")]
    assert checks(check_message(source, "{count} file.")) == {"plural_forms": True}
    assert check_message("{count} items.", {"one": "Un elemento.", "other": "{count} elementi."}) \
        == []
    assert checks(check_message(source, dict(source))) == {"unchanged": True}


def test_check_prompt_on_the_real_planner() -> None:
    en = (resources_path("prompts") / "en" / "planner.j2").read_text(encoding="utf-8")
    it = (resources_path("prompts") / "it" / "planner.j2").read_text(encoding="utf-8")
    assert check_prompt(en, it) == []
    assert checks(check_prompt(en, en)) == {"unchanged": True}
    renamed = it.replace("t.description", "t.descrizione")
    assert checks(check_prompt(en, renamed)) == {"skeleton_attributes": True}


def test_check_prompt_rejects_broken_or_extended_templates() -> None:
    src = "{% block a %}Hello {{ name }}.{% endblock %}"
    assert checks(check_prompt(src, "{% block a %}Ciao {{ name }.{% endblock %}")) == \
        {"prompt_parse": True}
    extended = check_prompt(src, '{% block a %}Ciao {{ name | attr("x") }}.'
                                 '{% include "secrets.j2" %}{% endblock %}')
    found = checks(extended)
    assert found.keys() >= {"prompt_new_construct", "skeleton_filters", "skeleton_templates"}
    assert all(found.values())
    detail = next(p.detail for p in extended if p.check == "prompt_new_construct")
    assert detail == "not in the source: tag Include, filter attr, template secrets.j2"
    assert "control_chars" in checks(check_prompt(src, src.replace("Hello", "Ciao\u200b")))


def test_check_prose_for_descriptions_and_affinity() -> None:
    assert check_prose("Read a file of the workspace.", "Legge un file del workspace.") == []
    assert checks(check_prose("Read a file of the workspace.",
                              "Read a file of the workspace.")) == {"unchanged": True}
    assert check_prose(["read", "file", "open"], ["leggi", "file", "apri"]) == []
    assert checks(check_prose(["read"], [])) == {"affinity_empty": True}
    assert checks(check_prose(["read", "open"], ["leggi", "Leggi"])) == \
        {"affinity_duplicate": True, "affinity_case": False}
    assert checks(check_prose(["read"], ["leggi il file"])) == {"affinity_keyword": True}
    assert checks(check_prose(["read", "open", "file"], ["open", "read", "file"])) == \
        {"unchanged": True}
    assert check_prose(["file"], ["file"]) == []
    assert checks(check_prose("Read.", ["leggi"])) == {"shape": True}


def test_every_check_is_described_in_both_languages() -> None:
    for lang in ("en", "it"):
        catalog = i18n.catalog(lang)
        missing = [c for c in CHECKS if f"CHECK_I18N_{c.upper()}" not in catalog]
        assert missing == [], f"{lang}: {missing}"
    line = describe(Problem("placeholders", "{path} missing"), "it")
    assert line == "[respinto] I segnaposto sono diversi da quelli dell'originale: {path} missing"
    assert describe(Problem("double_space", "x", False), "en").startswith("[warning] Double")


def test_a_word_file_keeps_the_keys_every_language_has() -> None:
    en = 'every = ["every"]\n[days]\nweekend = "0,6"\n[priors]\ncompose = 0.4\n'
    it = 'every = ["ogni"]\n[days]\n"fine settimana" = "0,6"\n[priors]\ncompose = 0.4\n'
    good = 'every = ["chaque"]\n[days]\n"week-end" = "0,6"\n[priors]\ncompose = 0.4\n'
    assert enforced(check_lexicon(en, good, [en, it])) == []
    renamed = good.replace("compose", "composer")
    assert [p.check for p in enforced(check_lexicon(en, renamed, [en, it]))] == ["lexicon_keys"]
    retyped = good.replace('every = ["chaque"]', 'every = "chaque"')
    assert [p.check for p in enforced(check_lexicon(en, retyped, [en, it]))] == ["lexicon_types"]
    assert [p.check for p in check_lexicon(en, "every = [", [en])] == ["lexicon_parse"]
    assert [p.check for p in check_lexicon(en, en, [en, it])] == ["unchanged"]
    more = good + '[extra]\nsoixante = 60\n'
    assert [(p.check, p.enforced) for p in check_lexicon(en, more, [en, it])] == [
        ("lexicon_values", False)]


def test_a_document_keeps_its_headings_numbered_items_and_code() -> None:
    en = "# Telos\n\nAims:\n\n1. Keep `notes.md` tidy.\n2. Save time.\n"
    fr = "# Telos\n\nButs :\n\n1. Garder `notes.md` en ordre.\n2. Gagner du temps.\n"
    assert check_document(en, fr) == []
    assert [p.check for p in check_document(en, fr.replace("2. ", "- "))] == ["numbered_items"]
    assert [p.check for p in check_document(en, fr.replace("# Telos", "Telos"))] == ["headings"]
    assert [p.check for p in check_document(en, fr.replace("`notes.md`", "notes.md"))] == ["code"]
