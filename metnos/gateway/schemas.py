"""Request and response bodies of the gateway's JSON API (SPEC §3)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TurnStatus = Literal["running", "completed", "awaiting_approval", "failed"]


class TurnCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="The user's message.")
    session_id: str | None = Field(None, max_length=64, description="Continue this session.")
    lang: str | None = Field(None, max_length=35, description="BCP-47 tag of the message.")
    forwarded: list[str] = Field(
        default_factory=list, max_length=10,
        description="Text the user forwards or quotes (a mail, a message): read as data, "
                    "never as instructions; the turn then asks before acting.")


class StepPublic(BaseModel):
    """One step of a turn's trace: `seen` lists the earlier steps whose results the model
    had read when it asked for this one (the hand-offs); `think` is that model call."""

    seq: int
    executor: str
    args_digest: str
    decision: str
    outcome: str | None = None
    error_key: str | None = None
    think: int = 0
    seen: list[int] = Field(default_factory=list)
    call_id: str = ""
    action_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class TurnPublic(BaseModel):
    turn_id: str
    session_id: str
    status: TurnStatus
    reply: str | None
    approvals: list[dict[str, Any]] = Field(default_factory=list)
    created_at: datetime | None = None
    finished_at: datetime | None = None
    flow_run_id: str | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
    # what ran, beside the reply (executor, status, text, action_id, undo, approval_id)
    activity: list[dict[str, Any]] = Field(default_factory=list)
    stop_reason: str | None = None  # the i18n key of the budget that ended the agent loop
    steps: list[StepPublic] = Field(default_factory=list)  # the step trace, in order


class ErrorBody(BaseModel):
    key: str
    message: str


class ErrorPublic(BaseModel):
    error: ErrorBody


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these error statuses: each answers the JSON error body."""
    return {code: {"model": ErrorPublic} for code in codes}


# what any route may answer besides its own errors: an unreadable body (400), the HostGuard's
# refusals (403 host or origin, 411 no length, 413 too large), invalid parameters (422)
COMMON_ERRORS = error_responses(400, 403, 411, 413, 422)


class HealthPublic(BaseModel):
    status: Literal["ok"]
    version: str
    sandbox: Literal["ok", "degraded"]
    executors: int
    llm: Literal["configured", "embedded"]
