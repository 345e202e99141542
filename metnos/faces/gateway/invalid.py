"""A refused request body in plain words (issue 12): pydantic's errors as i18n messages.

`problems(errors, lang)` turns each pydantic error into a `FieldProblem` (the field as the
client named it, an i18n key, its message in `lang`): "The message is empty." rather than
"body.text: String should have at least 1 character". The gateway answers the first one as
the error's `key`/`message` and all of them in `detail`, so a client can rely on the keys.

`body_lang(body, settings)` is the `lang` a refused body asked for, when it names an active
language: a 422 follows the request's `lang`, else its Accept-Language, else METNOS_LANG.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticCustomError

from metnos.ground import i18n
from metnos.ground.i18n.tags import match_language
from metnos.ground.settings import Settings, get_settings

MAX_PROBLEMS = 10
_SOURCES = ("body", "query", "path", "header", "cookie")
_TYPE_WORDS = {"string": "WORD_TYPE_TEXT", "int": "WORD_TYPE_INTEGER",
               "float": "WORD_TYPE_NUMBER", "decimal": "WORD_TYPE_NUMBER",
               "bool": "WORD_TYPE_BOOLEAN", "list": "WORD_TYPE_LIST", "tuple": "WORD_TYPE_LIST",
               "set": "WORD_TYPE_LIST", "dict": "WORD_TYPE_OBJECT", "model": "WORD_TYPE_OBJECT",
               "model_attributes": "WORD_TYPE_OBJECT", "dataclass": "WORD_TYPE_OBJECT"}
# pydantic error type -> (key, the ctx entry that holds the limit)
_BY_TYPE: dict[str, tuple[str, str | None]] = {
    "missing": ("ERR_FIELD_MISSING", None),
    "string_too_long": ("ERR_FIELD_TOO_LONG", "max_length"),
    "too_short": ("ERR_FIELD_TOO_FEW", "min_length"),
    "too_long": ("ERR_FIELD_TOO_MANY", "max_length"),
    "greater_than_equal": ("ERR_FIELD_TOO_SMALL", "ge"),
    "greater_than": ("ERR_FIELD_TOO_SMALL", "gt"),
    "less_than_equal": ("ERR_FIELD_TOO_BIG", "le"),
    "less_than": ("ERR_FIELD_TOO_BIG", "lt"),
    "extra_forbidden": ("ERR_FIELD_UNKNOWN", None),
    "message_empty": ("ERR_MESSAGE_EMPTY", None),
}
_QUOTED = re.compile(r"'([^']*)'")


@dataclass(frozen=True)
class FieldProblem:
    field: str
    key: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "key": self.key, "message": self.message}


def problems(errors: Sequence[Mapping[str, Any]], lang: str) -> list[FieldProblem]:
    """Each pydantic error (at most MAX_PROBLEMS) as a problem in plain words."""
    return [_problem(error, lang) for error in errors[:MAX_PROBLEMS]] or [
        FieldProblem("", "ERR_FIELD_INVALID", i18n.get("ERR_FIELD_INVALID", lang, field="?"))]


def body_lang(body: Any, settings: Settings) -> str | None:
    """The active language a refused JSON body names in `lang`, if any."""
    tag = body.get("lang") if isinstance(body, dict) else None
    return match_language(tag, settings.active_languages) if isinstance(tag, str) else None


# -- validators the request schemas share ---------------------------------------------------
def message_text(value: Any) -> Any:
    """A message of only blanks is an empty message (a `before` validator)."""
    if isinstance(value, str) and not value.strip():
        raise PydanticCustomError("message_empty", "the message is empty")
    return value


def active_lang(value: Any) -> Any:
    """A `lang` must name an active language (`it-CH` is Italian); else 422 naming them."""
    if isinstance(value, str):
        active = get_settings().active_languages
        if match_language(value, active) is None:
            raise PydanticCustomError("lang_unknown", "unknown language {value}",
                                      {"value": value[:35], "active": ", ".join(active)})
    return value


# -- internals -------------------------------------------------------------------------------
def _problem(error: Mapping[str, Any], lang: str) -> FieldProblem:
    kind = str(error.get("type", ""))
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    field = _field(error.get("loc", ()))
    key, vars = _key(kind, ctx, field, lang)
    return FieldProblem(field, key, i18n.get(key, lang, field=field or "?", **vars))


def _key(kind: str, ctx: Mapping[str, Any], field: str,
         lang: str) -> tuple[str, dict[str, Any]]:
    if kind == "missing" and not field:
        return "ERR_BODY_MISSING", {}
    if kind in ("json_invalid", "json_type"):
        return "ERR_BODY_NOT_JSON", {}
    if kind == "string_too_short":
        limit = ctx.get("min_length", 1)
        if limit == 1:
            return ("ERR_MESSAGE_EMPTY" if field == "text" else "ERR_FIELD_EMPTY"), {}
        return "ERR_FIELD_TOO_SHORT", {"limit": i18n.number(limit, lang)}
    if kind in ("literal_error", "enum"):
        return "ERR_FIELD_NOT_ONE_OF", {"expected": _choices(ctx.get("expected", ""))}
    if kind == "lang_unknown":
        return "ERR_LANG_UNKNOWN", {"value": ctx.get("value", ""), "active": ctx.get("active")}
    found = _BY_TYPE.get(kind)
    if found is not None:
        key, limit_name = found
        if limit_name is not None and limit_name in ctx:
            return key, {"limit": i18n.number(ctx[limit_name], lang)}
        return key, {}
    expected = _expected_type(kind)
    if expected is not None:
        return "ERR_FIELD_WRONG_TYPE", {"expected": i18n.get(expected, lang)}
    return "ERR_FIELD_INVALID", {}


def _field(loc: Iterable[Any]) -> str:
    """The field as the client wrote it: `text`, `forwarded[2]`, `wait` (no `body.`)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not out and part in _SOURCES:
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def _choices(expected: Any) -> str:
    """pydantic's "'approve' or 'deny'" as "approve, deny" (no English "or")."""
    found = _QUOTED.findall(str(expected))
    return ", ".join(found) if found else str(expected)


def _expected_type(kind: str) -> str | None:
    for suffix in ("_type", "_parsing"):
        if kind.endswith(suffix):
            return _TYPE_WORDS.get(kind.removesuffix(suffix), "WORD_TYPE_OBJECT")
    return None
