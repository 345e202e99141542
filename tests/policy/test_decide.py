"""The autonomy × risk matrix (SPEC §4; security C8–C9, A1)."""

from __future__ import annotations

import itertools

import pytest

from metnos.ground import i18n
from metnos.mechanisms.policy import AUTONOMY_LEVELS, RISKS, decide

# (autonomy, risk, side_effects, reversible, sandbox_ok) -> (verdict, key)
MATRIX = [
    # ReadOnly: only side-effect-free executors, and no more than Supervised allows
    ("ReadOnly", "low", False, True, True, "allow", "MSG_POLICY_ALLOWED"),
    ("ReadOnly", "low", True, True, True, "deny", "ERR_POLICY_READONLY"),
    ("ReadOnly", "medium", True, True, True, "deny", "ERR_POLICY_READONLY"),
    ("ReadOnly", "medium", False, True, True, "ask", "ASK_POLICY_MEDIUM_RISK"),
    ("ReadOnly", "high", False, True, True, "deny", "ERR_POLICY_HIGH_RISK"),
    ("ReadOnly", "low", False, True, False, "allow", "MSG_POLICY_ALLOWED"),
    # Supervised: low allow, medium ask, high deny; irreversible side effects ask
    ("Supervised", "low", False, True, True, "allow", "MSG_POLICY_ALLOWED"),
    ("Supervised", "low", True, True, True, "allow", "MSG_POLICY_ALLOWED"),
    ("Supervised", "low", True, False, True, "ask", "ASK_POLICY_IRREVERSIBLE"),
    ("Supervised", "low", False, False, True, "allow", "MSG_POLICY_ALLOWED"),
    ("Supervised", "medium", True, True, True, "ask", "ASK_POLICY_MEDIUM_RISK"),
    ("Supervised", "medium", True, False, True, "ask", "ASK_POLICY_MEDIUM_RISK"),
    ("Supervised", "high", True, True, True, "deny", "ERR_POLICY_HIGH_RISK"),
    ("Supervised", "high", False, True, True, "deny", "ERR_POLICY_HIGH_RISK"),
    # Full: allow, except irreversible side-effecting actions always ask
    ("Full", "low", True, True, True, "allow", "MSG_POLICY_ALLOWED"),
    ("Full", "medium", True, True, True, "allow", "MSG_POLICY_ALLOWED"),
    ("Full", "high", True, True, True, "allow", "MSG_POLICY_ALLOWED"),
    ("Full", "high", False, False, True, "allow", "MSG_POLICY_ALLOWED"),
    ("Full", "low", True, False, True, "ask", "ASK_POLICY_IRREVERSIBLE"),
    ("Full", "high", True, False, True, "ask", "ASK_POLICY_IRREVERSIBLE"),
    # the sandbox canary failed: only side-effect-free executors run, at every level
    ("Full", "low", True, True, False, "deny", "ERR_SANDBOX_UNAVAILABLE_READONLY"),
    ("Supervised", "low", True, True, False, "deny", "ERR_SANDBOX_UNAVAILABLE_READONLY"),
    ("Full", "high", False, True, False, "allow", "MSG_POLICY_ALLOWED"),
    ("Supervised", "low", False, True, False, "allow", "MSG_POLICY_ALLOWED"),
    # unknown levels fail closed
    ("Root", "low", False, True, True, "deny", "ERR_POLICY_LEVEL_UNKNOWN"),
    ("Full", "none", False, True, True, "deny", "ERR_POLICY_LEVEL_UNKNOWN"),
]


@pytest.mark.parametrize(
    ("autonomy", "risk", "side_effects", "reversible", "sandbox_ok", "verdict", "key"), MATRIX
)
def test_matrix(autonomy: str, risk: str, side_effects: bool, reversible: bool,
                sandbox_ok: bool, verdict: str, key: str) -> None:
    decision = decide(risk=risk, side_effects=side_effects, reversible=reversible,
                      autonomy=autonomy, sandbox_ok=sandbox_ok, executor="fs_write")
    assert (decision.verdict, decision.key) == (verdict, key)
    assert decision.allowed == (verdict == "allow")


ALL = list(itertools.product(AUTONOMY_LEVELS, RISKS, [False, True], [False, True], [False, True]))


@pytest.mark.parametrize(("autonomy", "risk", "side_effects", "reversible", "sandbox_ok"), ALL)
def test_invariants(
    autonomy: str, risk: str, side_effects: bool, reversible: bool, sandbox_ok: bool
) -> None:
    d = decide(risk=risk, side_effects=side_effects, reversible=reversible,
               autonomy=autonomy, sandbox_ok=sandbox_ok)
    if side_effects and (not sandbox_ok or autonomy == "ReadOnly"):
        assert d.verdict == "deny"
    if side_effects and not reversible:
        assert d.verdict != "allow"  # irreversible side effects never run unconfirmed
    if autonomy == "Supervised" and risk == "high":
        assert d.verdict == "deny"
    if autonomy == "Full" and sandbox_ok:
        assert d.verdict != "deny"
    for lang in ("it", "en"):
        assert d.key in i18n.catalog(lang)


def test_messages_explain_the_refusal() -> None:
    d = decide(risk="high", side_effects=True, reversible=True, autonomy="Supervised",
               sandbox_ok=True, executor="shell_run")  # fmt: skip
    # what the step does in plain words, never the tool's name (issue 27)
    assert "eseguire un comando" in d.message("it") and "alto rischio" in d.message("it")
    assert "shell_run" not in d.message("it") + d.message("en")
    odd = decide(risk="high", side_effects=True, reversible=True, autonomy="Supervised",
                 sandbox_ok=True, executor="count_words")  # fmt: skip
    assert "count_words" not in odd.message("en") and "do this" in odd.message("en")
    d = decide(risk="low", side_effects=True, reversible=True, autonomy="Full",
               sandbox_ok=False, executor="fs_write")  # fmt: skip
    assert "sandbox" in d.message("en") and "fs_write" in d.message("en")


def test_executor_var_only_when_given() -> None:
    d = decide(risk="high", side_effects=True, reversible=True, autonomy="Supervised",
               sandbox_ok=True)  # fmt: skip
    assert "executor" not in d.vars  # a caller's own {"executor": ..., **d.vars} is kept
    assert {"executor": "shell_run", **d.vars}["executor"] == "shell_run"


# -- reversibility lowers the cost of yes (issue 27) -----------------------------------------

def _d(autonomy: str = "Supervised", risk: str = "medium", *, side_effects: bool = True,
       reversible: bool = True, **kw: bool) -> tuple[str, str]:
    d = decide(risk=risk, side_effects=side_effects, reversible=reversible, autonomy=autonomy,
               sandbox_ok=True, executor="fs_move", **kw)
    return d.verdict, d.key


def test_supervised_runs_an_ordinary_reversible_change_with_undo() -> None:
    assert _d(routine=True) == ("allow", "MSG_POLICY_ALLOWED_REVERSIBLE")
    assert _d(risk="low", routine=True) == ("allow", "MSG_POLICY_ALLOWED_REVERSIBLE")
    assert _d(routine=False) == ("ask", "ASK_POLICY_MEDIUM_RISK")  # not in the class: asks


@pytest.mark.parametrize("why", ["tainted", "ask_all", "network"])
def test_the_reversible_shortcut_never_holds_for(why: str) -> None:
    verdict, key = _d(routine=True, **{why: True})
    assert verdict == "ask", (why, key)
    assert _d(risk="low", routine=True, **{why: True})[0] != "allow" or why == "network"


def test_a_tainted_routine_change_asks_because_of_the_outside_text() -> None:
    assert _d(routine=True, tainted=True) == ("ask", "ASK_LAW_UNTRUSTED_DATA")
    assert _d(risk="low", routine=True, tainted=True) == ("ask", "ASK_LAW_UNTRUSTED_DATA")


def test_the_shortcut_never_runs_what_cannot_be_undone_or_what_is_high_risk() -> None:
    assert _d(routine=True, reversible=False)[0] == "ask"
    assert _d(risk="high", routine=True)[0] == "deny"
    assert _d("ReadOnly", routine=True)[0] == "deny"
    assert _d("Supervised", routine=True, side_effects=False) == ("ask", "ASK_POLICY_MEDIUM_RISK")


def test_ask_all_asks_before_every_change_at_every_level() -> None:
    assert _d(routine=True, ask_all=True) == ("ask", "ASK_POLICY_ASK_ALL")
    assert _d(routine=False, ask_all=True) == ("ask", "ASK_POLICY_MEDIUM_RISK")
    assert _d(risk="low", ask_all=True) == ("ask", "ASK_POLICY_ASK_ALL")
    assert _d("Full", ask_all=True) == ("ask", "ASK_POLICY_ASK_ALL")
    assert _d("Full", risk="low", side_effects=False, network=True, ask_all=True)[0] == "ask"
    # reading changes nothing: it still runs
    assert _d(risk="low", side_effects=False, ask_all=True) == ("allow", "MSG_POLICY_ALLOWED")
    assert _d("Full", side_effects=False, ask_all=True) == ("allow", "MSG_POLICY_ALLOWED")


@pytest.mark.parametrize(("autonomy", "risk", "side_effects", "reversible", "sandbox_ok"), ALL)
def test_the_shortcut_only_lowers_supervised(autonomy: str, risk: str, side_effects: bool,
                                             reversible: bool, sandbox_ok: bool) -> None:
    """`routine` changes nothing outside Supervised, and ask_all only ever adds asking."""
    base = decide(risk=risk, side_effects=side_effects, reversible=reversible,
                  autonomy=autonomy, sandbox_ok=sandbox_ok)
    fast = decide(risk=risk, side_effects=side_effects, reversible=reversible,
                  autonomy=autonomy, sandbox_ok=sandbox_ok, routine=True)
    if autonomy != "Supervised" or not (side_effects and reversible and sandbox_ok):
        assert fast == base
    careful = decide(risk=risk, side_effects=side_effects, reversible=reversible,
                     autonomy=autonomy, sandbox_ok=sandbox_ok, routine=True, ask_all=True)
    if side_effects and base.verdict == "allow":
        assert careful.verdict == "ask"
    for lang in ("it", "en"):
        assert fast.key in i18n.catalog(lang) and careful.key in i18n.catalog(lang)
