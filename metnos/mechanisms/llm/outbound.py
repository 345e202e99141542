"""Law 2 on the model's traffic: no secret goes to the provider, none comes back to a surface.

`LLMPort.complete` is the one place every model call goes through (the planner and the agent
loop, the Tutor's composer, compaction, the mail classifier and summary, the synt, the
translator), so the scanner runs there, on both sides:
- the request: every message (system prompt with the workspace files, history, the user's or
  forwarded text, tool results) is redacted before it is sent;
- the reply: its text is redacted before the caller (and so any channel, the record, the
  Prefect UI) sees it. A streamed reply passes through a `HeldStream`: text that could be
  the start of a secret (the end of what arrived is the beginning of some needle) is held
  back until more text arrives, so a secret split across deltas is whole in the buffer when
  it is scanned, and no piece of it has left yet; ordinary text is handed on at once.
Tool-call arguments are left as the model wrote them: Law 2's check on a step refuses one
carrying a secret (`ERR_LAW_SECRET_EXFILTRATION`) before it can become an approval.

Each redaction leaves an `info` audit line naming the secrets (never their values) and a log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.audit import AuditLog, open_audit_log
from metnos.mechanisms.policy.secret_scan import SecretScanner

log = logging.getLogger(__name__)

REQUEST_ACTION = "llm.request"
REPLY_ACTION = "llm.reply"
REQUEST_REASON = "MSG_LAW_PROMPT_REDACTED"
REPLY_REASON = "MSG_LAW_REPLY_REDACTED"

OnDelta = Callable[[str], None]


class Outbound:
    """The scanner of one instance, applied to requests and replies, with its audit lines."""

    def __init__(self, scanner: SecretScanner, audit: AuditLog | Callable[[], AuditLog | None]
                 | None = None) -> None:
        self.scanner = scanner
        self._audit = audit
        self._lock = threading.Lock()

    @classmethod
    def for_instance(cls, settings: Settings, audit: AuditLog | None = None) -> Outbound:
        """The instance's secrets (as the step guard knows them); the audit log is opened on
        the first redaction when none is given."""
        scanner = SecretScanner.for_instance(settings, os.environ, home_dir=Path.home())
        return cls(scanner, audit if audit is not None else _opener(settings))

    @classmethod
    def default(cls) -> Outbound:
        """For a port built without one: the current settings' instance, else the generic
        patterns only (private key blocks)."""
        try:
            return cls.for_instance(get_settings())
        except Exception:  # no readable settings: still catch what any private key looks like
            log.warning("llm.outbound_default_patterns_only")
            return cls(SecretScanner([]))

    def request(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        redacted, names = self.scanner.redact(messages)
        if names:
            self._report(REQUEST_ACTION, REQUEST_REASON, names)
        return list(redacted)

    def reply(self, text: str | None, streamed: HeldStream | None = None) -> str | None:
        """The reply's text redacted; one audit line for what it and its stream held."""
        redacted, names = self.scanner.redact(text) if text else (text, [])
        seen = sorted({*names, *(streamed.names if streamed is not None else ())})
        if seen:
            self._report(REPLY_ACTION, REPLY_REASON, seen)
        return None if redacted is None else str(redacted)

    def stream(self, on_delta: OnDelta) -> HeldStream:
        return HeldStream(self, on_delta)

    def _report(self, action: str, reason: str, names: list[str]) -> None:
        named = ", ".join(names)
        log.warning("llm.secret_redacted action=%s names=%s", action, named)
        try:
            audit = self._audit_log()
            if audit is not None:
                audit.append(action=action, decision="info", reason=reason,
                             outcome=f"redacted: {named}")
        except Exception:  # the audit disk is gone: the redaction itself stands
            log.exception("llm.secret_redacted_unrecorded action=%s", action)

    def _audit_log(self) -> AuditLog | None:
        with self._lock:
            if self._audit is None or isinstance(self._audit, AuditLog):
                return self._audit
            self._audit = self._audit()
            return self._audit


class HeldStream:
    """Deltas on their way to a surface, redacted on a sliding window (see the module)."""

    def __init__(self, outbound: Outbound, on_delta: OnDelta) -> None:
        self.outbound = outbound
        self.on_delta = on_delta
        self._held = ""
        self._names: set[str] = set()

    def __call__(self, piece: str) -> None:
        text, names = self.outbound.scanner.redact(self._held + piece)
        self._names.update(names)
        text = str(text)
        cut = len(text) - self.outbound.scanner.partial_tail(text)
        self._held = text[cut:]
        if cut:
            self.on_delta(text[:cut])

    @property
    def names(self) -> set[str]:
        return set(self._names)

    def flush(self) -> None:
        """The end of the stream: what is held goes out (redacted)."""
        text, names = self.outbound.scanner.redact(self._held)
        self._names.update(names)
        self._held = ""
        if text:
            self.on_delta(str(text))


def _opener(settings: Settings) -> Callable[[], AuditLog | None]:
    def opened() -> AuditLog | None:
        with contextlib.suppress(Exception):
            return open_audit_log(settings)
        log.warning("llm.outbound_no_audit_log")
        return None
    return opened
