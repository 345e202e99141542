"""A scripted OpenAI-compatible server on loopback, so tests never reach a real provider.

Tests enqueue replies (text, tool calls, HTTP errors) the way simonw/llm's `MockModel.enqueue`
does; each `POST /v1/chat/completions` pops one. An empty queue answers HTTP 500 with a clear
message, so a test never silently gets an answer it did not script. `always(...)` turns the
server into an attacker model that emits the same tool call forever.

A request with `"stream": true` is answered in OpenAI's chunk format, a word (or a piece of
tool-call arguments) per chunk, `chunk_delay_s` apart (so a browser can see tokens arrive);
`enqueue_cut` scripts a stream that breaks after some chunks. `first_token_s` and
`tokens_per_s` pace it like a real model (a chunk counts as a token): the first chunk after the
role's comes `first_token_s` late, each later one `1 / tokens_per_s` after the one before; an
answer that does not stream waits as long as its stream would have taken. Both off by default.

`POST /v1/audio/transcriptions` (OpenAI's multipart upload) is a transcription server: each
upload is recorded in `transcriptions` (the file's bytes, the form's fields) and answered
`{"text": ...}` from the queue `enqueue_transcript` fills ("" when it is empty).

Point litellm at it with `model="openai/scripted"`, `api_base=server.base_url + "/v1"`, any key.
With `api_key=...` it is a server that wants that key: any request without it as bearer gets
401 in OpenAI's format, as a real server answers a wrong key.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from metnos.testing._llm_stream import stream_chunks
from metnos.testing._loopback import LoopbackServer
from metnos.testing._multipart import Upload, parse_form

EMPTY_QUEUE_MESSAGE = "ScriptedLLM: no reply enqueued for this request"


@dataclass(frozen=True)
class ToolCall:
    """A tool call to script: `arguments` as a dict, or a raw string (may be malformed JSON)."""

    name: str
    arguments: dict[str, Any] | str
    call_id: str | None = None


@dataclass(frozen=True)
class _Reply:
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    status: int = 200
    error: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    cut_after: int | None = None  # chunks sent before the connection is dropped


@dataclass(frozen=True)
class _Route:
    call: ToolCall
    final_text: str
    then: tuple[ToolCall, ...] = ()  # the calls after the first, one per tool round


class ScriptedLLM(LoopbackServer):
    """The server: `start()`/`stop()` or `with ScriptedLLM() as llm: ...`."""

    name = "scripted-llm"

    def __init__(self, model: str = "scripted", *, chunk_delay_s: float = 0.0,
                 api_key: str | None = None, first_token_s: float = 0.0,
                 tokens_per_s: float | None = None) -> None:
        super().__init__()
        self.model = model
        self.api_key = api_key  # when set, a request without it as bearer gets 401
        self.lists_models = True  # False: `GET /v1/models` is 404 (a server without it)
        self.chunk_delay_s = chunk_delay_s  # pause before each streamed chunk (settable)
        self._default_delay_s = chunk_delay_s
        self.first_token_s = first_token_s  # a real model's wait for its first token (settable)
        self.tokens_per_s = tokens_per_s  # ... and its rate after it; None: no pacing (settable)
        self._default_pace = (first_token_s, tokens_per_s)
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[_Reply] = deque()
        self.transcriptions: list[Upload] = []  # every audio upload, in order
        self._transcripts: deque[str] = deque()
        self._always: _Reply | None = None
        self._routes: dict[str, _Route] = {}
        self._responder: Callable[[dict[str, Any]], str | None] | None = None
        self._lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    @property
    def api_base(self) -> str:
        """The `api_base` litellm wants (`base_url` + `/v1`)."""
        return self.base_url + "/v1"

    # -- scripting ------------------------------------------------------------------------
    def enqueue_text(self, text: str) -> None:
        self._push(_Reply(text=text))

    def enqueue_tool_call(
        self, name: str, arguments: dict[str, Any] | str, call_id: str | None = None
    ) -> None:
        self._push(_Reply(tool_calls=(ToolCall(name, arguments, call_id),)))

    def enqueue_tool_calls(self, calls: list[ToolCall], text: str | None = None) -> None:
        self._push(_Reply(text=text, tool_calls=tuple(calls)))

    def enqueue_error(
        self, status: int, message: str = "scripted error", headers: dict[str, str] | None = None
    ) -> None:
        """An HTTP error in OpenAI's error format (e.g. 500, 429 with Retry-After, 400)."""
        self._push(_Reply(status=status, error=message, headers=tuple((headers or {}).items())))

    def enqueue_cut(self, text: str, after_chunks: int) -> None:
        """A reply whose connection drops after `after_chunks` chunks (0: right after the
        headers); a request that does not stream gets the drop before any answer."""
        self._push(_Reply(text=text, cut_after=after_chunks))

    def enqueue_transcript(self, text: str) -> None:
        """The words the next `POST /v1/audio/transcriptions` answers."""
        with self._lock:
            self._transcripts.append(text)

    def _transcribe(self, upload: Upload) -> str:
        with self._lock:
            self.transcriptions.append(upload)
            return self._transcripts.popleft() if self._transcripts else ""

    def always(self, tool_call: ToolCall | None) -> None:
        """Answer every request the queue does not cover with this tool call (None: stop)."""
        with self._lock:
            self._always = None if tool_call is None else _Reply(tool_calls=(tool_call,))

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._transcripts.clear()
            self.transcriptions.clear()
            self._always = None
            self._responder = None
            self.requests.clear()
            self.chunk_delay_s = self._default_delay_s
            self.first_token_s, self.tokens_per_s = self._default_pace

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _push(self, reply: _Reply) -> None:
        with self._lock:
            self._queue.append(reply)

    def route(self, token: str, tool_call: ToolCall, *, final_text: str,
              then: Sequence[ToolCall] = ()) -> None:
        """Answer requests whose last user message contains `token`, before the queue:
        with this tool call, or with `final_text` once the request ends with a `tool`
        message (the loop came back with the call's result). Concurrent turns (each with its
        own token) never swap calls, and a routed turn ends. `then`: further calls, one
        each time the loop comes back, before `final_text`."""
        with self._lock:
            self._routes[token] = _Route(tool_call, final_text, tuple(then))

    def respond_with(self, responder: Callable[[dict[str, Any]], str | None] | None) -> None:
        """Answer requests the routes do not cover with `responder(body)` as text, before
        the queue; a None answer passes the request on (a stand-in translator, say)."""
        with self._lock:
            self._responder = responder

    def _next(self, body: dict[str, Any]) -> _Reply | None:
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        said = next((str(m.get("content")) for m in reversed(messages)
                     if m.get("role") == "user"), "")
        answered = bool(messages) and messages[-1].get("role") == "tool"
        with self._lock:
            self.requests.append(body)
            routed = next((r for token, r in self._routes.items() if token in said), None)
            if routed is not None:
                rounds = _tool_rounds(messages)
                if answered and rounds <= len(routed.then):
                    return _Reply(tool_calls=(routed.then[rounds - 1],))
                return (_Reply(text=routed.final_text) if answered
                        else _Reply(tool_calls=(routed.call,)))
            responder = self._responder
        answer = responder(body) if responder is not None else None
        with self._lock:
            if answer is not None:
                return _Reply(text=answer)
            if self._queue:
                return self._queue.popleft()
            return self._always

    # -- responses ------------------------------------------------------------------------
    def _pauses(self, chunks: list[dict[str, Any]]) -> list[float]:
        """The model's own pause before each chunk: none before the role's, `first_token_s`
        before the next, `1 / tokens_per_s` before each later one that carries a choice."""
        step = 1 / self.tokens_per_s if self.tokens_per_s else 0.0
        return [0.0 if i == 0 or not chunk.get("choices") else
                self.first_token_s if i == 1 else step for i, chunk in enumerate(chunks)]

    def _completion(self, reply: _Reply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [_tool_call_json(call) for call in reply.tool_calls]
        prompt_chars = len(json.dumps(body.get("messages", [])))
        completion_chars = len(json.dumps(message))
        return {
            "id": "chatcmpl-" + uuid.uuid4().hex[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_chars // 4,
                "completion_tokens": completion_chars // 4,
                "total_tokens": prompt_chars // 4 + completion_chars // 4,
            },
        }


def _tool_rounds(messages: list[dict[str, Any]]) -> int:
    """How many assistant tool-call messages follow the last user message."""
    count = 0
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant" and message.get("tool_calls"):
            count += 1
    return count


def _tool_call_json(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    return {
        "id": call.call_id or "call_" + uuid.uuid4().hex[:16],
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _error_json(message: str, status: int) -> dict[str, Any]:
    kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}


def _handler_for(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACK

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            return  # quiet: tests assert on `llm.requests`, not on logs

        def _refused(self) -> bool:
            """A wrong or missing key, when the server wants one: answered 401."""
            if llm.api_key is None or self.headers.get("Authorization") == f"Bearer {llm.api_key}":
                return False
            self._send(401, _error_json("Incorrect API key provided.", 401))
            return True

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            if self._refused():
                return
            if llm.lists_models and self.path.rstrip("/") in ("/v1/models", "/models"):
                model = {"id": llm.model, "object": "model", "created": 0, "owned_by": "metnos"}
                self._send(200, {"object": "list", "data": [model]})
            else:
                self._send(404, _error_json(f"no route GET {self.path}", 404))

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self._refused():
                return
            if self.path.rstrip("/") in ("/v1/audio/transcriptions", "/audio/transcriptions"):
                upload = parse_form(raw, self.headers.get("Content-Type", ""))
                self._send(200, {"text": llm._transcribe(upload)})
                return
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, _error_json(f"no route POST {self.path}", 404))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, _error_json("request body is not JSON", 400))
                return
            reply = llm._next(body)
            if reply is None:
                self._send(500, _error_json(EMPTY_QUEUE_MESSAGE, 500))
            elif reply.status != 200:
                self._send(reply.status, _error_json(reply.error, reply.status), reply.headers)
            elif body.get("stream"):
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = stream_chunks(llm._completion(reply, body), include_usage=usage)
                self._send_stream(chunks, reply.cut_after)
            elif reply.cut_after is not None:
                self._drop()
            else:
                completion = llm._completion(reply, body)
                if llm.first_token_s or llm.tokens_per_s:  # as long as its stream would take
                    time.sleep(sum(llm._pauses(stream_chunks(completion, include_usage=False))))
                self._send(200, completion)

        def _send(
            self, status: int, payload: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, chunks: list[dict[str, Any]], cut_after: int | None) -> None:
            """Server-sent events, one chunk per write (chunked transfer encoding), then
            `[DONE]`; with `cut_after`, the connection drops after that many chunks."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            frames = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
            frames.append("data: [DONE]\n\n")
            pauses = [*llm._pauses(chunks), 0.0]
            try:
                for sent, frame in enumerate(frames):
                    if cut_after is not None and sent >= cut_after:
                        self._drop()
                        return
                    if llm.chunk_delay_s > 0:
                        time.sleep(llm.chunk_delay_s)
                    if pauses[sent] > 0:
                        time.sleep(pauses[sent])
                    data = frame.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up mid-stream

        def _drop(self) -> None:
            """Close the connection at once, mid-answer (a provider that fell over)."""
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    return _Handler
