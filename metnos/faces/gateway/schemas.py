"""Request and response bodies of the gateway's JSON API (SPEC §3)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from metnos.faces.gateway.invalid import active_lang, message_text
from metnos.mechanisms.llm.health import ModelState

TurnStatus = Literal["running", "completed", "awaiting_approval", "failed"]


class TurnCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    attachments: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=10,
        description="Ids of photos or documents sent first (POST /api/attachments), by "
                    "the same person: filed into the workspace for this turn and described "
                    "to the model as data (the turn then asks before acting).")
    text: str = Field(None, validate_default=True,
                      description="The user's message (not only blanks; it may be left out "
                                  "when `attachments` names a file).")
    session_id: str | None = Field(None, max_length=64, description="Continue this session.")
    lang: str | None = Field(
        None, max_length=35,
        description="BCP-47 tag of one of the instance's active languages (`it`, `en-GB`): "
                    "the language of a session this turn creates and of this request's "
                    "errors. Another tag is refused (422, naming the active ones).")
    forwarded: list[str] = Field(
        default_factory=list, max_length=10,
        description="Text the user forwards or quotes (a mail, a message): read as data, "
                    "never as instructions; the turn then asks before acting.")
    ask_all: bool = Field(
        False, description="True: the session asks before every change from this turn on, "
                           "even one that can be undone (`metnos chat --ask-all`); it stays "
                           "on until PATCH /api/sessions/{id} with `ask_all: false`.")

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> Any:
        """Required and not only blanks, unless files come with it (`attachments` is declared
        first, so it is validated by now); text a client cannot encode is refused."""
        files = bool(info.data.get("attachments"))
        if value is None:
            if files:
                return ""
            raise PydanticCustomError("missing", "Field required")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise PydanticCustomError("string_unicode", "not valid text") from None
        return value if files else message_text(value)

    _lang = field_validator("lang", mode="before")(active_lang)


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


class FieldErrorPublic(BaseModel):
    """One problem of a refused request: the field as the client named it (`text`,
    `forwarded[2]`; empty for the body itself), an i18n key, its message."""

    field: str
    key: str
    message: str


class ErrorBody(BaseModel):
    """`key` (an i18n key: clients rely on it) and `message` (in the request's language);
    a refused body (422) also lists every problem in `detail`, the first one being `key`."""

    key: str
    message: str
    detail: list[FieldErrorPublic] | None = None


class ErrorPublic(BaseModel):
    error: ErrorBody


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these error statuses: each answers the JSON error body."""
    return {code: {"model": ErrorPublic} for code in codes}


# what any route may answer besides its own errors: an unreadable body (400), the HostGuard's
# refusals (403 host or origin, 411 no length, 413 too large), invalid parameters (422)
COMMON_ERRORS = error_responses(400, 403, 411, 413, 422)


class HealthPublic(BaseModel):
    """`/healthz`. `status`: `draining` while Metnos stops (HTTP 503), `degraded` when a part
    below is down, else `ok`. `unknown`: not observed yet (or no longer recently)."""

    status: Literal["ok", "degraded", "draining"]
    version: str
    sandbox: Literal["ok", "degraded"]
    executors: int
    llm: Literal["configured", "embedded"]
    database: Literal["ok", "down"]
    prefect: Literal["ok", "unreachable", "unknown"]  # the Prefect server
    runner: Literal["alive", "down", "unknown"]  # the deployment runner (schedules, reminders)
    model: ModelState = Field(description="The model's state as the last call found it "
                              "(unknown before the first; embedded: none configured).")


class StatusPublic(BaseModel):
    """`GET /api/status` (the owner's): the model's state, in words, with its fix."""

    model: ModelState
    line: str = Field(description="One plain sentence about the model, in the asker's language.")
    fix: str | None = Field(None, description="What to change, when something is wrong.")
    setting: str | None = Field(None, description="The setting to fix (configuration errors).")
