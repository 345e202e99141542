"""`metnos chat` prints the model's text as it streams and the reply without repeating it
(the rendering of the turn's events; the served end-to-end run is in test_chat_served.py)."""

from __future__ import annotations

from typing import Any

import pytest

from metnos.faces.cli._client import ServerEvent
from metnos.faces.cli.chat import _show, _View, unstreamed


def events(*specs: tuple[str, dict[str, Any]]) -> list[ServerEvent]:
    return [ServerEvent(seq, kind, data) for seq, (kind, data) in enumerate(specs, 1)]


def shown(view: _View, *specs: tuple[str, dict[str, Any]]) -> list[bool]:
    return [_show(event, view) for event in events(*specs)]


def delta(text: str, think: int = 1) -> tuple[str, dict[str, Any]]:
    return ("delta", {"text": text, "think": think})


def reply(text: str, *activity: str) -> tuple[str, dict[str, Any]]:
    items = [{"executor": "fs_read", "status": "done", "text": t, "action_id": None,
              "undo": False, "approval_id": None} for t in activity]
    return ("reply", {"text": text, "status": "completed", "activity": items,
                      "stop_reason": None})


def test_unstreamed() -> None:
    assert unstreamed("Hello world", "Hello ") == "world"
    assert unstreamed("Hello world", "Hello world") == ""
    assert unstreamed("Hello world", "") == "Hello world"
    assert unstreamed("Hello world", "Hello world\n") == ""  # blanks only: the same
    assert unstreamed("Goodbye", "Hello ") is None


def test_streamed_text_is_printed_once_then_the_activity(
        capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("en", as_json=False, ask=False)
    flags = shown(view, ("status", {"status": "planning"}), delta("The log "),
                  delta("says: disk full."),
                  reply("The log says: disk full.", "I read log.txt (2 KB)."))
    assert flags == [False, False, False, True]
    out = capsys.readouterr()
    assert out.out == "The log says: disk full.\nI read log.txt (2 KB).\n"
    assert out.err == "… thinking\n"  # the status line stays on stderr


def test_pieces_appear_as_they_come(capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("en", as_json=False, ask=False)
    _show(events(delta("Hel"))[0], view)
    assert capsys.readouterr().out == "Hel"  # flushed at once, no newline yet
    _show(events(delta("lo"))[0], view)
    assert capsys.readouterr().out == "lo"


def test_a_tool_call_between_two_model_calls(capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("en", as_json=False, ask=False)
    shown(view, delta("Let me look.", think=1),
          ("step", {"executor": "fs_read", "state": "started"}),
          delta("It says ", think=2), delta("hi.", think=2), reply("It says hi."))
    out = capsys.readouterr()
    assert out.out == "Let me look.\nIt says hi.\n"  # each model call on its own line
    assert out.err == "… Reading your file…\n"


def test_a_reply_that_differs_from_the_stream_is_printed_whole_apart(
        capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("en", as_json=False, ask=False)
    shown(view, delta("I will write"), reply("The budget ran out: I wrote nothing.",
                                            "Stopped: too many model calls."))
    assert capsys.readouterr().out == (
        "I will write\nThe budget ran out: I wrote nothing.\nStopped: too many model calls.\n")


def test_a_partly_streamed_reply_prints_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("it", as_json=False, ask=False)
    shown(view, delta("Ciao, "), reply("Ciao, come va?"))
    assert capsys.readouterr().out == "Ciao, come va?\n"


def test_an_unstreamed_reply_and_json_mode(capsys: pytest.CaptureFixture[str]) -> None:
    shown(_View("en", as_json=False, ask=False), reply("No model here.", "Nothing ran."))
    assert capsys.readouterr().out == "No model here.\nNothing ran.\n"
    shown(_View("en", as_json=True, ask=False), delta("streamed"), reply("streamed"))
    assert capsys.readouterr().out == ""  # --json: stdout is the turn's JSON alone


def test_a_card_after_streamed_text_starts_on_a_fresh_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("en", as_json=False, ask=False)
    shown(view, delta("I need your approval."))
    view.say("Your approval is needed")
    assert capsys.readouterr().out == "I need your approval.\nYour approval is needed\n"


def test_a_change_shows_its_short_undo_handle_not_the_whole_id(
        capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("en", as_json=False, ask=False)
    action_id = "3f9c2a7be1d04c5e8a6b0c1d2e3f4a5b"
    item = {"executor": "lists", "status": "done", "text": "Added bread to the shopping list.",
            "action_id": action_id, "undo": True, "approval_id": None}
    prose = f"I wrote 5 bytes to a.md. To undo it: metnos undo {action_id}"
    _show(ServerEvent(1, "reply", {"text": prose, "status": "completed", "activity": [item],
                                   "stop_reason": None}), view)
    out = capsys.readouterr().out
    assert action_id not in out
    assert out == ("I wrote 5 bytes to a.md. To undo it: metnos undo 3f9c2a7b\n"
                   "Added bread to the shopping list. (to undo: metnos undo 3f9c2a7b)\n")


def test_the_step_line_names_the_tool_only_with_verbose(
        capsys: pytest.CaptureFixture[str]) -> None:
    step = ("step", {"executor": "fs_find", "state": "started", "text": "Looking for your files…"})
    shown(_View("en", as_json=False, ask=False), step)
    assert capsys.readouterr().err == "… Looking for your files…\n"  # the server's words
    shown(_View("en", as_json=False, ask=False, verbose=True), step)
    assert capsys.readouterr().err == "… Looking for your files… (fs_find)\n"


def test_an_activity_item_the_reply_already_says_is_not_repeated(
        capsys: pytest.CaptureFixture[str]) -> None:
    view = _View("en", as_json=False, ask=False)
    shown(view, reply("Added bread to the shopping list (2 items).",
                      "Added bread to the shopping list (2 items).", "I read list.md."))
    assert capsys.readouterr().out == (
        "Added bread to the shopping list (2 items).\nI read list.md.\n")
