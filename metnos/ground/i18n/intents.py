"""The soft/hard language intents (SPEC §9.7, runbook `i18n-intents-runbook.pt`).

- **Communication** is a *soft* intent: the language Metnos replies in. `auto-user-profile`
  (the default) follows the session's interaction language; a tag pins it. It yields to
  explicit instructions (the planner prompt says so).
- **Artifacts** are a *hard* intent: the language of files Metnos writes. The default
  `preserve-existing-or-user-language` keeps an existing file's language and writes new files
  in the user's (the session's) language; `preserve-existing` only protects existing files; a
  tag fixes the language. The global policy covers prose (Markdown, text, reStructuredText,
  HTML, files without an extension); code, data and logs are technical artifacts that no
  language governs unless a rule selects them. Ordered rules (`path_prefix` and/or
  `extensions`) override the global policy: the first rule that matches wins,
  deterministically. Translations are opt-in (`generate_translations` with
  `translation_targets`), never inferred from the conversation.

Everything here is plain, deterministic code over `I18nSettings`: no LLM, no I/O except
`audit_policy`, which writes the one summary line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol

from metnos.ground.i18n.tags import LanguageTagError, base_language

if TYPE_CHECKING:
    from metnos.ground.settings import I18nSettings, Settings
    from metnos.ground.settings.intents import ArtifactRule


class AuditLine(Protocol):
    """Where `audit_policy` writes (`metnos.mechanisms.audit.AuditLog`; i18n sits below the
    audit)."""

    def append(self, **fields: Any) -> object: ...


AUTO_USER_PROFILE = "auto-user-profile"
PRESERVE_OR_USER = "preserve-existing-or-user-language"
PRESERVE = "preserve-existing"
AUDIT_ACTION = "i18n.intent_policy"

Basis = Literal["existing", "session", "configured", "none", "technical"]
# files the global policy governs; anything else (code, data, logs) only when a rule says so
PROSE_EXTENSIONS = frozenset({"", ".md", ".markdown", ".mdx", ".txt", ".text", ".rst",
                              ".adoc", ".org", ".html", ".htm", ".tex"})


@dataclass(frozen=True)
class ArtifactIntent:
    """What the artifact intent says about one file.

    `language` is the language the file must be written in (None: no constraint, e.g. a new
    file under `preserve-existing`); `basis` says where it came from; `rule_id` names the rule
    that matched (None: the global policy).
    """

    path: str
    language: str | None
    policy: str
    intent: Literal["soft", "hard"]
    basis: Basis
    rule_id: str | None = None
    generate_translations: bool = False
    translation_targets: tuple[str, ...] = ()
    existing_language: str | None = None

    def accepts(self, lang: str) -> bool:
        """True when writing the file in `lang` keeps the intent (same language, a soft
        intent, no constraint, or a translation this policy opted into). An existing file
        is never rewritten in another language: an opted-in translation is a separate file
        (runbook: "separate or clearly marked")."""
        if self.language is None or self.intent == "soft" or same_language(lang, self.language):
            return True
        return self.existing_language is None and self.translation_allowed(lang)

    def translation_allowed(self, lang: str) -> bool:
        """Opted in (`generate_translations`) and `lang` among the targets (no targets: the
        task decides the target)."""
        if not self.generate_translations:
            return False
        return not self.translation_targets or any(
            same_language(lang, target) for target in self.translation_targets)


def same_language(a: str, b: str) -> bool:
    """`pt-BR` and `pt` are the same language here; malformed tags compare as written."""
    return _base(a) == _base(b)


def _base(tag: str) -> str:
    try:
        return base_language(tag)
    except LanguageTagError:
        return tag.strip().lower()


# -- rules ---------------------------------------------------------------------------------
def _relative(path: str) -> PurePosixPath:
    return PurePosixPath(path.replace("\\", "/").lstrip("/").removeprefix("./"))


def rule_matches(rule: ArtifactRule, path: str) -> bool:
    """A rule selects a file by `path_prefix` (whole path components: `docs/api` covers
    `docs/api/x.md`, not `docs/apix.md`) and/or by `extensions` (`.md` or `md`, any case);
    when it gives both, both must hold."""
    rel = _relative(path)
    if rule.path_prefix:
        prefix = _relative(rule.path_prefix.rstrip("/"))
        if rel != prefix and prefix not in rel.parents:
            return False
    if rule.extensions:
        name = rel.name.lower()
        wanted = ("." + ext.lower().lstrip(".") for ext in rule.extensions)
        if not any(name.endswith(ext) and name != ext for ext in wanted):
            return False
    return True


def is_prose(path: str) -> bool:
    """A file people read as text (`notes.md`, `README`), by its extension."""
    return _relative(path).suffix.lower() in PROSE_EXTENSIONS


def matching_rule(path: str, rules: tuple[ArtifactRule, ...]) -> ArtifactRule | None:
    """The first rule, in the configured order, that selects `path`."""
    return next((rule for rule in rules if rule_matches(rule, path)), None)


def artifact_intent(path: str, session_lang: str, settings: I18nSettings,
                    existing_language: str | None = None) -> ArtifactIntent:
    """The language `path` (workspace-relative) must be written in.

    `settings` is the `i18n` settings group; `existing_language` the detected language of the
    file as it is now (None: a new file, or one too short to tell).
    """
    artifacts = settings.artifacts
    rule = matching_rule(path, artifacts.rules)
    policy = rule.language if rule else artifacts.language
    language, basis = _resolve(policy, session_lang, existing_language)
    if rule is None and not is_prose(path):
        language, basis = None, "technical"
    return ArtifactIntent(
        path=path, language=language, policy=policy,
        intent=rule.intent if rule else artifacts.intent, basis=basis,
        rule_id=rule.id if rule else None, existing_language=existing_language,
        generate_translations=(rule or artifacts).generate_translations,
        translation_targets=(rule or artifacts).translation_targets)


def _resolve(policy: str, session_lang: str,
             existing: str | None) -> tuple[str | None, Basis]:
    if policy == PRESERVE_OR_USER:
        return (existing, "existing") if existing else (session_lang, "session")
    if policy == PRESERVE:
        return (existing, "existing") if existing else (None, "none")
    return policy, "configured"


# -- communication -------------------------------------------------------------------------
def communication_language(settings: I18nSettings, session_lang: str) -> str:
    """The reply language: the session's under `auto-user-profile`, else the configured tag."""
    configured = settings.communication.language
    return session_lang if configured == AUTO_USER_PROFILE else configured


def display_name(tag: str, in_lang: str | None = None) -> str:
    """The language's name (CLDR, Babel) in `in_lang` (default: in itself): `it` → `italiano`,
    `pt-BR` → `português (Brasil)`; the tag itself when Babel does not know it."""
    from babel import Locale, UnknownLocaleError

    try:
        name = Locale.parse(tag.replace("_", "-"), sep="-").get_display_name(
            Locale.parse((in_lang or tag).replace("_", "-"), sep="-"))
    except (UnknownLocaleError, ValueError, TypeError):
        return tag
    return name or tag


def planner_vars(settings: I18nSettings, session_lang: str) -> dict[str, Any]:
    """The variables of the planner template's `{% block language %}`."""
    comm = communication_language(settings, session_lang)
    artifacts = settings.artifacts
    return {
        "comm_language": display_name(comm),
        "artifact_policy": artifacts.language,
        "translations": artifacts.generate_translations,
        "artifact_rules": list(artifacts.rules),
    }


# -- the policy summary ----------------------------------------------------------------------
def summary(settings: I18nSettings, comm_lang: str) -> str:
    """`comm=it/soft artifact=preserve-existing-or-user-language/hard translations=off rules=0`"""
    comm, artifacts = settings.communication, settings.artifacts
    translations = "on" if artifacts.generate_translations else "off"
    return (f"comm={comm_lang}/{comm.intent} artifact={artifacts.language}/{artifacts.intent} "
            f"translations={translations} rules={len(artifacts.rules)}")


def audit_policy(audit: AuditLine, settings: Settings) -> str:
    """Write the intent policy in force as one audit line (`i18n.intent_policy`); at start-up.

    Under `auto-user-profile` the summary names the process language (each session then
    speaks its own interaction language). Returns the summary.
    """
    line = summary(settings.i18n, communication_language(settings.i18n, settings.lang))
    if not settings.i18n.intents_enabled:
        line += " enabled=false"
    audit.append(sender="metnos", channel="system", action=AUDIT_ACTION, decision="info",
                 reason=line, outcome="done")
    return line
