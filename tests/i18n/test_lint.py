"""i18n_lint_text in process: masking, verdicts, spans, bad input, candidates, import purity."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from lingua import Language, LanguageDetectorBuilder

from metnos.ground.i18n import lint
from metnos.ground.i18n.lint import MAX_SPANS, detect_language, i18n_lint_text, mask

# The note's case (notes/i18n_tutor.md §3b): an Italian reply around an English bash block.
IT_REPLY_BASH = """Ho aggiornato lo script di backup. Esegui:

```bash
# Create the backup directory if it does not exist, then run the backup
mkdir -p /var/backups/home
rsync --archive --delete --exclude node_modules /home/user/ /var/backups/home/
# Check the exit status and print a message when the backup has failed
if [ $? -ne 0 ]; then echo "Backup failed, check the log file"; fi
```

Fatto.
"""
IT_PARAGRAPH = (
    "Ho letto il file delle note e ho trovato tre errori di battitura nella seconda sezione. "
    "Li ho corretti e ho lasciato il resto com'era."
)
EN_SENTENCE = (
    "The remaining paragraphs are written in English and should be translated before the release."
)
MIXED = f"{IT_PARAGRAPH} {EN_SENTENCE} Il resto va bene, ma controlla le date."


def test_module_imports_only_stdlib_and_lingua() -> None:
    tree = ast.parse(Path(lint.__file__).read_text(encoding="utf-8"))
    allowed = set(sys.stdlib_module_names) | {"lingua", "__future__"}
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module is not None, "no relative imports"
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
    assert "lingua" in imported
    assert imported <= allowed, imported - allowed


def test_mask_keeps_offsets_and_prose() -> None:
    text = (
        "Apri `config.toml` e visita https://example.org/a?b=1 oppure www.metnos.dev;\n"
        "$ metnos init --force\n"
        "# systemctl restart nginx\n"
        "# Installazione\n"
        "Errore ERR_FILE_NOT_FOUND su notes/todo.md, /etc/hosts e ~/.ssh con {path} e %s.\n"
        "Azione 3f2a9c1e-1234-4abc-9def-0123456789ab, commit 9f86d081884c7d65, fs_read, .env.\n"
        "```\nsudo rm -rf /\n```\nFine."
    )
    masked = mask(text)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(text) if c == "\n"] == [
        i for i, c in enumerate(masked) if c == "\n"
    ]
    for gone in ("config", "example", "www", "metnos init", "systemctl", "ERR_FILE", "todo",
                 "hosts", "ssh", "{path}", "%s", "3f2a9c1e", "9f86d081", "fs_read", ".env",
                 "sudo", "rm -rf"):
        assert gone not in masked, gone
    for kept in ("Apri", "e visita", "oppure", "# Installazione", "Errore", "Azione", "Fine."):
        at = text.index(kept)
        assert masked[at : at + len(kept)] == kept, kept  # prose stays at the same offsets


def test_the_notes_bash_reply_needs_masking() -> None:
    detector = LanguageDetectorBuilder.from_languages(Language.ITALIAN, Language.ENGLISH).build()
    assert detector.detect_language_of(IT_REPLY_BASH) == Language.ENGLISH  # unmasked: wrong
    lang, confidence = detect_language(IT_REPLY_BASH, ("it", "en"))
    assert lang == "it" and confidence > 0.6
    result = i18n_lint_text(IT_REPLY_BASH, "it")
    assert (result.decision, result.detected, result.share, result.spans) == ("pass", "it", 1.0, ())


@pytest.mark.parametrize(
    "text", ["", "ok", "grazie", "Apaga tudo", "Ok, fatto: `docker compose up -d`", "Sì!\n\nOK"]
)
@pytest.mark.parametrize("expected", ["it", "en", "pt-BR"])
def test_short_text_never_fails(text: str, expected: str) -> None:
    result = i18n_lint_text(text, expected)
    assert (result.decision, result.reason, result.share) == ("pass", "too_short", None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (IT_PARAGRAPH, "it"),
        (IT_PARAGRAPH, "it-CH"),
        ("O arquivo foi movido para a pasta de arquivo e o índice foi atualizado.", "pt-BR"),
        ("The file was moved to the archive folder and the index was updated.", "en-GB"),
    ],
)
def test_text_in_the_expected_language_passes(text: str, expected: str) -> None:
    result = i18n_lint_text(text, expected)
    assert result.decision == "pass" and result.reason == "ok"
    assert result.detected == expected.split("-")[0] and result.share == 1.0


def test_mixed_paragraph_warns_with_the_foreign_span() -> None:
    result = i18n_lint_text(MIXED, "it")
    assert (result.decision, result.reason, result.expected) == ("warn", "mixed", "it")
    assert result.share is not None and 0.4 <= result.share < 0.8
    (span,) = result.spans
    assert span.language == "en" and span.confidence > 0.6
    assert MIXED[span.start : span.end] == EN_SENTENCE  # offsets point into the original
    assert len(span.text) <= 80 and span.text.endswith("…")


def test_wrong_language_warns_never_invalid() -> None:
    result = i18n_lint_text(f"{EN_SENTENCE} Nothing here is in Italian at all.", "it")
    assert (result.decision, result.reason, result.detected, result.share) == (
        "warn", "unexpected_language", "en", 0.0
    )
    assert len(result.spans) == 1  # adjacent English sentences are one finding


def test_spans_are_capped() -> None:
    text = "\n\n".join([IT_PARAGRAPH, EN_SENTENCE] * 30)
    result = i18n_lint_text(text, "it")
    assert result.decision == "warn" and len(result.spans) == MAX_SPANS
    assert all(text[s.start : s.end] == EN_SENTENCE for s in result.spans)


def test_too_large_is_invalid() -> None:
    text = IT_PARAGRAPH * 10
    assert i18n_lint_text(text, "it", len(text)).decision == "pass"
    result = i18n_lint_text(text, "it", len(text) - 1)
    assert (result.decision, result.reason, result.spans) == ("invalid", "too_large", ())
    assert i18n_lint_text("a" * 12001, "it").reason == "too_large"  # default limit


@pytest.mark.parametrize("tag", ["klingon", "", "x", "zz", "und", "it--CH", "12", None, 42])
def test_bad_expected_language_is_invalid(tag: object) -> None:
    result = i18n_lint_text(IT_PARAGRAPH, tag)  # type: ignore[arg-type]
    assert (result.decision, result.reason) == ("invalid", "language_invalid")


@pytest.mark.parametrize("limit", [0, -1, True, "12", 1.5, 10**6])
def test_bad_limit_is_invalid(limit: object) -> None:
    result = i18n_lint_text(IT_PARAGRAPH, "it", limit)  # type: ignore[arg-type]
    assert (result.decision, result.reason) == ("invalid", "limit_invalid")


def test_text_not_a_string_is_invalid() -> None:
    result = i18n_lint_text(None, "it")  # type: ignore[arg-type]
    assert (result.decision, result.reason) == ("invalid", "text_invalid")


def test_candidate_languages_are_restricted() -> None:
    spanish = "El archivo se ha movido a la carpeta del archivo y el índice se ha actualizado."
    assert detect_language(spanish)[0] == "es"
    assert detect_language(spanish, ("it", "en"))[0] != "es"  # es is not a candidate
    full = i18n_lint_text(spanish, "it")
    assert full.decision == "warn" and full.detected == "es"
    assert i18n_lint_text(spanish, "it", languages=("it", "en")).detected != "es"
    assert i18n_lint_text(IT_PARAGRAPH, "it", languages=[]).decision == "pass"  # only expected
    bad = i18n_lint_text(IT_PARAGRAPH, "it", languages=("it", "xx-bad"))
    assert (bad.decision, bad.reason) == ("invalid", "language_invalid")


def test_detect_language_contract() -> None:
    assert detect_language("ok", ("it", "en")) == (None, 0.0)  # too short
    assert detect_language("```\nrm -rf /tmp/x && ls -la /var/log\n```\n", ("it", "en")) == (
        None, 0.0)  # nothing but code
    lang, confidence = detect_language(EN_SENTENCE, ["pt-BR", "en-US"])
    assert lang == "en" and 0.6 < confidence <= 1.0
    with pytest.raises(ValueError, match="klingon"):
        detect_language(EN_SENTENCE, ("it", "klingon"))


def test_result_json_never_authorises() -> None:
    data = i18n_lint_text(MIXED, "it").to_json()
    assert json.loads(json.dumps(data)) == data
    assert (data["authorization"], data["dispatch_allowed"], data["mutation_allowed"]) == (
        "none", False, False
    )
    assert set(data["spans"][0]) == {"start", "end", "text", "language", "confidence"}
    assert data["decision"] == "warn" and data["expected"] == "it"


def test_calls_reuse_the_warm_detector() -> None:
    """After warm_up() no call builds a detector again (the speed: bench/hot_paths.py)."""
    lint.warm_up()
    before = lint._detector.cache_info()
    results = [i18n_lint_text(MIXED, "it") for _ in range(10)]
    assert lint._detector.cache_info().misses == before.misses
    assert all(r == results[0] for r in results)
