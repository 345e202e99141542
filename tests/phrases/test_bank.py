"""The phrase bank (issue 12): at least 60 everyday sentences and 20 that must not be understood
per language, run through the embedded planner in every active language.

The threshold: at least 90% of the sentences whose executor is installed get the right intent
and arguments (bench/intents.py prints the figures). The hard rule, with no threshold: no
sentence reaches a mutating executor, or a mutating action, it did not ask for."""

from __future__ import annotations

import pytest

from metnos.ground import i18n
from metnos.mechanisms.llm import household
from metnos.mechanisms.llm.embedded import plan_embedded
from tests.llm.builtin_tools import FIRST, builtin_tools, others
from tests.phrases.bank import LANGS, NONE, NOW, load, run

THRESHOLD = 0.9


@pytest.mark.parametrize("lang", LANGS)
def test_the_bank_is_large_enough(lang: str) -> None:
    bank = load(lang)
    assert len(bank["sentence"]) >= 60
    assert len(bank["not_understood"]) >= 20
    texts = [e["text"] for e in bank["sentence"]] + bank["not_understood"]
    assert len(texts) == len(set(texts))


@pytest.mark.parametrize("lang", LANGS)
def test_intent_accuracy_is_above_the_threshold(lang: str) -> None:
    report = run(lang)
    misses = [(o.text, o.expected, o.expected_args, o.got, o.got_args)
              for o in report.counted() if not o.correct]
    assert report.accuracy() >= THRESHOLD, misses


@pytest.mark.parametrize("lang", LANGS)
def test_no_sentence_changes_what_it_did_not_ask_to(lang: str) -> None:
    report = run(lang)
    assert [(o.text, o.got, o.got_args) for o in report.unasked_changes()] == []


@pytest.mark.parametrize("lang", LANGS)
def test_what_is_not_understood_runs_nothing_and_says_so_in_two_lines(lang: str) -> None:
    for outcome in run(lang).outcomes:
        if outcome.expected != NONE or outcome.got != NONE:
            continue
        plan = plan_embedded(outcome.text, lang, builtin_tools(lang), others=others(lang),
                             now=NOW, first=FIRST)
        assert plan.steps == () and plan.text is not None
        if household.unseen(outcome.text, lang) is not None:  # the weather, the news...
            assert plan.text.startswith(i18n.get("MSG_HOUSEHOLD_CANNOT_SEE", lang, what="")[:8])
            assert len(plan.text.splitlines()) == 1, plan.text  # issue 27: one plain line
            continue
        assert plan.understood is False
        assert len(plan.text.splitlines()) == 2, plan.text
        assert "<" not in plan.text and "METNOS_" not in plan.text


@pytest.mark.parametrize(("lang", "session"), [("it", "en"), ("en", "it")])
def test_the_bank_is_understood_from_a_session_in_the_other_language(
        lang: str, session: str) -> None:
    """Every active language is matched: the same intents, answered in the bank's language
    (an emoji matches in both: the session's wins)."""
    same = run(lang)
    crossed = run(lang, session=session)
    for mine, theirs in zip(same.outcomes, crossed.outcomes, strict=True):
        assert (theirs.got, theirs.got_args) == (mine.got, mine.got_args), mine.text
        if mine.got != NONE:
            emoji = not any(char.isalpha() for char in mine.text)
            assert theirs.lang == (session if emoji else lang), mine.text
