"""How a turn's run reads in the Prefect UI, as plain functions (no Prefect here)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from metnos.turns import runview
from metnos.turns.context import ModelCall, TurnContext

ROME = ZoneInfo("Europe/Rome")
NOON_UTC = datetime(2026, 12, 1, 11, 5, tzinfo=UTC)


def ctx(lang: str = "en", **changes: object) -> TurnContext:
    turn = TurnContext("t1", "s1", "alice", "telegram", "alice", lang, "Supervised",
                       "read my <secret> diary")
    for name, value in changes.items():
        setattr(turn, name, value)
    return turn


def item(executor: str, status: str, **extra: object) -> dict[str, object]:
    return {"executor": executor, "status": status, "text": f"{executor} {status}",
            "action_id": None, "undo": False, "approval_id": None, **extra}


def test_the_name_says_channel_user_local_time_and_what_ran_never_the_text() -> None:
    turn = ctx(activity=[item("history", "done"), item("fs_find", "done"),
                         item("fs_read", "done"), item("fs_read", "done"),
                         item("fs_write", "done"), item("lists", "done")])
    assert runview.run_name(turn, NOON_UTC, ROME) == "telegram · alice · 12:05:00 · #t1"
    used = runview.executors_used(turn)
    assert used == ["fs_find", "fs_read", "fs_write", "lists"]
    assert runview.run_name(turn, NOON_UTC, ROME, used) == (
        "telegram · alice · 12:05:00 · #t1 · fs_find, fs_read, fs_write +1")
    assert runview.run_tags(turn, used) == [
        "metnos-turn", "channel:telegram", "user:alice", "lang:en", "executor:fs_find",
        "executor:fs_read", "executor:fs_write", "executor:lists"]


def test_two_turns_in_the_same_second_have_two_names() -> None:
    """Issue 27, loose end: `api · owner · 02:39` named every turn of that minute alike."""
    first = ctx(turn_id="9f2c41d0-7a6b-4c1e-8d2f-0123456789ab")
    second = ctx(turn_id="9f2c41d1-0000-4c1e-8d2f-0123456789ab")
    names = {runview.run_name(t, NOON_UTC, ROME) for t in (first, second)}
    assert names == {"telegram · alice · 12:05:00 · #9f2c41d0",
                     "telegram · alice · 12:05:00 · #9f2c41d1"}
    odd = ctx(user_id="bob\x1b[31m · x", turn_id="ab\ncd")  # outside text stays one line
    shown = runview.run_name(odd, NOON_UTC, ROME)
    assert "\x1b" not in shown and "\n" not in shown and shown.endswith("#abcd")


def test_a_waiting_run_says_what_it_waits_for() -> None:
    line = runview.waiting_line("Move homework.md\nto the trash", "owner", "a1b2c3d4e5", "en")
    assert line == ("Waiting for owner to approve: Move homework.md to the trash "
                    "(approval a1b2c3d4)")
    assert runview.waiting_line("Sposta a.md", "owner", "a1b2", "it").startswith(
        "In attesa che owner approvi: Sposta a.md")


def test_the_outcome_names_the_final_state() -> None:
    cases = [
        (ctx(), True, "Answered"),
        (ctx(activity=[item("fs_read", "done")]), True, "Answered"),
        (ctx(), False, "Not understood"),
        (ctx(activity=[item("fs_read", "done"), item("fs_move", "denied")]), True, "Denied"),
        (ctx(activity=[item("fs_move", "expired")]), True, "Expired"),
        (ctx(activity=[item("fs_read", "done")], stop_reason="MSG_AGENT_STOP_REPEAT"), True,
         "Stopped"),
        (ctx(activity=[item("fs_delete", "refused")]), True, "Refused"),
        (ctx(activity=[item("fs_read", "failed")]), True, "Failed steps"),
        (ctx(activity=[item("fs_read", "failed"), item("fs_read", "done")]), True, "Answered"),
    ]
    for turn, understood, name in cases:
        assert runview.outcome(turn, understood=understood).name == name, turn.activity
    assert runview.outcome(ctx("it"), understood=False).message == (
        "Non capito: non è stato fatto nulla.")


def test_the_card_holds_question_steps_reply_and_undo_ids_as_inert_text() -> None:
    turn = ctx("it", activity=[item("fs_write", "done", action_id="ab12", undo=True,
                                    text="Scritto *note*.md")])
    text = runview.card(turn, "read my <secret> diary", "Ecco: <script>x()</script>",
                        NOON_UTC, ROME)
    assert "### Un turno di Metnos" in text and "2026-12-01 12:05" in text
    assert "> read my \\<secret\\> diary" in text
    assert "\\<script\\>" in text and "<script>" not in text
    assert "`fs_write` · fatto · Scritto \\*note\\*\\.md" in text
    assert "per annullare: `metnos undo ab12`" in text
    assert runview.artifact_key(ctx(turn_id="A1_b2")) == "turn-a1-b2"


def test_the_card_shows_the_loop_one_model_call_a_line() -> None:
    turn = ctx("en", activity=[item("fs_read", "done", text="Looked at notes.md")])
    turn.calls = [ModelCall(1, 212.4, ("fs_read", "*bold*`x")), ModelCall(2, 80.0),
                  ModelCall(3, 5.0, failed=True)]
    text = runview.card(turn, "what do my notes say?", "Milk.", NOON_UTC, ROME)
    loop = text[text.index("**Model calls**"):text.index("**Steps**")]
    assert loop.splitlines()[2:5] == [
        "1. 212 ms · asked for `fs_read`, ``*bold*`x``", "2. 80 ms · answered", "3. 5 ms · failed"]
    assert "**Model calls**" not in runview.card(ctx("en"), "q", "r", NOON_UTC, ROME)
    assert "1. 212 ms · ha chiesto `fs_read`" in runview.card(
        replace(turn, lang="it"), "q", "r", NOON_UTC, ROME)
