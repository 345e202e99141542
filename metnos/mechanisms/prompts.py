"""Layer 1 of the languages (SPEC §9.1): prompts as Jinja2 templates, `prompts/<lang>/<role>.j2`.

One loader, `get(role, lang, **vars)`, rendering in a `SandboxedEnvironment` with
`StrictUndefined`: a missing variable is an error, never an empty string in a prompt.

The folder is `get_settings().resources_root / "prompts"`, read at each call. Fallback order:
the asked language (a BCP-47 tag reduced to its base language, `it-CH` → `it`), the role's
source language (the entry of `prompts/lang_state.json` whose `source_hash` is null, else
`settings.i18n.source_lang`), then `en`. A translation whose skeleton (variables, attribute
paths, blocks, control shape: `metnos.ground.i18n.skeleton`) differs from the source's file is not
served. Each fallback logs `prompt.lang_fallback` with role, asked, served and a reason:
`missing` (no file), `skeleton` (skeleton differs, or the file does not parse) or `invalid`
(the tag is not a language).

Files are read on every call (they are small) and compiled templates are cached by path and
content hash, so an edit applies without a restart.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from metnos.ground.errors import ConfigError
from metnos.ground.i18n import tags
from metnos.ground.i18n.skeleton import (
    PromptTemplateError,
    Skeleton,
    compare,
    environment,
    parse,
    skeleton_of,
)
from metnos.ground.settings import get_settings

log = logging.getLogger(__name__)

FALLBACK_LANG = "en"
STATE_FILE = "lang_state.json"
_ROLE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_CACHE_MAX = 128

__all__ = ["PromptNotFoundError", "PromptTemplateError", "Served", "get", "resolve", "roles",
           "prompt_languages", "languages", "prompt_path", "pending_path", "prompts_dir",
           "source_lang"]


class PromptNotFoundError(ConfigError, LookupError):
    """No language has the prompt `role` (or the name is not a role name)."""

    key = "ERR_PROMPT_ROLE_MISSING"


@dataclass(frozen=True)
class _Compiled:
    template: jinja2.Template
    skeleton: Skeleton


@dataclass(frozen=True)
class Served:
    """The template `get` renders: the language actually served and its file."""

    role: str
    lang: str
    path: Path
    template: jinja2.Template


_compiled: dict[tuple[str, str], _Compiled] = {}


def prompts_dir() -> Path:
    return get_settings().resources_root / "prompts"


def prompt_path(role: str, lang: str) -> Path:
    return prompts_dir() / lang / f"{role}.j2"


def pending_path(role: str, lang: str) -> Path:
    """Where the sweep writes a translation candidate awaiting review."""
    return prompts_dir() / lang / "_pending" / f"{role}.j2.candidate"


def prompt_languages() -> list[str]:
    """Languages with a prompts folder (names starting with `_` or `.` are not languages)."""
    root = prompts_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name[0] not in "_.")


languages = prompt_languages


def roles(lang: str | None = None) -> list[str]:
    """Roles with a template in `lang`, or in any language when None."""
    langs = [lang] if lang is not None else prompt_languages()
    found = {p.stem for code in langs for p in (prompts_dir() / code).glob("*.j2")}
    return sorted(r for r in found if _ROLE.match(r))


def source_lang(role: str) -> str:
    """The role's source language: recorded in `lang_state.json`, else the settings'."""
    default = _base(get_settings().i18n.source_lang) or FALLBACK_LANG
    entries = _state().get(role)
    if not isinstance(entries, dict):
        return default
    sources = sorted(code for code, entry in entries.items()
                     if isinstance(entry, dict) and entry.get("source_hash") is None)
    if not sources:
        return default
    return default if default in sources else sources[0]


def get(role: str, lang: str, **vars: Any) -> str:
    """Render the prompt `role` in `lang` (or its fallback, see the module doc)."""
    return resolve(role, lang).template.render(**vars)


def resolve(role: str, lang: str) -> Served:
    """The template `get` would render. PromptNotFoundError when no language has the role;
    PromptTemplateError when the only files there are do not parse."""
    if not isinstance(role, str) or not _ROLE.match(role):
        raise PromptNotFoundError(role=str(role), lang=str(lang))
    asked = _base(lang)
    first_reason = None if asked else "invalid"
    source = source_lang(role)
    error: PromptTemplateError | None = None
    for code in dict.fromkeys(c for c in (asked, source, FALLBACK_LANG) if c):
        try:
            served, reason = _servable(role, code, source)
        except PromptTemplateError as exc:
            log.warning("prompt.invalid role=%s lang=%s detail=%s",
                        role, code, exc.vars.get("detail"))
            served, reason, error = None, "skeleton", error or exc
        if served is not None:
            if code != asked:
                _log_fallback(role, lang, code, first_reason or "missing")
            return served
        first_reason = first_reason or reason
    if error is not None:
        raise error
    raise PromptNotFoundError(role=role, lang=str(lang))


def _servable(role: str, code: str, source: str) -> tuple[Served | None, str]:
    """The template of `role` in `code` if it may be served, else (None, reason)."""
    path = prompt_path(role, code)
    compiled = _load(path, role, code)
    if compiled is None:
        return None, "missing"
    if code != source:
        reference = _reference(role, source)
        problems = compare(reference.skeleton, compiled.skeleton) if reference else []
        if problems:
            log.warning("prompt.skeleton_mismatch role=%s lang=%s source=%s problems=%s",
                        role, code, source, "; ".join(p.detail for p in problems))
            return None, "skeleton"
    return Served(role, code, path, compiled.template), ""


def _reference(role: str, source: str) -> _Compiled | None:
    """The source language's compiled file, None when it is missing or broken."""
    try:
        return _load(prompt_path(role, source), role, source)
    except PromptTemplateError:
        return None


def _load(path: Path, role: str, lang: str) -> _Compiled | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    key = (str(path), hashlib.sha256(text.encode("utf-8")).hexdigest())
    found = _compiled.get(key)
    if found is None:
        ast = parse(text, role=role, lang=lang)
        found = _Compiled(environment().from_string(ast), skeleton_of(ast))
        if len(_compiled) >= _CACHE_MAX:
            _compiled.clear()
        _compiled[key] = found
    return found


def _state() -> dict[str, Any]:
    path = prompts_dir() / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("prompt.lang_state_unreadable path=%s error=%s", path, exc)
        return {}
    state = data.get("lang_state") if isinstance(data, dict) else None
    return state if isinstance(state, dict) else {}


def _base(tag: str | None) -> str | None:
    """The base language of a tag (`pt-BR` → `pt`), None when the tag is not a language."""
    if not isinstance(tag, str):
        return None
    try:
        return tags.base_language(tag)
    except tags.LanguageTagError:
        return None


def _log_fallback(role: str, asked: str, served: str, reason: str) -> None:
    log.info("prompt.lang_fallback role=%s asked=%s served=%s reason=%s",
             role, asked, served, reason,
             extra={"event": "prompt.lang_fallback", "role": role, "asked": asked,
                    "served": served, "reason": reason})
