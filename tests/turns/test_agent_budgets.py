"""The loop's budgets, its detector and the cap of tool results, as plain code."""

from __future__ import annotations

import time

from metnos.ground.settings.agent import AgentSettings
from metnos.turns import budget as budgets
from metnos.turns.budget import Budget, LoopDetector
from metnos.turns.conversation import cap


def test_same_call_warns_at_three_and_stops_at_five() -> None:
    detector = LoopDetector()
    seen = [detector.observe("fs_read", "d1") for _ in range(5)]
    assert [verdict for verdict, _ in seen] == ["ok", "ok", "warn", "warn",
                                                budgets.STOP_REPEAT]
    assert seen[-1][1] == 5


def test_other_arguments_are_other_calls() -> None:
    detector = LoopDetector()
    assert {detector.observe("fs_read", f"d{i}")[0] for i in range(10)} == {"ok"}


def test_two_calls_alternating_for_four_cycles_stop() -> None:
    detector = LoopDetector()
    verdicts = [detector.observe(*(("fs_read", "a") if i % 2 == 0 else ("fs_find", "b")))[0]
                for i in range(8)]
    assert verdicts[:7] == ["ok", "ok", "ok", "ok", "warn", "warn", "warn"]
    assert verdicts[7] == budgets.STOP_ALTERNATING


def test_malformed_calls_stop_after_three_in_a_row_only() -> None:
    detector = LoopDetector()
    assert [detector.malformed(bad) for bad in (True, True, False, True, True)] == [None] * 5
    assert detector.malformed(True) == budgets.STOP_MALFORMED


def test_budgets_name_the_first_that_ended() -> None:
    spent = Budget(AgentSettings(max_model_calls=2, max_tool_calls=3, deadline_s=60,
                                 max_cost_per_turn_usd=0.1))
    assert spent.spent() is None
    spent.cost_usd = 0.1
    assert spent.spent() == budgets.STOP_COST
    spent.tool_calls = 3
    assert spent.spent() == budgets.STOP_TOOL_CALLS
    spent.model_calls = 2
    assert spent.spent() == budgets.STOP_MODEL_CALLS
    assert spent.vars(budgets.STOP_MODEL_CALLS) == {"count": 2}


def test_the_deadline_leaves_out_approval_waits() -> None:
    waiting = Budget(AgentSettings(deadline_s=0.2))
    with waiting.paused():
        time.sleep(0.3)
    assert waiting.spent() is None
    time.sleep(0.25)
    assert waiting.spent() == budgets.STOP_DEADLINE


def test_cap_keeps_head_and_tail_and_says_what_was_cut() -> None:
    text = "HEAD" + "x" * 50_000 + "TAIL"
    shown = cap(text, 1000)
    assert len(shown) <= 1000
    assert shown.startswith("HEAD") and shown.endswith("TAIL")
    assert "characters cut" in shown and str(len(text) - 1000) in shown
    assert cap("short", 1000) == "short"
