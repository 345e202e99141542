"""The scripted LLM's streamed answers: a completion cut into OpenAI `chat.completion.chunk`s.

Text comes one word at a time (each word with the blanks after it), tool calls the way OpenAI
sends them: a first chunk per call with its `index`, `id`, `type` and name, then its arguments
in small pieces under the same `index`. A closing chunk carries `finish_reason`; when the
request asked `stream_options.include_usage`, one more chunk with empty `choices` carries the
usage, as OpenAI does.
"""

from __future__ import annotations

import re
from typing import Any

ARGUMENT_PIECE = 8  # characters of tool-call arguments per chunk
_WORD = re.compile(r"^\s+|\S+\s*")


def text_pieces(text: str) -> list[str]:
    """`text` one word at a time (leading blanks alone, each word with its trailing blanks);
    the pieces joined give `text` back."""
    return _WORD.findall(text)


def argument_pieces(arguments: str) -> list[str]:
    return [arguments[i:i + ARGUMENT_PIECE] for i in range(0, len(arguments), ARGUMENT_PIECE)]


def stream_chunks(completion: dict[str, Any], *, include_usage: bool) -> list[dict[str, Any]]:
    """The chunks of `completion` (a `chat.completion` body), in the order they are sent."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {key: completion[key] for key in ("id", "created", "model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "logprobs": None,
                             "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in text_pieces(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        chunks.append(chunk({"tool_calls": [{
            "index": index, "id": call["id"], "type": "function",
            "function": {"name": function["name"], "arguments": ""}}]}))
        chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in argument_pieces(function["arguments"])]
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        chunks.append({**head, "object": "chat.completion.chunk", "choices": [],
                       "usage": completion["usage"]})
    return chunks
