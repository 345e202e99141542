"""The tool-calling planner: the LLM plans by calling tools (SPEC §2 step 3).

Each admitted executor is offered as one OpenAI-style tool named after it, described in the
session language; the model's `tool_calls` become the plan steps, its text the reply. The
system prompt is a template (`prompts/<lang>/planner.j2`); the user's text travels only as the
user message, never inside the system prompt. Untrusted pieces (a forwarded message, a web page)
follow the user's text in that message, each wrapped by `wrap_untrusted` (Law 3): control tokens
stripped, inside an `<untrusted-data>` block the data cannot close, which the system prompt
tells the model to treat as data only. The user's own text is trusted and left as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from metnos.ground.i18n import intents as language_intents
from metnos.ground.settings import I18nSettings, get_settings
from metnos.mechanisms import prompts
from metnos.mechanisms.llm.port import LLMPort, RawToolCall
from metnos.mechanisms.llm.tools import Plan, PlanStep, ToolSpec
from metnos.mechanisms.policy.untrusted import strip_control_tokens, wrap_untrusted

ARGS_NOT_JSON = "ERR_PLAN_ARGS_NOT_JSON"


def planner_messages(
    text: str,
    lang: str,
    tools: list[ToolSpec],
    *,
    workspace_context: str = "",
    untrusted: Sequence[tuple[str, str]] = (),
    intents: I18nSettings | None = None,
) -> list[dict[str, Any]]:
    """The chat the planner sends: the rendered system prompt, then the user's text followed
    by each untrusted `(source, text)` piece, wrapped.

    `lang` is the session's interaction language; `intents` the language intents (SPEC §9.7,
    default: the instance's), which fill the prompt's language block."""
    # the owner's files are trusted as wishes, yet a model may have written them: no tokens
    context = strip_control_tokens(workspace_context)
    policy = intents if intents is not None else get_settings().i18n
    system = prompts.get(
        "planner", lang, tools=tools, workspace_context=context, session_lang=lang,
        **language_intents.planner_vars(policy, lang),
    )
    blocks = [wrap_untrusted(piece, source=source) for source, piece in untrusted]
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join([text, *blocks])},
    ]


async def plan_with_llm(
    port: LLMPort,
    text: str,
    lang: str,
    tools: list[ToolSpec],
    *,
    workspace_context: str = "",
    untrusted: Sequence[tuple[str, str]] = (),
    tier: str = "fast",
    intents: I18nSettings | None = None,
) -> Plan:
    """Ask the model for a plan. Raises LLMError when the model cannot be had.

    `untrusted`: (source, text) pieces that reach the model only wrapped as data.
    Unknown tool names are kept as steps: the turn refuses them with an audit line.
    """
    messages = planner_messages(text, lang, tools, workspace_context=workspace_context,
                                untrusted=untrusted, intents=intents)
    offered = [tool.openai_tool() for tool in tools] or None
    reply = await port.complete(messages, tools=offered, tier=tier)
    steps = tuple(to_step(call) for call in reply.tool_calls)
    said: str | None = scrub(reply.text) if reply.text is not None else None
    return Plan(steps=steps, text=said, source="llm", cost_usd=reply.cost_usd)


def to_step(call: RawToolCall) -> PlanStep:
    """One tool call → one plan step; arguments that are not a JSON object mark the step."""
    name = scrub(call.name)
    raw = call.arguments_json.strip()
    if not raw:
        return PlanStep(executor=name, args={}, call_id=call.id)
    try:
        args = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        args = None
    if not isinstance(args, dict):
        return PlanStep(executor=name, args={}, call_id=call.id, error=ARGS_NOT_JSON)
    return PlanStep(executor=name, args=scrub(args), call_id=call.id)


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(value: Any) -> Any:
    """Model output made storable: lone UTF-16 surrogates (valid in JSON, not in UTF-8)
    become U+FFFD, in strings, keys and nested containers alike."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value
