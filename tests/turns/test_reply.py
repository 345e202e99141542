"""Replies are composed from i18n messages and the executors' own results, in the session
language; nothing is invented."""

from __future__ import annotations

from metnos.turns.reply import MAX_LIST_ITEMS, StepOutcome, compose, result_vars


def test_lists_become_bullets_with_a_count_and_are_capped() -> None:
    files = [f"f{i}.md" for i in range(MAX_LIST_ITEMS + 5)]
    out = result_vars({"files": files, "truncated": False})
    assert out["files_count"] == MAX_LIST_ITEMS + 5
    lines = out["files"].splitlines()
    assert lines[0] == "- f0.md" and lines[-1] == "- … (+5)" and len(lines) == MAX_LIST_ITEMS + 1


def test_each_outcome_in_the_session_language() -> None:
    done = StepOutcome("fs_find", "done", result={"files": ["a.md", "b.md"]})
    refused = StepOutcome("fs_read", "refused", key="ERR_EXECUTOR_NOT_FOUND",
                          vars={"executor": "fs_read"})
    it = compose([done, refused], None, "it")
    en = compose([done, refused], "Here you go.", "en")
    assert it == ("Ho trovato 2 file:\n- a.md\n- b.md\n\n"
                  "Non ho uno strumento chiamato fs_read, quindi non ho fatto nulla.")
    assert en.startswith("Here you go.\n\nI found 2 files:\n- a.md")
    one = StepOutcome("fs_find", "done", result={"files": ["a.md"]})
    assert compose([one], None, "en") == "I found 1 file:\n- a.md"  # CLDR plural forms


def test_an_executor_without_its_own_message_shows_its_result() -> None:
    text = compose([StepOutcome("owner_tool", "done", result={"n": 3, "items": ["x"]})], None,
                   "en")
    assert text == "Done.\nn: 3\nitems:\n- x"  # its own sentence or the generic one, never its name


def test_nothing_to_do() -> None:
    assert compose([], None, "it") == "Non ho nulla da fare per questa richiesta."
