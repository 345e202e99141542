"""What the host does with a `summarize` result (the manifest's effect "summarize"): the
`fast` tier may rewrite each message's two lines, bound to that message.

The sandboxed executor has already written the extractive lines (sender and subject, the
first sentence that matters). With a model configured and the day's LLM budget not spent, one
call gets the messages as quoted data (`wrap_untrusted`, no tools) and must answer JSON, one
`lines` pair per uid it was given. Each pair is checked here: a known uid, exactly two
strings, control characters and chat-template tokens stripped, each line cut to `MAX_LINE`.
Anything else (a missing uid, a third line, another uid, not JSON) keeps that message's
extractive lines. So the summary works with no model at all, and what the mail says can at
most change the wording of its own two lines, which go to the owner and nowhere else.

Then each message's lines are checked in code (`metnos.features.mail.screen`, issue 25): line one is
always the executor's, built from the headers (the model's first line is not used: a model
never writes who sent a mail), its links hidden; line two (the model's, or the mail's own
first sentence) goes out only with no link, address or phone number in it and no claim that
something was already done ("moved to the Trash", "paid"). Else that message is told by its
header line alone, with a log and a deny audit line; a message is never dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from metnos.features.mail import screen
from metnos.ground import i18n
from metnos.ground.errors import LLMError, MetnosError
from metnos.mechanisms import prompts
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.untrusted import wrap_untrusted
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

EXECUTOR = "summarize"
EFFECT = "summarize"
ROLE = "mail_summarize"
AUDIT_ACTION = "summarize.model"
SCREEN_ACTION = "summarize.screen"
REFUSED = "MSG_DIGEST_SUMMARY_REFUSED"
MAX_LINE = 160
MAX_SNIPPET = 600
TOKENS = re.compile(r"<\|[^<>|]{0,40}\|>|</?s>|\[/?INST\]|<</?SYS>>|</?(start|end)_of_turn>",
                    re.I)
FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.I)

Lines = dict[int, list[str]]


def clean_line(text: str) -> str:
    """One line of plain text, cut: no control/format characters, no template tokens."""
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
                   for c in TOKENS.sub(" ", text))
    text = " ".join(TOKENS.sub(" ", text).split())
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 1].rstrip() + "…"


def extractive_lines(result: Mapping[str, Any] | None) -> Lines:
    """The executor's lines per uid (checked again on this side of the sandbox); after the
    screen, a message may have its header line only."""
    found: Lines = {}
    for item in (result or {}).get("summaries") or ():
        if not isinstance(item, Mapping):
            continue
        uid, lines = item.get("uid"), item.get("lines")
        if (isinstance(uid, int) and isinstance(lines, list) and len(lines) in (1, 2)
                and all(isinstance(x, str) for x in lines)):
            found[uid] = [clean_line(x) or "…" for x in lines]
    return found


def parse_lines(text: str | None, uids: Iterable[int]) -> Lines:
    """The model's well-formed pairs for known uids (pure); everything else is dropped."""
    try:
        data = json.loads(FENCE.sub("", text or ""))
    except ValueError:
        return {}
    items = data.get("summaries") if isinstance(data, dict) else None
    known, found = set(uids), {}
    for item in items if isinstance(items, list) else ():
        uid = item.get("uid") if isinstance(item, dict) else None
        lines = item.get("lines") if isinstance(item, dict) else None
        if (not isinstance(uid, int) or uid not in known or uid in found
                or not isinstance(lines, list) or len(lines) != 2
                or not all(isinstance(x, str) for x in lines)):
            continue
        cleaned = [clean_line(x) for x in lines]
        if all(cleaned):
            found[uid] = cleaned
    return found


def prompt(messages: Mapping[int, Mapping[str, Any]], lang: str) -> str:
    items = [{"uid": uid, "text": wrap_untrusted(
        "\n".join([f"From: {m.get('from') or ''}", f"Subject: {m.get('subject') or ''}", "",
                   str(m.get("snippet") or "")[:MAX_SNIPPET]]), source="mail")}
             for uid, m in messages.items()]
    return prompts.get(ROLE, lang, language=i18n.display_name(lang, "en"), max_chars=MAX_LINE,
                       messages=items)


def asked_messages(checked: CheckedStep) -> dict[int, Mapping[str, Any]]:
    args = checked.request.args if checked.request is not None else checked.step.args
    try:
        items = json.loads(str(args.get("messages") or "[]"))
    except ValueError:
        return {}
    return {m["uid"]: m for m in items if isinstance(m, dict) and isinstance(m.get("uid"), int)}


def effect(service: Runtime) -> Callable[
        [TurnContext, CheckedStep, StepOutcome], Awaitable[StepOutcome]]:
    """The runner's hook for `summarize` (registered by `metnos.faces.wiring`)."""
    async def carry_out(ctx: TurnContext, checked: CheckedStep,
                        outcome: StepOutcome) -> StepOutcome:
        return await rewrite(service, ctx, checked, outcome)
    return carry_out


async def rewrite(service: Runtime, ctx: TurnContext, checked: CheckedStep,
                  outcome: StepOutcome) -> StepOutcome:
    """The step's result with the model's lines where they hold, the extractive ones
    elsewhere; `by` says which ("model", "mixed", "extractive")."""
    lines = extractive_lines(outcome.result)
    by_model: Lines = {}
    if service.port is not None and lines:
        messages = {uid: m for uid, m in asked_messages(checked).items() if uid in lines}
        by_model = await _ask_model(service, ctx, messages, checked)
    merged: Lines = {}
    for uid, pair in lines.items():
        merged[uid], refused = checked_pair(service, uid, pair, by_model.get(uid), ctx.lang)
        if refused:
            by_model.pop(uid, None)
            await asyncio.to_thread(
                service.record.audit_line, ctx, action=SCREEN_ACTION, decision="deny",
                reason=REFUSED, outcome="header_only", action_id=checked.action_id,
                args={"uid": uid, "found": refused})
    by = ("extractive" if not by_model else "model" if len(by_model) == len(lines)
          else "mixed")
    summaries = [{"uid": uid, "lines": pair} for uid, pair in merged.items()]
    text = "\n".join(line for pair in merged.values() for line in pair)
    result = {**(outcome.result or {}), "summaries": summaries, "by": by, "text": text}
    return StepOutcome(EXECUTOR, "done", result=result, audit_seq=outcome.audit_seq,
                       action_id=outcome.action_id)


def checked_pair(service: Runtime, uid: int, pair: list[str], said: list[str] | None,
                 lang: str) -> tuple[list[str], list[str]]:
    """(the lines that go out for one message, what refused its second line: the kinds of
    links and the claimed actions found, [] when it holds)."""
    header = clean_line(screen.hide_links(pair[0], i18n.get("MSG_DIGEST_LINK_HIDDEN", lang)))
    second = (said or pair)[1] if len(said or pair) > 1 else ""
    if not second:
        return [header], []
    found = [f"link:{len(screen.links(second))}"] if screen.links(second) else []
    claimed = screen.claims(second, service.settings.active_languages)
    found += [f"claim:{word}" for word in dict.fromkeys(claimed)]
    if found:
        log.warning("summarize.line_refused uid=%s by=%s found=%s", uid,
                    "model" if said else "mail", ",".join(found))
        return [header], found
    return [header, second], []


async def _ask_model(service: Runtime, ctx: TurnContext,
                     messages: Mapping[int, Mapping[str, Any]], checked: CheckedStep) -> Lines:
    if not messages or service.port is None:
        return {}
    record, guard, port = service.record, service.guard, service.port
    slot = await asyncio.to_thread(guard.reserve_llm)
    if isinstance(slot, Decision):  # the day's budget is spent: the extractive lines
        await asyncio.to_thread(record.audit_line, ctx, action=AUDIT_ACTION, decision="deny",
                                reason=slot.key, outcome="extractive",
                                action_id=checked.action_id)
        return {}
    cost: float | None = None
    model = port.resolve("fast") or ""
    try:
        reply = await port.complete([{"role": "user", "content": prompt(messages, ctx.lang)}],
                                    tier="fast")
        cost, model = reply.cost_usd, reply.model or model
    except (LLMError, MetnosError) as exc:
        key = getattr(exc, "key", type(exc).__name__)
        log.warning("summarize.model_failed key=%s", key)
        await asyncio.to_thread(record.audit_line, ctx, action=AUDIT_ACTION, decision="error",
                                reason=str(key), outcome="extractive",
                                action_id=checked.action_id)
        return {}
    finally:
        await asyncio.to_thread(guard.settle_llm, ctx, slot, cost, model)
    found = parse_lines(reply.text, messages.keys())
    await asyncio.to_thread(
        record.audit_line, ctx, action=AUDIT_ACTION, decision="allow",
        reason="ok" if len(found) == len(messages) else "MSG_SUMMARIZE_MODEL_PARTIAL",
        outcome="done", action_id=checked.action_id, cost_usd=cost,
        args={"asked": len(messages), "kept": len(found)})
    return found
