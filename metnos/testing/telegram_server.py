"""A fake Telegram Bot API server on loopback, so tests never reach Telegram.

It speaks the part of the Bot API the Metnos bot uses (`getMe`, `deleteWebhook`,
`getUpdates` with long polling, `sendMessage`, `editMessageText`, `editMessageReplyMarkup`,
`answerCallbackQuery`, `sendChatAction`, `getFile`, and the download of a file at
`<base_url>/file/bot<token>/<path>`) at `<base_url>/bot<token>/<method>`, the layout
aiogram's `TelegramAPIServer.from_base(base_url)` expects. Tests feed updates
(`push_message`, `push_callback`, `push_edit`) and read what the bot sent (`calls`,
`sent_texts(chat_id)`, `wait_for(...)`). Updates are delivered as given, whatever
`allowed_updates` says: the bot must ignore what it did not ask for.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl

from metnos.testing._loopback import LoopbackServer

BOT_ID = 4242
BOT_USERNAME = "metnos_test_bot"
MAX_POLL_S = 2.0  # a long poll never blocks longer than this (keeps shutdowns quick)


@dataclass(frozen=True)
class Call:
    """One request the bot made: the method, its parameters (JSON fields decoded), what
    the server answered and when (`time.monotonic()`, to check how often the bot edits)."""

    method: str
    params: dict[str, Any]
    result: Any = None
    at: float = 0.0


class FakeTelegram(LoopbackServer):
    """The server: `start()`/`stop()` or `with FakeTelegram() as tg: ...`."""

    name = "fake-telegram"

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._cond = threading.Condition()
        self._closing = False
        self.files: dict[str, bytes] = {}  # what `getFile` and /file/ serve, by file id

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    def stop(self) -> None:
        with self._cond:  # wake long polls, so the server can shut down at once
            self._closing = True
            self._cond.notify_all()
        super().stop()

    # -- feeding updates --------------------------------------------------------------------
    def push_message(self, user_id: int, text: str, *, chat_type: str = "private",
                     chat_id: int | None = None, forward: bool = False,
                     reply_to: str | None = None, quote: str | None = None,
                     language_code: str | None = "it", first_name: str | None = None,
                     username: str | None = None, photo: bytes | None = None,
                     document: tuple[str, str, bytes] | None = None,
                     voice: bytes | None = None, voice_seconds: int = 1) -> int:
        """A message from `user_id` (in its private chat unless `chat_type` says otherwise);
        returns its message id. `first_name` / `username` replace the sender's defaults;
        `photo` (its bytes) or `document` (name, media type, bytes): a file the bot fetches
        with getFile, `text` its caption (none when empty); `voice`: a voice note's bytes (OGG/
        Opus, as Telegram records them), said to last `voice_seconds`."""
        message = self._message(user_id, text, chat_type, chat_id, language_code)
        number = message["message_id"]
        if photo is not None:
            self.files[f"photo-{number}"] = photo
            message["photo"] = [{"file_id": f"photo-{number}", "file_unique_id": f"p{number}",
                                 "width": 640, "height": 480, "file_size": len(photo)}]
        if document is not None:
            name, media_type, data = document
            self.files[f"doc-{number}"] = data
            message["document"] = {"file_id": f"doc-{number}", "file_unique_id": f"d{number}",
                                   "file_name": name, "mime_type": media_type,
                                   "file_size": len(data)}
        if voice is not None:
            self.files[f"voice-{number}"] = voice
            message["voice"] = {"file_id": f"voice-{number}", "file_unique_id": f"v{number}",
                                "duration": voice_seconds, "mime_type": "audio/ogg",
                                "file_size": len(voice)}
        if photo is not None or document is not None or voice is not None:
            caption = message.pop("text")
            if caption:
                message["caption"] = caption
        if first_name is not None:
            message["from"]["first_name"] = first_name
        if username is not None:
            message["from"]["username"] = username
        if forward:
            message["forward_origin"] = {"type": "hidden_user", "date": int(time.time()),
                                         "sender_user_name": "Someone Else"}
        if reply_to is not None:
            message["reply_to_message"] = self._message(999, reply_to, chat_type, chat_id
                                                        or user_id, None)
        if quote is not None:
            message["quote"] = {"text": quote, "position": 0}
        self._push({"message": message})
        return int(message["message_id"])

    def push_edit(self, user_id: int, message_id: int, text: str, *,
                  language_code: str | None = "it") -> None:
        """An `edited_message` update: the user changed an old message."""
        message = self._message(user_id, text, "private", None, language_code)
        message["message_id"] = message_id
        message["edit_date"] = int(time.time())
        self._push({"edited_message": message})

    def push_callback(self, user_id: int, data: str, message_id: int, *,
                      chat_id: int | None = None, language_code: str | None = "it") -> str:
        """A tap on an inline button of the bot's message `message_id`; returns the query id."""
        query_id = f"cb{next(self._update_ids)}"
        chat = chat_id if chat_id is not None else user_id
        self._push({"callback_query": {
            "id": query_id, "from": _user(user_id, language_code), "chat_instance": str(chat),
            "data": data, "message": {"message_id": message_id, "date": int(time.time()),
                                      "chat": {"id": chat, "type": "private"},
                                      "from": _bot(), "text": "card"}}})
        return query_id

    # -- reading what the bot did -------------------------------------------------------------
    def calls_of(self, method: str, chat_id: int | None = None) -> list[Call]:
        with self._cond:
            found = [c for c in self.calls if c.method == method]
        if chat_id is not None:
            found = [c for c in found if str(c.params.get("chat_id")) == str(chat_id)]
        return found

    def calls_of_any(self, methods: tuple[str, ...], chat_id: int | None = None) -> list[Call]:
        """The calls of any of `methods` (to `chat_id`, if given), in the order they came."""
        with self._cond:
            found = [c for c in self.calls if c.method in methods]
        if chat_id is not None:
            found = [c for c in found if str(c.params.get("chat_id")) == str(chat_id)]
        return found

    def sent_texts(self, chat_id: int) -> list[str]:
        """The texts of every `sendMessage` to `chat_id`, in order."""
        return [str(c.params.get("text", "")) for c in self.calls_of("sendMessage", chat_id)]

    def wait_for(self, predicate: Callable[[FakeTelegram], bool], timeout_s: float = 30.0,
                 what: str = "condition") -> None:
        """Block until `predicate(self)` holds (checked on every call the bot makes)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    methods = [c.method for c in self.calls]
                    raise AssertionError(f"FakeTelegram: timed out waiting for {what}; "
                                         f"calls so far: {methods}")
                self._cond.wait(min(left, 0.1))

    # -- internals ----------------------------------------------------------------------------
    def _message(self, user_id: int, text: str, chat_type: str, chat_id: int | None,
                  language_code: str | None) -> dict[str, Any]:
        chat = chat_id if chat_id is not None else (user_id if chat_type == "private"
                                                    else -100 - user_id)
        return {"message_id": next(self._message_ids), "date": int(time.time()),
                "chat": {"id": chat, "type": chat_type}, "from": _user(user_id, language_code),
                "text": text}

    def _push(self, update: dict[str, Any]) -> None:
        with self._cond:
            self._updates.append({"update_id": next(self._update_ids), **update})
            self._cond.notify_all()

    def _updates_after(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        wait = min(float(params.get("timeout") or 0), MAX_POLL_S)
        deadline = time.monotonic() + wait
        with self._cond:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
            while not self._updates and not self._closing:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return list(self._updates[:100])

    def answer(self, method: str, params: dict[str, Any]) -> Any:
        """The Bot API result of one call, recorded with it (getUpdates is not recorded)."""
        if method == "getUpdates":
            return self._updates_after(params)
        result: Any = True  # deleteWebhook, sendChatAction, answerCallbackQuery, ...
        if method == "getMe":
            result = {**_bot(), "can_join_groups": False, "can_read_all_group_messages": False,
                      "supports_inline_queries": False}
        elif method == "getFile":
            file_id = str(params.get("file_id", ""))
            result = {"file_id": file_id, "file_unique_id": f"u-{file_id}",
                      "file_size": len(self.files.get(file_id, b"")),
                      "file_path": f"files/{file_id}"}
        elif method in ("sendMessage", "editMessageText", "editMessageReplyMarkup"):
            result = self._sent_message(method, params)
        with self._cond:
            self.calls.append(Call(method, params, result, time.monotonic()))
            self._cond.notify_all()
        return result

    def _sent_message(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message_id = (next(self._message_ids) if method == "sendMessage"
                      else int(params.get("message_id", 0)))
        message: dict[str, Any] = {
            "message_id": message_id, "date": int(time.time()), "from": _bot(),
            "chat": {"id": int(params.get("chat_id", 0)), "type": "private"},
            "text": str(params.get("text", "card"))}
        if params.get("reply_markup"):
            message["reply_markup"] = params["reply_markup"]
        return message


def _user(user_id: int, language_code: str | None) -> dict[str, Any]:
    user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
    if language_code:
        user["language_code"] = language_code
    return user


def _bot() -> dict[str, Any]:
    return {"id": BOT_ID, "is_bot": True, "first_name": "Metnos", "username": BOT_USERNAME}


def _decode(raw: bytes, content_type: str) -> dict[str, Any]:
    if not raw:
        return {}
    if content_type.startswith("application/json"):
        data: dict[str, Any] = json.loads(raw)
        return data
    params: dict[str, Any] = {}
    for key, value in parse_qsl(raw.decode("utf-8"), keep_blank_values=True):
        params[key] = _maybe_json(value)
    return params


def _maybe_json(value: str) -> Any:
    if value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _handler_for(server: FakeTelegram) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            parts = self.path.strip("/").split("/")
            if len(parts) == 4 and parts[:1] == ["file"] and parts[2] == "files":
                self._send_file(server.files.get(parts[3]))
                return
            if len(parts) != 2 or not parts[0].startswith("bot"):
                self._send(404, {"ok": False, "error_code": 404, "description": "Not Found"})
                return
            params = _decode(raw, self.headers.get("Content-Type", ""))
            self._send(200, {"ok": True, "result": server.answer(parts[1], params)})

        do_GET = do_POST  # noqa: N815 - stdlib name

        def _send_file(self, data: bytes | None) -> None:
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the bot gave up on a long poll (it is stopping)

    return Handler
