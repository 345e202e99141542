"""The LLM port: the only place Metnos talks to a model (SPEC §8).

One class over litellm (any provider is one model string) with tenacity retrying only transient
errors (rate limits, connection problems, timeouts, 5xx). litellm's own retries are off
(`num_retries=0`), so retry layers never stack (notes/prefect.md §5). Tiers `fast` and `wise`
default to `METNOS_LLM_MODEL`; `frontier` is opt-in: it must be configured *and* asked for.

With `on_delta`, the call streams (`_stream.py`): each piece of text goes to `on_delta` as it
arrives and the same whole `LLMReply` comes back, with `first_token_s`. A stream is retried
only while no piece was delivered; a failure after that is an LLMError at once.

Law 2 on every call (`outbound.py`): the messages are redacted of the instance's secrets
before they are sent, and the reply's text (each streamed piece too) before the caller sees
it; each redaction leaves an audit line naming the secrets.

litellm is imported lazily, on the first call: importing it takes seconds, and the embedded
planner (no LLM configured) must never pay for it.

Prompt caching: the system prompt (workspace files, language block, tools, in a fixed order)
is the stable prefix of every call. Providers that cache a prefix only where the request marks
it (`CACHE_MARKED`) get litellm's mark on the system message (litellm decides per model: an
OpenRouter Claude model gets it, an OpenRouter GPT model not); OpenAI, DeepSeek and xAI cache
a stable prefix by themselves, and a local server is sent nothing it does not know.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from metnos.ground.errors import LLMError
from metnos.ground.settings import LLMSettings, Settings
from metnos.mechanisms.llm import failure
from metnos.mechanisms.llm._stream import DeltaStream, OnDelta
from metnos.mechanisms.llm.outbound import Outbound

if TYPE_CHECKING:
    from metnos.mechanisms.audit import AuditLog

log = logging.getLogger(__name__)

EMPTY_REPLY = "ERR_LLM_EMPTY_REPLY"  # a reply with no text and no tool call, or unreadable

# providers whose prompt cache needs a mark in the request (litellm's `cache_control` ones)
CACHE_MARKED = frozenset({"anthropic", "bedrock", "vertex_ai", "gemini", "openrouter",
                          "azure_ai", "databricks", "dashscope", "minimax", "zai"})
CACHE_POINTS = ({"location": "message", "role": "system"},)

Tier = Literal["fast", "wise", "frontier"]
TIERS: tuple[str, ...] = ("fast", "wise", "frontier")
# told of every call's outcome: None on success, the LLMError on failure (the gateway's
# live view of the model, metnos.mechanisms.llm.health.ModelHealth)
Observer = Callable[[LLMError | None], None]


@dataclass(frozen=True)
class RawToolCall:
    """A tool call as the model sent it; `arguments_json` is unparsed (it may be malformed)."""

    id: str
    name: str
    arguments_json: str


@dataclass(frozen=True)
class LLMReply:
    text: str | None
    tool_calls: list[RawToolCall] = field(default_factory=list)
    cost_usd: float = 0.0
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    first_token_s: float | None = None  # streamed calls: from the request to the first text



def configured(settings: LLMSettings) -> bool:
    """True when a model is configured for the default tiers (else the embedded planner serves)."""
    return bool(settings.model or settings.model_fast)


class LLMPort:
    """Resolves tiers to model strings and completes chats with retries on transient errors."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        wait_initial_s: float = 0.2,
        wait_max_s: float = 5.0,
        retry_after_cap_s: float = 10.0,
        outbound: Outbound | None = None,
    ) -> None:
        """`outbound`: Law 2 on the traffic; by default the current settings' instance."""
        self.settings = settings
        self._wait_initial_s = wait_initial_s
        self._wait_max_s = wait_max_s
        self._retry_after_cap_s = retry_after_cap_s
        self._outbound = outbound
        self._observers: list[Observer] = []
        self._allows: Callable[[], bool] | None = None

    def observe(self, observer: Observer) -> None:
        """Tell `observer` the outcome of every call from now on."""
        self._observers.append(observer)

    def gate(self, allows: Callable[[], bool]) -> None:
        """Ask `allows()` before every call: False (a breaker open, `ModelHealth.allows`)
        fails the call at once, with no request, whoever makes it (a turn, the Tutor's
        composition, a history fold): nobody waits for a model known not to answer."""
        self._allows = allows

    def _tell(self, outcome: LLMError | None) -> None:
        for observer in self._observers:
            observer(outcome)

    @classmethod
    def for_instance(cls, settings: Settings, audit: AuditLog | None = None) -> LLMPort:
        """The port of one instance: its model settings, its secrets, its audit log."""
        return cls(settings.llm, outbound=Outbound.for_instance(settings, audit))

    @property
    def outbound(self) -> Outbound:
        if self._outbound is None:
            self._outbound = Outbound.default()
        return self._outbound

    def resolve(self, tier: str) -> str | None:
        """The model string for `tier`; None when nothing is configured for fast/wise.

        `frontier` is never a fallback: asking for it without `model_frontier` raises.
        """
        s = self.settings
        if tier == "fast":
            return s.model_fast or s.model
        if tier == "wise":
            return s.model_wise or s.model
        if tier == "frontier":
            if not s.model_frontier:
                raise LLMError("ERR_LLM_FRONTIER_NOT_CONFIGURED")
            return s.model_frontier
        raise LLMError("ERR_LLM_TIER_UNKNOWN", tier=tier, tiers=", ".join(TIERS))

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tier: str = "fast",
        on_delta: OnDelta | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        """One chat completion (OpenAI message/tool format); LLMError when it cannot be had.
        With `on_delta`, it streams and calls `on_delta(piece)` for each piece of text.
        A configuration error (checked first, or the call's) is never retried."""
        model = self.resolve(tier)
        if model is None:
            raise LLMError("ERR_LLM_NOT_CONFIGURED")
        if self._allows is not None and not self._allows():
            raise LLMError("ERR_LLM_UNAVAILABLE", model=model, status="-",
                           detail="not asked again yet", address=self.settings.api_base or "-")
        problem = failure.settings_problem(self.settings)
        if problem is not None:
            error = _error_of(problem, model, None, "settings", self.settings.api_base)
            self._tell(error)
            raise error
        litellm = _litellm()
        law2 = self.outbound
        kwargs = self._request(model, law2.request(messages), tools)
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        held = None if on_delta is None else law2.stream(on_delta)
        stream = None if held is None else DeltaStream(held, time.perf_counter())

        def retryable(exc: BaseException) -> bool:
            if not isinstance(exc, Exception):  # a cancelled turn, a stop: never tried again
                return False
            if stream is not None and (stream.delivered or exc is stream.callback_error):
                return False
            return failure.classify(exc).transient and not failure.timed_out(exc)

        retrying = AsyncRetrying(
            retry=retry_if_exception(retryable),
            wait=self._wait,
            stop=stop_after_attempt(self.settings.max_attempts),
            before_sleep=_log_retry,
            reraise=True,
        )
        try:
            if stream is None:
                response: Any = await retrying(litellm.acompletion, **kwargs)
            else:
                response = await retrying(stream.run, litellm, **kwargs)
        except Exception as exc:  # the third-party boundary: every failure becomes an LLMError
            if stream is not None and exc is stream.callback_error:
                raise  # the caller's own callback failed: not the model's fault
            error = _to_llm_error(exc, model, self.settings.api_base)
            self._tell(error)
            raise error from exc
        if held is not None:
            held.flush()
        try:
            reply = _reply(litellm, response, model, self.settings)
        except Exception as exc:  # a 200 that is no chat completion (no choices, no message)
            error = _error_of(failure.Failure(EMPTY_REPLY), model, None, type(exc).__name__,
                              self.settings.api_base)
            self._tell(error)
            raise error from exc
        if not reply.tool_calls and not (reply.text or "").strip():
            # nothing said, nothing asked (a broken proxy's stream reads as this): the caller
            # falls back as on any failure; the model did answer, so no breaker opens
            error = _error_of(failure.Failure(EMPTY_REPLY), model, None, "empty",
                              self.settings.api_base)
            self._tell(error)
            raise error
        self._tell(None)
        reply = replace(reply, text=law2.reply(reply.text, held))
        return reply if stream is None else replace(reply, first_token_s=stream.first_token_s)

    def _request(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "timeout": s.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
        if model.split("/", 1)[0] in CACHE_MARKED:
            kwargs["cache_control_injection_points"] = [dict(p) for p in CACHE_POINTS]
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if s.api_key is not None:
            kwargs["api_key"] = s.api_key.get_secret_value()
        return kwargs

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins when it is short."""
        exc = state.outcome.exception() if state.outcome is not None else None
        after = _retry_after_s(exc)
        if after is not None:
            return min(after, self._retry_after_cap_s)
        backoff = wait_exponential_jitter(initial=self._wait_initial_s, max=self._wait_max_s)
        return float(backoff(state))


_LITELLM: ModuleType | None = None


def _litellm() -> ModuleType:
    """Import litellm once, with the local cost map (no network fetch at import)."""
    global _LITELLM
    if _LITELLM is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        # its per-stream success logging feeds callbacks and a response cache, of which Metnos
        # registers none (the cost is ours: `_cost`): ~2.5 ms of a ~15 ms loopback call
        litellm.disable_streaming_logging = True
        _LITELLM = litellm
    return _LITELLM


def _retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form only), if the error carries one."""
    if exc is None:
        return None
    for headers in (
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "litellm_response_headers", None),
    ):
        try:
            value = headers.get("retry-after") if headers is not None else None
            if value is not None:
                return max(0.0, float(value))
        except (AttributeError, TypeError, ValueError):
            continue
    return None


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome is not None else None
    log.warning(
        "llm.retry attempt=%s error=%s status=%s",
        state.attempt_number,
        type(exc).__name__,
        getattr(exc, "status_code", None),
    )


def _to_llm_error(exc: BaseException, model: str, api_base: str | None) -> LLMError:
    status = getattr(exc, "status_code", None)
    log.warning(
        "llm.error model=%s error=%s status=%s detail=%s", model, type(exc).__name__, status, exc
    )
    return _error_of(failure.classify(exc), model, status, type(exc).__name__, api_base)


def _error_of(found: failure.Failure, model: str, status: Any, detail: str,
              api_base: str | None) -> LLMError:
    """The LLMError of a classified failure; a configuration error names its setting."""
    extra: dict[str, Any] = {"address": api_base or "-", "host": failure.host_of(api_base)}
    extra.update((name, value) for name, value in found.vars if value)
    if found.setting is not None:
        extra["setting"] = found.setting
    return LLMError(found.key, model=model, status=status or "-", detail=detail, **extra)


def _reply(litellm: ModuleType, response: Any, model: str, settings: LLMSettings) -> LLMReply:
    message = response.choices[0].message
    usage = getattr(response, "usage", None)
    calls = [
        RawToolCall(
            id=str(call.id or ""),
            name=str(call.function.name or ""),
            arguments_json=_as_json_text(call.function.arguments),
        )
        for call in (getattr(message, "tool_calls", None) or [])
    ]
    return LLMReply(
        text=message.content or None,
        tool_calls=calls,
        cost_usd=_cost(litellm, response, settings),
        model=str(getattr(response, "model", None) or model),
        prompt_tokens=_tokens(getattr(usage, "prompt_tokens", 0)),
        completion_tokens=_tokens(getattr(usage, "completion_tokens", 0)),
    )


def _as_json_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments)


def _cost(litellm: ModuleType, response: Any, settings: LLMSettings) -> float:
    """The call's cost in USD: the configured per-token prices when either is set (they win
    over litellm's map), else litellm's estimate; 0.0 for models nobody prices."""
    if settings.input_cost_per_token is not None or settings.output_cost_per_token is not None:
        return _priced(response, settings)
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # unknown model / missing usage: no price is not an error
        return 0.0


def _priced(response: Any, settings: LLMSettings) -> float:
    """Usage tokens × the configured prices; a reply without usage costs nothing known."""
    usage = getattr(response, "usage", None)
    prompt = _tokens(getattr(usage, "prompt_tokens", 0))
    completion = _tokens(getattr(usage, "completion_tokens", 0))
    return (prompt * (settings.input_cost_per_token or 0.0)
            + completion * (settings.output_cost_per_token or 0.0))


def _tokens(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
