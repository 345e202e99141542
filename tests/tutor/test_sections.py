"""Splitting the real docs and manifests into catalog sections."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from metnos.features.tutor import sections as S
from metnos.features.tutor.sections import all_sections, chunks, doc_sections, slug
from metnos.ground.paths import resources_path


def test_slugs_are_github_anchors() -> None:
    assert slug("What it remembers: the mnestoma") == "what-it-remembers-the-mnestoma"
    assert slug("The terminal: `metnos chat`") == "the-terminal-metnos-chat"
    assert slug("Cosa gli è mancato: i proto-mnest") == "cosa-gli-è-mancato-i-proto-mnest"
    assert slug("1. Start it") == "1-start-it"


def test_long_text_is_cut_at_paragraphs() -> None:
    paras = [f"Paragraph {n} " + "word " * 60 for n in range(10)]
    pieces = chunks("\n\n".join(paras), 700)
    assert len(pieces) > 3 and all(len(p) <= 700 for p in pieces)
    assert all(p.startswith("Paragraph") for p in pieces)  # never cut inside a paragraph
    assert " ".join(pieces).split() == " ".join(paras).split()
    code = chunks("```\n" + "\n".join(f"metnos x {n}" for n in range(200)) + "\n```", 300)
    assert len(code) > 5 and all(c.startswith("```") and c.endswith("```") for c in code)
    assert all(len(c) <= 300 for c in code)
    giant = chunks("x " * 2000, 500)
    assert all(len(p) <= 500 for p in giant) and len(giant) >= 8


def test_real_docs_sections() -> None:
    found = all_sections()
    ids = Counter((s.id, s.lang) for s in found)
    assert max(ids.values()) == 1
    docs = [s for s in found if s.kind == "doc"]
    assert all(len(s.text) <= S.MAX_CHARS for s in docs)
    ager = next(s for s in docs if s.id == "docs/en/memory.md#the-ager")
    assert ager.title == "Memory and evolution › The ager"
    assert ager.url == "/docs/en/memory#the-ager" and ager.audience == "everyone"
    twin = next(s for s in docs if s.id == "docs/it/memoria.md#lager")
    assert twin.concept == ager.concept == "memory#6"
    assert twin.source == "docs/it/memoria.md" and twin.lang == "it"
    fenced = [s for s in docs if s.text.count("```") % 2]  # a code block is never split open
    assert fenced == []
    assert not any(s.title.endswith("# metnos") for s in docs)  # a '#' in code is no heading


def test_translations_pair_page_by_page() -> None:
    by_lang: dict[str, set[str]] = {}
    for s in doc_sections(resources_path("docs")):
        by_lang.setdefault(s.lang, set()).add(s.concept)
    assert by_lang["en"] == by_lang["it"]


def test_manifests_give_a_contract_and_one_argument_each_per_language() -> None:
    found = [s for s in all_sections()
             if s.source == "executors/fs_read"]
    kinds = Counter((s.kind, s.lang) for s in found)
    assert kinds == {("contract", "en"): 1, ("contract", "it"): 1,
                     ("argument", "en"): 2, ("argument", "it"): 2}
    contract = next(s for s in found if s.kind == "contract" and s.lang == "it")
    assert "Non modifica nulla." in contract.text and "Restituisce: path" in contract.text
    arg = next(s for s in found if s.id == "executors/fs_read#arg-path" and s.lang == "en")
    assert arg.text.startswith("path (path): Path of the file to read")
    assert arg.url == "/docs/executors/fs_read#arg-path"


def test_front_matter_and_owner_pages(tmp_path: Path) -> None:
    en = tmp_path / "en"
    (en / "owner").mkdir(parents=True)
    (en / "keys.md").write_text("---\nconcept: secrets\naudience: owner\n---\n# Keys\n\n"
                                "Where the keys live.\n\n## Rotation\n\n" + "Rotate. " * 40,
                                encoding="utf-8")
    (en / "owner" / "backup.md").write_text("# Backup\n\nCopy the home.\n", encoding="utf-8")
    found = {s.id: s for s in doc_sections(tmp_path)}
    assert set(found) == {"docs/en/keys.md#keys", "docs/en/keys.md#rotation",
                          "docs/en/owner/backup.md#backup"}
    assert {s.audience for s in found.values()} == {"owner"}
    assert found["docs/en/keys.md#rotation"].concept == "secrets#1"
    assert found["docs/en/owner/backup.md#backup"].url == "/docs/en/owner/backup"
    assert "---" not in found["docs/en/keys.md#keys"].text
