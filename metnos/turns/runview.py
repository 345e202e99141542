"""How a turn's flow run reads in the Prefect UI (SPEC §2): a name and tags a person can find
it by, the outcome as the final state's name, and a Markdown card with the question, the
steps, the reply and the undo ids.

Plain functions of the turn's context: `flows/turn.py` hands the results to Prefect. Names
never carry the message's text (the run list is glanced at by anyone at the screen); the card
does, with known secrets already redacted by the caller and Markdown/HTML neutralised, since
the Prefect UI renders it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from metnos.ground import escape, i18n
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals.card import plain_card
from metnos.mechanisms.approvals.models import Approval
from metnos.turns.context import TurnContext

TAG = "metnos-turn"
MAX_NAME_EXECUTORS = 3
SHORT_ID = 8  # characters of the turn id in the run's name
_KEY = re.compile(r"[^a-z0-9-]")
_NAME = re.compile(r"[^A-Za-z0-9_.-]")  # an action id, as it may be typed after `metnos undo`


# The state names, in Prefect's own (English) vocabulary beside Completed, Failed, Paused;
# the state's message says it in the turn's language.
NAMES = {"MSG_RUN_ANSWERED": "Answered", "MSG_RUN_NOT_UNDERSTOOD": "Not understood",
         "MSG_RUN_DENIED": "Denied", "MSG_RUN_EXPIRED": "Expired", "MSG_RUN_STOPPED": "Stopped",
         "MSG_RUN_REFUSED": "Refused", "MSG_RUN_FAILED_STEPS": "Failed steps"}


@dataclass(frozen=True)
class Outcome:
    """The final state of a turn's run: its name ("Answered"...) and a sentence."""

    name: str
    message: str


def executors_used(ctx: TurnContext) -> list[str]:
    """The executors the turn asked for, in order, each once (the history's own items left
    out)."""
    seen: list[str] = []
    for item in ctx.activity:
        name = str(item.get("executor") or "")
        if name and name != "history" and name not in seen:
            seen.append(name)
    return seen


def run_name(ctx: TurnContext, started: datetime, tz: ZoneInfo,
             executors: list[str] | None = None) -> str:
    """`web · alice · 15:04:09 · #9f2c41d0`, then `· fs_find, fs_read` once the turn knows
    what it ran: the seconds and the turn's short id make it one of a kind (two turns of the
    same minute were named alike), and the short id is the one `metnos` commands show."""
    short = _NAME.sub("", ctx.turn_id)[:SHORT_ID]
    parts = [ctx.channel, ctx.user_id, started.astimezone(tz).strftime("%H:%M:%S"),
             f"#{short}"]
    if executors:
        shown = ", ".join(executors[:MAX_NAME_EXECUTORS])
        extra = len(executors) - MAX_NAME_EXECUTORS
        parts.append(shown + (f" +{extra}" if extra > 0 else ""))
    return escape.terminal_line(" · ".join(parts))  # plain text: no control, no newline


def waiting_line(action: str, approver: str, approval_id: str, lang: str) -> str:
    """What a paused run waits for, one line for its log (the run page's first tab): who
    must approve what, and the approval's short id (`metnos approvals`)."""
    return escape.terminal_line(i18n.get(
        "MSG_RUN_WAITING", lang, approver=approver, action=" ".join(action.split()),
        approval_id=_NAME.sub("", approval_id)[:SHORT_ID]))


def waiting_for(row: Approval | None, lang: str) -> str:
    """`waiting_line` for the approval `row` a paused turn waits for (its plain action)."""
    assert row is not None
    public = approvals.public(row)
    return waiting_line(plain_card(public, lang).action, str(public["approver"]), row.id, lang)


def run_tags(ctx: TurnContext, executors: list[str] | None = None) -> list[str]:
    """Filterable in the UI: every turn, its channel, its user, its language, what it ran."""
    tags = [TAG, f"channel:{ctx.channel}", f"user:{ctx.user_id}", f"lang:{ctx.lang}"]
    tags.extend(f"executor:{name}" for name in executors or [])
    return [escape.terminal_line(tag) for tag in tags]


def outcome(ctx: TurnContext, *, understood: bool) -> Outcome:
    """What the turn came to, from its activity: the run's final state says it."""
    statuses = [str(item.get("status")) for item in ctx.activity
                if item.get("executor") != "history"]
    if not understood:
        key = "MSG_RUN_NOT_UNDERSTOOD"
    elif "denied" in statuses:
        key = "MSG_RUN_DENIED"
    elif "expired" in statuses:
        key = "MSG_RUN_EXPIRED"
    elif ctx.stop_reason is not None:
        key = "MSG_RUN_STOPPED"
    elif statuses and all(s in ("refused", "failed") for s in statuses):
        key = "MSG_RUN_REFUSED" if "refused" in statuses else "MSG_RUN_FAILED_STEPS"
    else:
        key = "MSG_RUN_ANSWERED"
    return Outcome(name=NAMES[key], message=i18n.get(key, ctx.lang))


def artifact_key(ctx: TurnContext) -> str:
    """The card's key in the Artifacts page (lowercase letters, digits, dashes)."""
    return _KEY.sub("-", f"turn-{ctx.turn_id}".lower())


def card(ctx: TurnContext, question: str, reply: str, started: datetime, tz: ZoneInfo) -> str:
    """The turn as Markdown: who asked what, when; the model calls (the loop) and the steps;
    the reply; the undo ids."""
    lang = ctx.lang
    when = started.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    lines = [f"### {i18n.get('MSG_RUN_CARD_TITLE', lang)}",
             i18n.get("MSG_RUN_CARD_WHO", lang, channel=escape.markdown_text(ctx.channel),
                      user=escape.markdown_text(ctx.user_id), when=when), "",
             f"**{i18n.get('MSG_RUN_CARD_QUESTION', lang)}**", "", _quoted(question), ""]
    lines += _calls(ctx)
    steps = [item for item in ctx.activity if item.get("executor") != "history"]
    if steps:
        lines += [f"**{i18n.get('MSG_RUN_CARD_STEPS', lang)}**", ""]
        for item in steps:
            status = i18n.get(f"MSG_RUN_STEP_{str(item.get('status')).upper()}", lang)
            lines.append(f"- {escape.markdown_code(str(item.get('executor')))} · "
                         f"{escape.markdown_text(status)} · "
                         f"{escape.markdown_text(_one_line(str(item.get('text') or '')))}")
            if item.get("undo") and item.get("action_id"):
                lines.append("  " + i18n.get("MSG_RUN_CARD_UNDO", lang,
                                             action_id=_NAME.sub("", str(item["action_id"]))))
        lines.append("")
    lines += [f"**{i18n.get('MSG_RUN_CARD_REPLY', lang)}**", "", _quoted(reply)]
    return "\n".join(lines)


def _calls(ctx: TurnContext) -> list[str]:
    """The loop, one line per model call: its number, its time, what it asked for. The
    tool names are the model's words: shown as code, never as markup."""
    if not ctx.calls:
        return []
    lines = [f"**{i18n.get('MSG_RUN_CARD_CALLS', ctx.lang)}**", ""]
    for call in ctx.calls:
        if call.failed:
            what = i18n.get("MSG_RUN_CARD_CALL_FAILED", ctx.lang)
        elif call.asked:
            what = i18n.get("MSG_RUN_CARD_CALL_TOOLS", ctx.lang, tools=", ".join(
                escape.markdown_code(_one_line(name, 80)) for name in call.asked))
        else:
            what = i18n.get("MSG_RUN_CARD_CALL_ANSWER", ctx.lang)
        lines.append(f"{call.index}. {call.ms:.0f} ms · {what}")
    return [*lines, ""]


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _quoted(text: str) -> str:
    """`text` as one quoted paragraph of inert prose (its lines kept as line breaks)."""
    body = escape.markdown_text(text) or "—"
    return "\n".join("> " + line for line in body.split("\n"))
