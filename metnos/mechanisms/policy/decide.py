"""The autonomy × risk decision (SPEC §4): allow, ask the user, or deny one executor run.

Rules, first match wins:
1. Unknown risk or autonomy level → deny (fail closed).
2. The sandbox canary failed (`sandbox_ok=False`) → only side-effect-free executors run.
3. `ReadOnly` → an executor with side effects is denied.
4. `Full` → an irreversible side-effecting action asks (SPEC §4: always, even in Full);
   in a session that asks for everything (`ask_all`), every change asks; everything else is
   allowed.
5. `Supervised` and `ReadOnly` → high risk is denied; in `Supervised`, an ordinary
   reversible change (`routine`: see `metnos.mechanisms.policy.routine`) the person asked for in a
   turn that read no outside text (`tainted=False`), in a session that does not ask for
   everything, runs, with Undo (`MSG_POLICY_ALLOWED_REVERSIBLE`: the audit line says it ran
   unasked because it can be undone); any other medium risk asks; an irreversible
   side-effecting action asks; in a session that asks for everything, every change asks;
   the rest (low risk) runs.

"Reversibility lowers the cost of yes": the seed's principle, in code here and not in
configuration. Forbidden paths, the Laws (taint asks again, whatever this says), the owner's
authority over a member's steps and the sandbox apply on top of this at every level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from metnos.mechanisms.policy.args import validate_args

__all__ = ["ALLOWED_REVERSIBLE", "ASK_ALL", "AUTONOMY_LEVELS", "RISKS", "Decision", "decide",
           "validate_args"]

Verdict = Literal["allow", "deny", "ask"]
RISKS = ("low", "medium", "high")
AUTONOMY_LEVELS = ("ReadOnly", "Supervised", "Full")
ALLOWED_REVERSIBLE = "MSG_POLICY_ALLOWED_REVERSIBLE"  # ran unasked: it can be undone
ASK_ALL = "ASK_POLICY_ASK_ALL"  # the session asks before every change
ASK_TAINTED = "ASK_LAW_UNTRUSTED_DATA"  # `metnos.mechanisms.policy.laws.ASK_UNTRUSTED` (Law 3)


@dataclass(frozen=True)
class Decision:
    """A verdict with the i18n key (and its vars) explaining it to the user and to the audit."""

    verdict: Verdict
    key: str
    vars: dict[str, Any] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"

    def message(self, lang: str | None = None) -> str:
        from metnos.ground import i18n

        return i18n.get(self.key, lang, **self.vars)


def decide(
    *,
    risk: str,
    side_effects: bool,
    reversible: bool,
    autonomy: str,
    sandbox_ok: bool,
    executor: str = "",
    network: bool = False,
    routine: bool = False,
    tainted: bool = False,
    ask_all: bool = False,
) -> Decision:
    """Allow, ask or deny one run of an executor (`executor` only fills the message).

    `routine`: the step is an ordinary reversible change inside the workspace whose full
    before-record can be kept (`metnos.mechanisms.policy.routine`); `tainted`: the turn read outside
    text; `ask_all`: the session's owner asked to be asked before every change."""
    vars: dict[str, Any] = {"risk": risk, "autonomy": autonomy}
    if executor:  # callers that merge their own `executor` var are not overridden by ""
        vars["executor"] = executor
    if risk not in RISKS or autonomy not in AUTONOMY_LEVELS:
        return Decision("deny", "ERR_POLICY_LEVEL_UNKNOWN", vars)
    if side_effects and not sandbox_ok:
        return Decision("deny", "ERR_SANDBOX_UNAVAILABLE_READONLY", vars)
    if side_effects and autonomy == "ReadOnly":
        return Decision("deny", "ERR_POLICY_READONLY", vars)
    irreversible = side_effects and not reversible
    acts = side_effects or network
    if autonomy == "Full":
        if irreversible:
            return Decision("ask", "ASK_POLICY_IRREVERSIBLE", vars)
        if ask_all and acts:
            return Decision("ask", ASK_ALL, vars)
        return Decision("allow", "MSG_POLICY_ALLOWED", vars)
    if risk == "high":
        return Decision("deny", "ERR_POLICY_HIGH_RISK", vars)
    if routine and side_effects and reversible and not network and autonomy == "Supervised":
        if tainted:  # outside text may be steering it: the reason it asks (Law 3)
            return Decision("ask", ASK_TAINTED, vars)
        if ask_all:  # the owner wants to be asked, undo or not
            return Decision("ask", ASK_ALL, vars)
        return Decision("allow", ALLOWED_REVERSIBLE, vars)
    if risk == "medium":
        return Decision("ask", "ASK_POLICY_MEDIUM_RISK", vars)
    if irreversible:
        return Decision("ask", "ASK_POLICY_IRREVERSIBLE", vars)
    if ask_all and acts:
        return Decision("ask", ASK_ALL, vars)
    return Decision("allow", "MSG_POLICY_ALLOWED", vars)
