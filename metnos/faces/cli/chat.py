"""`metnos chat`: the CLI channel, a client of the running instance's gateway (SPEC §11).

A message opens a turn (`POST /api/turns?wait=false`), then the CLI follows the turn's events
(`GET /api/turns/{id}/events`): a status line on stderr while it plans and runs, the model's
text on stdout as it streams (`delta` events), an approval card with an inline question when a
step needs the owner's yes (answered through `POST /api/approvals/{id}`), and the reply: only
what was not streamed already, then what ran (the activity items), one per line. Without a
terminal on stdin (or with `--no-ask`) nothing is asked: the approval stays pending and the
CLI says how to decide it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from typing import Any

import typer

from metnos.faces.cli import _out as out
from metnos.faces.cli._client import TIMEOUT_S, ServerEvent, api_call, follow_events
from metnos.faces.cli._common import exit_with, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.cli.approvals import argument_lines
from metnos.faces.cli.notices import show_pending
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.escape import terminal_line
from metnos.ground.i18n import phrases
from metnos.ground.settings import Settings
from metnos.turns.actions import HANDLE_CHARS, item_text, short_handles, undoable


def send(settings: Settings, text: str, session_id: str | None,
         lang: str | None, *, wait: bool = True, ask_all: bool = False) -> dict[str, Any]:
    """POST one message to the gateway; raises MetnosError with a message for the user.
    `wait=False` returns at once with the turn's id (then follow its events); `ask_all`
    makes the session ask before every change."""
    body: dict[str, Any] = {"text": text, "session_id": session_id, "lang": lang}
    if ask_all:
        body["ask_all"] = True
    return api_call(settings, "POST", "/api/turns", body=body, timeout_s=TIMEOUT_S,
                    params=None if wait else {"wait": "false"}, lang=lang)


def chat(
    message: str = typer.Argument(None, help=msg("CLI_CHAT_MESSAGE_HELP")),
    session: str = typer.Option(None, "--session", help=msg("CLI_CHAT_SESSION_HELP")),
    lang: str = typer.Option(None, "--lang", help=msg("CLI_CHAT_LANG_HELP")),
    as_json: bool = typer.Option(False, "--json", help=msg("CLI_JSON_HELP")),
    ask: bool | None = typer.Option(None, "--ask/--no-ask",
                                    help=msg("CLI_CHAT_ASK_HELP")),
    ask_all: bool = typer.Option(False, "--ask-all", help=msg("CLI_CHAT_ASK_ALL_HELP")),
    verbose: bool = typer.Option(False, "--verbose", help=msg("CLI_CHAT_VERBOSE_HELP")),
) -> None:
    lang = lang or cli_lang()  # the conversation's words: --lang, else the CLI's language
    settings = settings_or_exit(lang)
    view = _View(lang, as_json, sys.stdin.isatty() if ask is None else ask, ask_all=ask_all,
                 verbose=verbose)
    if not as_json:  # what Metnos sent while no chat was open (a reminder), once
        with contextlib.suppress(MetnosError):
            show_pending(settings, lang)
    if message is not None:
        try:
            _one(settings, message, session, view)
        except MetnosError as exc:
            view.progress("")
            exit_with(exc, lang)
        return
    echo(i18n.get("MSG_CHAT_WELCOME", lang))
    while True:
        try:
            line = input("> ").strip()
        except (EOFError, KeyboardInterrupt):
            echo("")
            return
        if line in {"/quit", "/exit", "/esci"}:
            return
        if not line:
            continue
        try:
            session = _one(settings, line, session, view) or session
        except MetnosError as exc:  # say it and keep the conversation going
            view.progress("")
            echo(i18n.message(exc, lang), err=True)


@dataclass
class _View:
    """What the owner sees: the status line (stderr), the streamed text, cards, questions
    and replies (stdout). The streamed text of the latest model call is kept, so the reply
    prints only what it adds."""

    lang: str | None
    as_json: bool
    ask: bool
    _status: bool = False  # a status line is shown on the terminal
    _open: bool = False  # stdout holds a line of streamed text without its newline
    _think: object = None  # the model call whose text is streaming
    _streamed: str = ""  # that call's text, as printed
    ask_all: bool = False  # --ask-all: the session asks before every change
    verbose: bool = False  # the details too: each step's and card's tool name

    def progress(self, text: str) -> None:
        """The status line: rewritten in place on a terminal, plain lines otherwise."""
        if text:
            self._end_line()
        if sys.stderr.isatty():
            if text or self._status:
                out.status(text)
            self._status = bool(text)
        elif text:
            out.echo_line(text, err=True)

    def say(self, text: str, *, card: bool = False) -> None:
        """A message for the person (stderr with --json, whose stdout is the turn's JSON).
        A `card` starts on a line of its own after a terminal reset, whatever streamed."""
        self.progress("")
        self._end_line()
        if card:
            out.reset(err=self.as_json)
        echo(text, err=self.as_json)

    def delta(self, text: str, think: object) -> None:
        """A piece of the model's text, printed as it comes (not with --json)."""
        if self.as_json or not text:
            return
        if think != self._think:  # a new model call: its text starts on a fresh line
            self.progress("")
            self._end_line()
            self._think, self._streamed = think, ""
        self._write(text)
        self._streamed += text

    def reply(self, text: str, activity: list[dict[str, Any]]) -> None:
        """The final text, minus what was streamed of it; then the activity items."""
        self.progress("")
        if not self.as_json:
            rest = unstreamed(text, self._streamed)
            if rest is None:  # the final text is not what streamed: shown whole, apart
                self._end_line()
                rest = text
            self._write(short_handles(rest, activity))
            self._end_line()
            for line in activity_lines(text, activity, self.lang):
                out.echo_line(line)
        self._think, self._streamed = None, ""

    def _write(self, text: str) -> None:
        """Outside text, escaped piece by piece: each piece loses every control character,
        so an ESC ending one cannot combine with the next."""
        shown = out.write(text)
        if shown:
            self._open = not shown.endswith("\n")

    def _end_line(self) -> None:
        if self._open:
            self._write("\n")


def _item_line(item: dict[str, Any], lang: str | None) -> str:
    """An activity item; a change that can be undone with its short handle, not a 32-character
    id (`metnos undo <handle>` takes any unique start of it)."""
    if not undoable([item]):
        return str(item["text"])
    return f"{item_text(item)} ({_handle_hint(item, lang)})"


def _handle_hint(item: dict[str, Any], lang: str | None) -> str:
    handle = str(item["action_id"])[:HANDLE_CHARS]
    return i18n.get("CLI_UNDO_HANDLE", lang or cli_lang(), handle=handle)


def activity_lines(reply: str, activity: list[dict[str, Any]],
                   lang: str | None = None) -> list[str]:
    """The activity items' lines still to show after `reply`: one the reply already says
    (the embedded planner's reply is often the done sentence itself) or an earlier item
    said is left out, so no sentence is printed twice; a change that can be undone keeps its
    short handle even then."""
    shown = " ".join(reply.split())
    lines: list[str] = []
    for item in activity:
        text = str(item.get("text") or "")
        flat = " ".join(text.split())
        if not flat:
            continue
        if flat not in shown:
            lines.append(_item_line(item, lang))
            shown += "\n" + flat
        elif undoable([item]) and str(item["action_id"])[:HANDLE_CHARS] not in shown:
            lines.append(f"({_handle_hint(item, lang)})")
    return lines


def unstreamed(final: str, streamed: str) -> str | None:
    """What of `final` is still to print after `streamed` was ("" when all of it); None
    when `final` does not continue what streamed (it must then be printed whole)."""
    if final.startswith(streamed):
        return final[len(streamed):]
    if final.strip() == streamed.strip():
        return ""
    return None


def _one(settings: Settings, text: str, session: str | None, view: _View) -> str | None:
    data = send(settings, text, session, view.lang, wait=False, ask_all=view.ask_all)
    turn_id, session_id = str(data["turn_id"]), data.get("session_id")
    seen = _follow(settings, turn_id, session_id, view)
    view.progress("")
    if view.as_json:
        echo_json(api_call(settings, "GET", f"/api/turns/{turn_id}", lang=view.lang))
    elif not seen:
        echo(i18n.get("MSG_CHAT_STILL_RUNNING", view.lang, turn_id=turn_id))
    return session_id if isinstance(session_id, str) else None


def _follow(settings: Settings, turn_id: str, session_id: str | None, view: _View) -> bool:
    """Follow the turn until its end, answering approvals inline; False when it is left
    running (no reply in time, or an approval left pending)."""
    after, replied = 0, False
    while True:
        approval: dict[str, Any] | None = None
        deadline = time.monotonic() + TIMEOUT_S
        for event in follow_events(settings, turn_id, after=after, lang=view.lang):
            if event is None:  # a keep-alive
                if time.monotonic() > deadline:
                    return replied
                continue
            after, deadline = event.seq, time.monotonic() + TIMEOUT_S
            if event.kind == "approval":
                approval = event.data
                break  # the stream closes while the owner thinks; resumed by Last-Event-ID
            replied = _show(event, view) or replied
            if event.kind == "end":
                return True
        if approval is None:  # the stream closed without `end`
            return replied
        if not _decide(settings, approval, session_id, view):
            return True  # left pending: the hint said how to decide it


def _show(event: ServerEvent, view: _View) -> bool:
    """Show one progress event; True when it was the reply."""
    data, lang = event.data, view.lang
    if event.kind == "delta":
        view.delta(str(data.get("text") or ""), data.get("think"))
    elif event.kind == "reply":
        activity = [a for a in data.get("activity") or [] if isinstance(a, dict)]
        view.reply(str(data.get("text") or ""), activity)
        return True
    if event.kind == "step" and data.get("state") == "started":
        step = str(data.get("text") or "") or phrases.progress(str(data.get("executor")), lang)
        key = "MSG_CHAT_PROGRESS_STEP_TOOL" if view.verbose else "MSG_CHAT_PROGRESS_STEP"
        view.progress(i18n.get(key, lang, step=step, executor=data.get("executor")))
    elif event.kind == "status" and data.get("status") in _PROGRESS:
        view.progress(i18n.get(_PROGRESS[str(data["status"])], lang))
    return False


_PROGRESS = {"planning": "MSG_CHAT_PROGRESS_PLANNING", "running": "MSG_CHAT_PROGRESS_RUNNING",
             "awaiting_approval": "MSG_CHAT_PROGRESS_WAITING"}


def _decide(settings: Settings, approval: dict[str, Any], session_id: str | None,
            view: _View) -> bool:
    """Show the card and ask; the answer goes to the gateway. False: left pending."""
    approval_id = str(approval.get("approval_id", ""))
    view.say(_card(approval, view.lang, view.verbose), card=True)
    answer = _ask(view) if view.ask else None
    if answer is None:
        view.say(i18n.get("MSG_CHAT_APPROVAL_HINT", view.lang, approval_id=approval_id))
        return False
    try:
        api_call(settings, "POST", f"/api/approvals/{approval_id}", lang=view.lang,
                 body={"decision": answer, "session_id": session_id})
    except MetnosError as exc:  # expired or decided elsewhere meanwhile: the turn goes on
        view.say(i18n.message(exc, view.lang))
    return True


def _ask(view: _View) -> str | None:
    """"approve" or "deny" from one line of stdin; None at end of input."""
    out.reset(err=view.as_json)
    out.write(i18n.get("MSG_CHAT_APPROVE_PROMPT", view.lang) + " ", err=view.as_json)
    line = sys.stdin.readline()
    if not line or not sys.stdin.isatty():  # a terminal echoed the answer and its newline
        out.write("\n", err=view.as_json)
    if not line:
        return None
    yes = {w.strip().casefold() for w in i18n.get("MSG_CHAT_APPROVE_YES", view.lang).split(",")}
    return "approve" if line.strip().casefold() in yes else "deny"


def _card(approval: dict[str, Any], lang: str | None, verbose: bool = False) -> str:
    """What will happen: why it asks, the action in plain words (the tool's name with
    --verbose), its arguments, the files it touches. Each line is one row whatever its values
    hold (`terminal_line`): none can break or forge one."""
    from metnos.mechanisms.approvals.card import action_sentence

    card = approval.get("card") if isinstance(approval.get("card"), dict) else None
    executor, args = str(approval.get("executor")), dict(approval.get("args") or {})
    action = str(card["action"]) if card and card.get("action") else action_sentence(
        executor, args, i18n.normalise_lang(lang))
    why = card["why"] if card and card.get("why") else approval.get("why", "")
    lines = [i18n.get("MSG_CHAT_APPROVAL_TITLE", lang, why=why),
             i18n.get("MSG_CHAT_APPROVAL_ACTION", lang, action=action)]
    if verbose:
        lines.append(i18n.get("MSG_CHAT_APPROVAL_TOOL", lang, executor=executor))
    for name, value in sorted(args.items()):
        lines.extend(argument_lines(name, value, lang))  # a long one whole, with its length
    for path, state in sorted(dict(approval.get("files") or {}).items()):
        lines.append(i18n.get("MSG_CHAT_APPROVAL_FILE", lang, path=path, state=i18n.get(
            "MSG_CHAT_FILE_EXISTS" if state else "MSG_APPROVAL_FILE_MISSING", lang)))
    expires = str(approval.get("expires_at", ""))[:16].replace("T", " ")
    lines.append(i18n.get("MSG_CHAT_APPROVAL_ID", lang,
                          approval_id=approval.get("approval_id"), expires=expires))
    return "\n".join(terminal_line(line) for line in lines)
