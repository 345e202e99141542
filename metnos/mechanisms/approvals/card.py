"""An approval card in plain words, for every surface (web chat, Telegram).

What will happen, to which file, as one sentence from i18n (`CARD_<executor>_<action|mode>`,
then `CARD_<executor>`, then `CARD_GENERIC`), and why Metnos asks as a sentence
(`CARD_WHY_<reason key>`, else the turn's own words, else the policy's message), naming the
untrusted sources when they are known. The raw arguments stay apart (`details`): a surface
shows them behind a toggle. A new language needs only its `surfaces.toml`.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from metnos.ground import i18n
from metnos.ground.i18n.phrases import one_line

_SELECTORS = ("action", "mode")  # an argument naming the variant of an executor's action
QUOTE_CHARS = 120  # a shown value is cut here
UNTRUSTED_KEY = "ASK_LAW_UNTRUSTED_DATA"
OWNER_KEY = "ASK_OWNER_APPROVES"  # metnos.mechanisms.policy.approver.ASK_OWNER


@dataclass(frozen=True)
class PlainCard:
    action: str  # "Add “milk, eggs” at the end of lists/spesa.md"
    why: str  # "It changes something in your files, so I check with you first."
    details: list[tuple[str, str]]  # (argument, its raw value), sorted
    asker: str = ""  # who asked, when someone else (the owner) decides: "telegram:8002"
    cut: bool = False  # the sentences quote a value shortened: `details` has it whole

    def to_dict(self) -> dict[str, Any]:
        """With each argument's length (`sizes`: name → [characters, lines])."""
        return {"action": self.action, "why": self.why, "asker": self.asker, "cut": self.cut,
                "details": [list(pair) for pair in self.details],
                "sizes": {name: list(value_size(value)) for name, value in self.details}}


def plain_card(approval: Mapping[str, Any], lang: str,
               sources: list[str] | None = None) -> PlainCard:
    """The card of `approval` (`metnos.mechanisms.approvals.public`, maybe with the turn's `why` and
    `sources`) in `lang`."""
    args = dict(approval.get("args") or {})
    found = sources if sources is not None else approval.get("sources")
    named = [str(s) for s in (found or []) if str(s).strip()]
    why, asker = why_sentence(approval, lang, named), _other_asker(approval)
    if asker:  # a member's step that waits for the owner: both of them read who asked
        why = " ".join([why, i18n.get("MSG_APPROVAL_ASKED_BY", lang, asker=asker),
                        *([] if approval.get("reason_key") == OWNER_KEY else
                          [i18n.get(f"CARD_WHY_{OWNER_KEY}", lang)])])
    return PlainCard(action=action_sentence(str(approval["executor"]), args, lang), why=why,
                     details=[(k, raw_value(v)) for k, v in sorted(args.items())], asker=asker,
                     cut=any(len(one_line(v)) > QUOTE_CHARS for v in args.values()))


def _other_asker(approval: Mapping[str, Any]) -> str:
    """Who asked, when it is not who decides (`metnos.mechanisms.approvals.public`'s asker,
    approver)."""
    asker, approver = approval.get("asker"), approval.get("approver")
    return str(asker) if asker and approver and asker != approver else ""


def action_sentence(executor: str, args: Mapping[str, Any], lang: str) -> str:
    """What will happen, in one sentence."""
    values = {k: shown_value(v) for k, v in args.items()}
    values["executor"] = executor
    candidates = [f"CARD_{executor}_{args[s]}" for s in _SELECTORS
                  if isinstance(args.get(s), str) and str(args[s]).isidentifier()]
    for key in [*candidates, f"CARD_{executor}"]:
        text = fill(key, lang, values)
        if text is not None:
            return text
    return i18n.get("CARD_GENERIC", lang, executor=executor)


def why_sentence(approval: Mapping[str, Any], lang: str, sources: list[str]) -> str:
    """Why Metnos asks: the policy's reason in plain words, with the outside sources."""
    key = str(approval.get("reason_key") or "")
    joined = ", ".join(sources)
    args = approval.get("args") or {}
    values: dict[str, Any] = {"executor": approval.get("executor", ""), "sources": joined,
                              **{k: shown_value(v) for k, v in args.items()}}
    if key == UNTRUSTED_KEY and not sources:
        return i18n.get("CARD_WHY_UNTRUSTED_UNNAMED", lang)
    text = fill(f"CARD_WHY_{key}", lang, values) if key else None
    if text is None:  # a reason without plain words of its own
        if approval.get("why"):
            return str(approval["why"])  # the turn's words already name the sources
        text = fill(key, lang, values) or i18n.get("CARD_WHY_GENERIC", lang)
    if sources and key != UNTRUSTED_KEY:
        text += " " + i18n.get("CARD_WHY_SOURCES", lang, sources=joined)
    return text


def shown_value(value: Any) -> str:
    """A value as a sentence quotes it: lines joined with commas, cut at QUOTE_CHARS (the
    card then says so: `PlainCard.cut`, and shows the value whole in its details)."""
    text = one_line(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS].rstrip() + "…"


def raw_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def value_size(text: str) -> tuple[int, int]:
    """(characters, lines) of a value, as every surface states them beside it."""
    return len(text), text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def fill(key: str, lang: str, values: Mapping[str, Any]) -> str | None:
    """`key` in `lang` (else English) filled from `values`; None when it does not exist or
    needs a value that is not there."""
    raw = i18n.lookup(key, lang) or i18n.lookup(key, i18n.FALLBACK_LANG)
    if not isinstance(raw, str):
        return None
    needed = {name for _, name, _, _ in string.Formatter().parse(raw) if name}
    if not needed <= values.keys():
        return None
    return i18n.get(key, lang, **{k: values[k] for k in needed})
