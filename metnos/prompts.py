"""Layer 1 of the languages: prompts as Jinja2 templates, `prompts/<lang>/<role>.j2`.

One loader, `get(role, lang, **vars)`, with `StrictUndefined`: a missing variable is an error,
never an empty string in a prompt. A language without the role falls back to the source
language (`en`) and logs `prompt.lang_fallback`.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

import jinja2

from metnos.paths import repo_path

log = logging.getLogger(__name__)

SOURCE_LANG = "en"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(repo_path("prompts"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def get(role: str, lang: str, **vars: Any) -> str:
    """Render the prompt `role` in `lang` (falling back to the source language)."""
    base = lang.replace("_", "-").split("-")[0].lower()
    try:
        template = _env().get_template(f"{base}/{role}.j2")
    except jinja2.TemplateNotFound:
        log.info("prompt.lang_fallback role=%s lang=%s source=%s", role, base, SOURCE_LANG)
        template = _env().get_template(f"{SOURCE_LANG}/{role}.j2")
    return template.render(**vars)
