"""Channel messages from Jinja2 templates per language: `channels/<lang>/<channel>/<name>.j2`
in the resources folder (the seed's layer 4, swept and reviewed like the prompts).

Rendered with `StrictUndefined` (a missing variable is an error, never an empty string in a
message) and autoescaping on: every value is escaped for the channel's HTML (Telegram's HTML
parse mode), so text from a user, a file or a model can never become markup. A language
without the template falls back to English.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from metnos.faces.channels.bidi import marked
from metnos.ground.i18n import normalise_lang
from metnos.ground.i18n.lexicon import resources_root

log = logging.getLogger(__name__)

CHANNELS_DIR = "channels"
FALLBACK_LANG = "en"


def templates_dir() -> Path:
    return resources_root() / CHANNELS_DIR


def _environment() -> jinja2.Environment:
    return _environment_for(templates_dir())


@lru_cache(maxsize=4)
def _environment_for(folder: Path) -> jinja2.Environment:
    """One environment per folder: Jinja reloads a template whose file changed on disk
    (`auto_reload`), so a reviewed translation shows without a restart."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=False)


def template_path(channel: str, name: str, lang: str) -> str:
    """The loader path served for `lang` (its own template, else the English one)."""
    code = normalise_lang(lang)
    own = f"{code}/{channel}/{name}.j2"
    if (templates_dir() / own).is_file():
        return own
    log.info("channel.template_fallback channel=%s name=%s lang=%s", channel, name, code)
    return f"{FALLBACK_LANG}/{channel}/{name}.j2"


def render(channel: str, name: str, lang: str, **values: Any) -> str:
    """The message `name` of `channel` in `lang`, values escaped, surrounding blanks trimmed;
    a right-to-left language's lines carry their direction mark (`metnos.faces.channels.bidi`)."""
    template = _environment().get_template(template_path(channel, name, lang))
    return marked(template.render(**values).strip(), lang)
