"""The `[agent]` settings group: the budgets and caps of the agent loop (SPEC §2 step 3).

Every budget ends a turn loudly: the loop asks the model (without tools) to say what was
done and what remains, or, without a model, an i18n message says why the turn stopped.
Environment variables are `METNOS_AGENT_<FIELD>`; the table in `metnos.toml` is `[agent]`.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class AgentSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_AGENT_")

    max_model_calls: int = Field(12, ge=1, le=200, description="Model calls per turn.")
    max_tool_calls: int = Field(24, ge=1, le=500, description="Tool calls per turn.")
    deadline_s: float = Field(
        300.0, gt=0, description="Wall-clock budget of a turn, approval waits excluded.")
    max_cost_per_turn_usd: float = Field(
        0.5, ge=0, description="LLM spend per turn (besides the daily cap of [policy]).")
    max_tool_result_chars: int = Field(
        16_000, ge=500, description="A tool result sent to the model is cut to this length "
        "(head and tail kept); the turn's record keeps it whole.")
    history_tokens: int = Field(
        6_000, ge=500, description="Tokens of earlier conversation sent with each request; "
        "what does not fit is folded into the session summary.")
    parallel_tools: int = Field(
        4, ge=1, le=16, description="Read-only calls of one model message run at once.")
