"""The conversation the model sees in one turn, and what of it the session keeps.

The chat sent to the model is: the system prompt (workspace files, language block, tools),
the session's earlier messages that fit the history budget (older ones folded into the
running summary, `metnos.turns.history`), the user's message with any untrusted pieces
wrapped as data, then this turn's assistant messages and tool results.

Every tool result is data, never instructions: its JSON is cut to `max_tool_result_chars`
(head and tail kept, with a marker of what was cut; the turn's step trace keeps it whole)
and wrapped in the Law 3 envelope (`wrap_untrusted`). What this turn adds (user, assistant,
tool messages) is persisted at the end of the turn, so the next turn's history has it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from metnos.ground import i18n
from metnos.ground.settings import I18nSettings
from metnos.mechanisms.llm.planner import planner_messages
from metnos.mechanisms.llm.port import LLMReply
from metnos.mechanisms.llm.tools import ToolSpec
from metnos.mechanisms.policy.untrusted import wrap_untrusted
from metnos.turns.reply import StepOutcome

CUT_MARKER = "\n[… {cut} characters cut …]\n"


def cap(text: str, limit: int) -> str:
    """`text` at most about `limit` characters: its head and tail, with a marker between."""
    if len(text) <= limit:
        return text
    marker = CUT_MARKER.format(cut=len(text) - limit)
    keep = max(0, limit - len(marker))
    head = keep * 2 // 3
    return text[:head] + marker + text[len(text) - (keep - head):]


@dataclass
class Conversation:
    """The messages of one turn's model calls; `added` is what this turn contributes."""

    messages: list[dict[str, Any]]
    added: list[dict[str, Any]] = field(default_factory=list)
    result_chars: int = 16_000

    @classmethod
    def open(cls, text: str, lang: str, tools: list[ToolSpec], *, history: Sequence[
            dict[str, Any]] = (), workspace_context: str = "",
            untrusted: Sequence[tuple[str, str]] = (), intents: I18nSettings | None = None,
            result_chars: int = 16_000) -> Conversation:
        system, user = planner_messages(text, lang, tools, workspace_context=workspace_context,
                                        untrusted=untrusted, intents=intents)
        return cls([system, *history, user], [user], result_chars)

    def assistant(self, reply: LLMReply) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments_json}}
                for call in reply.tool_calls]
        self._add(message)

    def tool_result(self, call_id: str, executor: str, content: dict[str, Any]) -> None:
        """One tool message: `content` as JSON, capped and wrapped as data."""
        text = json.dumps(content, ensure_ascii=False, default=str)
        shown = cap(text, self.result_chars)
        self._add({"role": "tool", "tool_call_id": call_id, "name": executor,
                   "content": wrap_untrusted(shown, source=executor), "full_chars": len(text)})

    def instruct(self, text: str) -> None:
        """A note from Metnos itself to the model (a budget ended, say): never persisted."""
        self.messages.append({"role": "user", "content": text})

    def _add(self, message: dict[str, Any]) -> None:
        self.messages.append({k: v for k, v in message.items() if k != "full_chars"})
        self.added.append(message)

    def sent(self) -> list[dict[str, Any]]:
        return list(self.messages)


def tool_content(outcome: StepOutcome, lang: str, warning: str | None = None) -> dict[str, Any]:
    """What the model learns of one step: its result, or why it did not run, in words."""
    content: dict[str, Any] = {"status": outcome.status}
    if outcome.status == "done":
        content["result"] = outcome.result or {}
    elif outcome.key == "MSG_APPROVAL_DENIED":
        content["status"] = "denied"
        content["error"] = i18n.get("MSG_AGENT_DENIED", lang,
                                    reason=outcome.vars.get("note") or "-")
    else:
        content["error"] = i18n.get(outcome.key or "ERR_INTERNAL_UNEXPECTED", lang,
                                    **outcome.vars)
    if warning:
        content["warning"] = warning
    return content
