"""The languages of a turn (SPEC §9.6, §9.7), kept apart:

- the process language `METNOS_LANG` (`settings.lang`), fixed at boot: the last fallback;
- the request's `ui_locale` (the `lang` a client sends, else its Accept-Language): the chrome
  of that one request (error messages), and the language of a session it creates;
- the session's persisted `interaction_language`: set once at creation, never rewritten by a
  later request; a legacy session without one gets the workspace language, pinned once;
- the turn's language (`turn_language`): the session's, unless the message is clearly written
  in another active language — the communication intent is soft (SPEC §9.7), so that one
  turn is answered in the message's language and the session keeps its own;
- the workspace language of documents (`settings.workspace_language`).

And the hard artifact intent as a policy check: a step that would write a file in another
language than the intent requires needs the owner's approval (never a silent denial).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metnos.ground.i18n import intents
from metnos.ground.i18n.tags import match_language
from metnos.ground.settings import Settings
from metnos.ground.system_lang import Lang, lang_code
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.policy.decide import Decision

log = logging.getLogger(__name__)

TEXT_INPUTS = ("content",)  # string inputs holding the text an executor writes into a file
MAX_EXISTING_BYTES = 64 * 1024  # read at most this much of an existing file to tell its language
MAX_ACCEPT_LANGUAGE = 512
AUDIT_ACTION = "i18n.artifact_intent"
COMMUNICATION_ACTION = "i18n.communication"
# When a message is "clearly written" in a language (measured with lingua on 90 household
# sentences, it and en, tests/turns/test_language.py): one or two words ("ok", "ciao",
# "hello") say nothing — "hello" reads as Italian; at 3+ words and 12+ letters, a top
# confidence of 0.95 gave no sentence the wrong language, while 0.9 read "buy parmigiano and
# mozzarella" as Italian. Below the floor the turn keeps the session's language.
MIN_WORDS = 3
MIN_LETTERS = 12
CONFIDENCE_FLOOR = 0.95
MAX_MESSAGE_CHARS = 2000  # the start of a long message is enough to tell its language


# -- locales ---------------------------------------------------------------------------------
def accept_languages(header: str | None) -> list[str]:
    """The tags of an Accept-Language header, most wanted first (`q=0` and `*` dropped)."""
    weighted: list[tuple[float, int, str]] = []
    for index, part in enumerate((header or "")[:MAX_ACCEPT_LANGUAGE].split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if tag.strip() and tag.strip() != "*" and quality > 0:
            weighted.append((-quality, index, tag.strip()))
    return [tag for _, _, tag in sorted(weighted)]


def ui_locale(lang: str | None, accept_language: str | None, settings: Settings) -> Lang:
    """The request's UI locale among the active languages: the client's `lang`, else its
    Accept-Language, else METNOS_LANG (else the first active language). A face calls it once,
    where the request enters, and hands the turn this `Lang`."""
    active = settings.active_languages
    for tag in (lang, *accept_languages(accept_language), settings.lang):
        found = match_language(tag, active)
        if found:
            return found
    return active[0]


def legacy_language(settings: Settings) -> Lang:
    """The language pinned on a session that has none: the workspace language (ADR: never the
    browser's), as an active language."""
    active = settings.active_languages
    return (match_language(settings.workspace_language, active)
            or match_language(settings.lang, active) or active[0])


# -- the soft communication intent ----------------------------------------------------------
@dataclass(frozen=True)
class TurnLanguage:
    """The language a turn speaks: `lang`; `detected` with its `confidence` when the message
    itself chose it (None: the session's language holds)."""

    lang: Lang
    detected: Lang | None = None
    confidence: float = 0.0

    def audit_reason(self, session_lang: Lang) -> str:
        return (f"comm={self.lang}/soft basis=message session={session_lang} "
                f"confidence={self.confidence:.2f}")


def turn_language(text: str, session_lang: Lang, settings: Settings) -> TurnLanguage:
    """The turn's language: the message's when it is clearly another active language than the
    session's (and the communication intent is soft and follows the user), else the session's."""
    if not follows_message(settings):
        return TurnLanguage(session_lang)
    found, confidence = message_language(text, settings.active_languages)
    if found is None or found == session_lang:
        return TurnLanguage(session_lang)
    return TurnLanguage(found, found, confidence)


def plan_language(plan_lang: str | None, text: str, session_lang: Lang,
                  settings: Settings) -> Lang:
    """The turn's language once the embedded planner understood `text` in `plan_lang` (the
    session's or another active language, as the planner's tag): that language under the soft
    intent when the message says enough (MIN_WORDS words: "ciao" or "ok" match Italian
    templates but are no evidence), else the session's."""
    if not plan_lang or not follows_message(settings):
        return session_lang
    from metnos.ground.i18n.lint import mask

    return lang_code(plan_lang) if len(mask(text).split()) >= MIN_WORDS else session_lang


def follows_message(settings: Settings) -> bool:
    """May a turn speak its message's language? Only under the soft communication intent that
    follows the user (`auto-user-profile`), with the language intents on."""
    comm = settings.i18n.communication
    return (settings.i18n.intents_enabled and comm.intent == "soft"
            and comm.language == intents.AUTO_USER_PROFILE)


def message_language(text: str, active: Sequence[Lang]) -> tuple[Lang | None, float]:
    """The active language `text` is clearly written in, with lingua's confidence; None for
    a message too short to tell (under MIN_WORDS words or MIN_LETTERS letters, code, paths
    and IDs not counted) or below CONFIDENCE_FLOOR."""
    from metnos.ground.i18n.lint import detect_language, mask

    prose = mask(text[:MAX_MESSAGE_CHARS])
    if len(active) < 2 or len(prose.split()) < MIN_WORDS:
        return None, 0.0
    try:
        found, confidence = detect_language(prose, list(active), min_letters=MIN_LETTERS)
    except ValueError:  # an active language lingua does not know
        return None, 0.0
    if found is None or confidence < CONFIDENCE_FLOOR:
        return None, confidence
    return lang_code(found), confidence  # the detector's code, as a `Lang`


# -- the hard artifact intent ----------------------------------------------------------------
@dataclass(frozen=True)
class ArtifactMismatch:
    """A write that would put `path` in `written` although the intent wants `intent.language`."""

    intent: intents.ArtifactIntent
    written: str
    confidence: float

    def decision(self, executor: str, lang: str) -> Decision:
        """The approval question, its languages named in the user's language `lang`."""
        expected = self.intent.language or ""
        vars: dict[str, Any] = {
            "executor": executor, "path": self.intent.path, "rule": self.intent.rule_id or "",
            "written": intents.display_name(self.written, lang),
            "expected": intents.display_name(expected, lang)}
        return Decision("ask", _ASK_KEYS[self._why()], vars)

    def audit_reason(self) -> str:
        i = self.intent
        return (f"path={i.path} expected={i.language} detected={self.written} "
                f"confidence={self.confidence:.2f} basis={i.basis} policy={i.policy} "
                f"rule={i.rule_id or '-'}")

    def _why(self) -> str:
        if self.intent.basis == "configured":
            return "rule" if self.intent.rule_id else "policy"
        return self.intent.basis


_ASK_KEYS = {
    "existing": "ASK_I18N_ARTIFACT_EXISTING",
    "session": "ASK_I18N_ARTIFACT_SESSION",
    "rule": "ASK_I18N_ARTIFACT_RULE",
    "policy": "ASK_I18N_ARTIFACT_POLICY",
}


def check_artifact(settings: Settings, session_lang: str, manifest: Manifest,
                   args: Mapping[str, Any]) -> ArtifactMismatch | None:
    """The first file this step would write against the hard artifact intent, if any.

    Only executors that write text into a path (`fs_write`'s `content`) are checked. Text too
    short or too mixed to tell (the detector says None) never raises a question.
    """
    if not settings.i18n.intents_enabled:
        return None
    text = next((args[name] for name in TEXT_INPUTS if isinstance(args.get(name), str)), None)
    if not text:
        return None
    for name, access in manifest.path_inputs().items():
        path = args.get(name)
        if access == "write" and isinstance(path, str):
            found = _check_one(settings, session_lang, path, text)
            if found is not None:
                return found
    return None


def _check_one(settings: Settings, session_lang: str, path: str,
               text: str) -> ArtifactMismatch | None:
    candidates = _candidates(settings, session_lang)
    existing = _existing_text(settings.workspace, path)
    existing_lang = _detect(existing, candidates, settings) if existing else None
    intent = intents.artifact_intent(path, session_lang, settings.i18n, existing_lang)
    if intent.language is None or intent.intent == "soft":
        return None
    written, confidence = _detect_scored(text, _candidates(settings, intent.language), settings)
    if written is None or intent.accepts(written):
        return None
    return ArtifactMismatch(intent, written, confidence)


def _candidates(settings: Settings, extra: str) -> list[str]:
    found: list[str] = list(settings.active_languages)
    base = extra.split("-")[0].lower()
    return found if base in found else [*found, base]


def _detect(text: str, candidates: Sequence[str], settings: Settings) -> str | None:
    return _detect_scored(text, candidates, settings)[0]


def _detect_scored(text: str, candidates: Sequence[str],
                   settings: Settings) -> tuple[str | None, float]:
    """The language of `text`, code, paths, URLs and IDs masked (`metnos.ground.i18n.lint`); None
    when too short, ambiguous, or among languages the detector does not know."""
    from metnos.ground.i18n.lint import detect_language

    try:
        return detect_language(text[: settings.i18n.lint_max_text_chars], list(candidates))
    except ValueError as exc:
        log.info("i18n.artifact_undetectable: %s", exc)
        return None, 0.0


def _existing_text(workspace: Path, rel: str) -> str | None:
    """The start of an existing regular text file of the workspace (None: new, not a regular
    file, unreadable, or not UTF-8 text)."""
    root = workspace.resolve()
    target = (root / rel).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        return None
    try:
        with target.open("rb") as fh:
            data = fh.read(MAX_EXISTING_BYTES)
    except OSError as exc:
        log.info("i18n.artifact_unreadable path=%s: %s", rel, exc)
        return None
    if b"\x00" in data:
        return None
    return data.decode("utf-8", errors="ignore")
