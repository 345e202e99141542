"""A turn without its model: the one line that says so, and why (Build "degrade, never die").

When the model is unreachable or fails before anything ran, or its breaker is open
(`metnos.mechanisms.llm.health.ModelHealth`), the turn is answered by the embedded planner and the
household intents, and the reply says once, in the turn's language, that Metnos is working
without its model. A configuration error is named, with the setting to fix, to the owner
only; a family member gets the plain line. A failure after tools ran keeps the loop's stop,
in plain words (`midturn`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metnos.ground import i18n
from metnos.ground.errors import LLMError
from metnos.mechanisms.llm import failure
from metnos.mechanisms.policy.approver import OWNER_USER_ID

if TYPE_CHECKING:
    from metnos.turns.context import TurnContext
    from metnos.turns.runtime import Runtime


def note(service: Runtime, ctx: TurnContext) -> str:
    """The one line a reply without the model carries, in the turn's language."""
    check = service.model_health.check
    if check.state == "misconfigured":
        if ctx.user_id == OWNER_USER_ID:
            return i18n.get("MSG_TURN_NO_MODEL_CONFIG", ctx.lang, problem=check.line(ctx.lang),
                            fix=check.fix(ctx.lang) or "")
        return i18n.get("MSG_TURN_NO_MODEL", ctx.lang)
    if check.state == "unreachable":
        return i18n.get("MSG_TURN_NO_MODEL_UNREACHABLE", ctx.lang)
    return i18n.get("MSG_TURN_NO_MODEL", ctx.lang)


def with_note(reply: str, line: str) -> str:
    """The reply, then the line (once)."""
    return f"{reply}\n\n{line}" if reply else line


def midturn(ctx: TurnContext, exc: LLMError) -> tuple[str, dict[str, Any]]:
    """The stop of a loop whose model failed after tools ran: plain words; a configuration
    error names its setting to the owner only."""
    if failure.is_config_key(exc.key) and ctx.user_id == OWNER_USER_ID:
        return "MSG_AGENT_STOP_MODEL_CONFIG", {"problem": i18n.message(exc, ctx.lang)}
    return "MSG_AGENT_STOP_MODEL_LOST", {}
