"""A streamed completion: text pieces handed on as they arrive, the whole reply rebuilt.

`DeltaStream.run` is what the port retries in place of `litellm.acompletion` when the caller
wants deltas: it asks for a stream with usage in the last chunk
(`stream_options.include_usage`; litellm counts the tokens offline when the provider sends
none), calls `on_delta(piece)` for each piece of text, and rebuilds the complete response as a
litellm `ModelResponse` (text, tool calls whose arguments arrived in pieces by `index`, usage),
so the port reads it, and prices it, the way it reads a reply that did not stream. Once a piece
was delivered the stream cannot be replayed: `delivered` tells the port to stop retrying.

The accumulation is ours rather than `litellm.stream_chunk_builder`: a few string joins
instead of ~4 ms of rebuilding per call, on the path to the user's first token; and the
stream is closed after the usage chunk (which follows the finish), saving litellm's end-of-
stream logging (~5 ms) the port does not use.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

OnDelta = Callable[[str], None]


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Whole:
    """What the chunks of one stream add up to."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    usage: Any = None
    model: str = ""
    finish: str | None = None

    def add(self, chunk: Any) -> str:
        """Fold `chunk` in; its text piece ("" when none)."""
        self.model = self.model or str(getattr(chunk, "model", None) or "")
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        choices = getattr(chunk, "choices", None) or []
        if not choices:
            return ""
        self.finish = getattr(choices[0], "finish_reason", None) or self.finish
        delta = getattr(choices[0], "delta", None)
        for piece in getattr(delta, "tool_calls", None) or []:
            self._add_call(piece)
        content = getattr(delta, "content", None)
        if isinstance(content, str) and content:
            self.text.append(content)
            return content
        return ""

    def _add_call(self, piece: Any) -> None:
        index = getattr(piece, "index", None)
        if index is None:  # no index: a call with an id starts, else the last one goes on
            index = len(self.calls) if getattr(piece, "id", None) or not self.calls else max(
                self.calls)
        call = self.calls.setdefault(int(index), _Call())
        call.id = call.id or str(getattr(piece, "id", None) or "")
        function = getattr(piece, "function", None)
        call.name = call.name or str(getattr(function, "name", None) or "")
        arguments = getattr(function, "arguments", None)
        if isinstance(arguments, str):
            call.arguments.append(arguments)

    def response(self, litellm: ModuleType, model: str) -> Any:
        calls = [{"id": c.id, "type": "function",
                  "function": {"name": c.name, "arguments": "".join(c.arguments)}}
                 for _, c in sorted(self.calls.items())]
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if calls:
            message["tool_calls"] = calls
        finish = self.finish or ("tool_calls" if calls else "stop")
        usage = self.usage
        return litellm.ModelResponse(
            model=self.model or model,
            choices=[{"index": 0, "finish_reason": finish, "message": message}],
            usage={"prompt_tokens": _int(getattr(usage, "prompt_tokens", 0)),
                   "completion_tokens": _int(getattr(usage, "completion_tokens", 0)),
                   "total_tokens": _int(getattr(usage, "total_tokens", 0))})


class DeltaStream:
    """One streamed request, possibly attempted several times (only before any delta)."""

    def __init__(self, on_delta: OnDelta, started: float) -> None:
        self.on_delta = on_delta
        self.started = started  # time.perf_counter() when the caller asked
        self.delivered = False
        self.first_token_s: float | None = None
        self.callback_error: BaseException | None = None  # raised by on_delta: not the LLM's

    async def run(self, litellm: ModuleType, **kwargs: Any) -> Any:
        """The rebuilt `ModelResponse` of one streamed attempt."""
        response = await litellm.acompletion(
            **kwargs, stream=True, stream_options={"include_usage": True})
        whole = _Whole()
        async for chunk in response:
            piece = whole.add(chunk)
            if piece:
                self._deliver(piece)
            if whole.finish is not None and whole.usage is not None and not chunk.choices:
                break  # OpenAI's last chunk: what litellm does after it is its own bookkeeping
        closing = getattr(response, "aclose", None)
        if closing is not None:
            await closing()
        return whole.response(litellm, str(kwargs.get("model", "")))

    def _deliver(self, piece: str) -> None:
        if self.first_token_s is None:
            self.first_token_s = time.perf_counter() - self.started
        self.delivered = True
        try:
            self.on_delta(piece)
        except BaseException as exc:
            self.callback_error = exc
            raise


def _int(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
