"""TELOS.md into 3-7 weighted aims, in Italian and English: numbered or bulleted lists,
continuation lines, weight markers without words, warnings and fallbacks, and a file edited
without a restart read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metnos.features.proposals.telos import (
    WARN_EMPTY,
    WARN_TOO_FEW,
    WARN_TOO_MANY,
    read_telos,
    telos_of,
)
from metnos.ground.settings import get_settings

SEED_IT = """\
### TELOS.md (esempio)

1. Liberare il mio tempo: preferisci ciò che riduce il mio carico manuale
   ripetitivo.
2. Ordine, non perfezione: meglio una casa di file a posto al 70% in
   automatico, che uno sforzo continuo per averla perfetta. (×2)
3. Nessuna sorpresa sulle spese: soglie chiare, notifiche tempestive.
4. Solitudine protetta: non disturbarmi la sera dopo le 21, salvo urgenze
   reali.
5. Coltivare gli strumenti: se ti chiedo qualcosa che il tuo pool non sa
   ancora fare, esaurisci le strategie di sintesi. [3]
"""

BULLETS_EN = """\
# Telos

What I want Metnos to favour.

- Free my time from repetitive chores [2]
* Keep the files in order
+ No surprises on spending (x1.5)
- Protect my evenings
"""


def texts(lang: str, text: str) -> list[tuple[str, float]]:
    return [(a.text, round(a.weight, 4)) for a in telos_of(text, lang).aims]


def test_the_seeds_numbered_list_in_italian_with_continuations_and_weights() -> None:
    found = telos_of(SEED_IT, "it")
    assert found.warning is None and found.found == 5
    assert [a.n for a in found.aims] == [1, 2, 3, 4, 5]
    assert found.aims[0].text == ("Liberare il mio tempo: preferisci ciò che riduce il mio "
                                  "carico manuale ripetitivo.")
    assert found.aims[1].text.endswith("che uno sforzo continuo per averla perfetta.")
    assert found.aims[4].text.endswith("esaurisci le strategie di sintesi.")
    assert [round(a.weight, 4) for a in found.aims] == [0.125, 0.25, 0.125, 0.125, 0.375]
    assert sum(a.weight for a in found.aims) == pytest.approx(1.0)


def test_bullets_in_english_any_marker() -> None:
    assert texts("en", BULLETS_EN) == [
        ("Free my time from repetitive chores", round(2 / 5.5, 4)),
        ("Keep the files in order", round(1 / 5.5, 4)),
        ("No surprises on spending", round(1.5 / 5.5, 4)),
        ("Protect my evenings", round(1 / 5.5, 4))]


def test_words_in_brackets_are_not_weights() -> None:
    found = telos_of("1. Save (2020) receipts\n2. Order [files]\n3. Calm (x)\n", "en")
    assert [a.text for a in found.aims] == ["Save (2020) receipts", "Order [files]",
                                            "Calm (x)"]
    assert {round(a.weight, 4) for a in found.aims} == {round(1 / 3, 4)}


@pytest.mark.parametrize("lang", ["it", "en"])
def test_too_few_too_many_and_none_warn_in_the_users_language(lang: str) -> None:
    few = telos_of("1. Only this\n2. And this\n", lang)
    assert few.warning == WARN_TOO_FEW and len(few.aims) == 2
    assert [a.weight for a in few.aims] == [0.5, 0.5]
    many = telos_of("".join(f"- aim {n}\n" for n in range(1, 10)), lang)
    assert many.warning == WARN_TOO_MANY and many.found == 9
    assert [a.text for a in many.aims] == [f"aim {n}" for n in range(1, 8)]
    assert sum(a.weight for a in many.aims) == pytest.approx(1.0)
    empty = telos_of("# Telos\n\nJust prose, no list.\n", lang)
    assert empty.warning == WARN_EMPTY and empty.found == 0
    assert len(empty.aims) == 3  # the shipped TELOS.md of the language
    shipped = (get_settings().resources_root / "i18n" / lang / "workspace" / "TELOS.md")
    assert empty.aims[0].text in shipped.read_text(encoding="utf-8")
    words = {"it": ("TELOS.md ha 2 obiettivi: scrivine tra 3 e 7",
                    "contano solo i primi 7", "non ha obiettivi"),
             "en": ("TELOS.md has 2 aims: write between 3 and 7",
                    "only the first 7 count", "has no aims")}[lang]
    assert words[0] in (few.warning_text(lang) or "")
    assert words[1] in (many.warning_text(lang) or "")
    assert words[2] in (empty.warning_text(lang) or "")


def test_an_edit_is_read_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "TELOS.md"
    path.write_text("1. one\n2. two\n3. three\n", encoding="utf-8")
    first = read_telos(tmp_path, "en")
    assert [a.text for a in first.aims] == ["one", "two", "three"]
    assert read_telos(tmp_path, "en") is first  # unchanged: not parsed again
    path.write_text("1. one [3]\n2. two\n3. three\n4. four\n", encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = read_telos(tmp_path, "en")
    assert [a.text for a in second.aims] == ["one", "two", "three", "four"]
    assert second.aims[0].weight == pytest.approx(0.5)
    path.unlink()
    assert read_telos(tmp_path, "en").warning == WARN_EMPTY
