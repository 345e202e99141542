"""Right-to-left text on chat channels (issue: a third language, RTL readiness).

A Telegram client lays out each paragraph by its first strong character: an Arabic message
that starts with an emoji, a number, a command or a Latin name would run left to right. For a
language whose script runs right to left (CLDR, `metnos.ground.i18n.formatting.text_direction`)
every line gets a RIGHT-TO-LEFT MARK first, which sets the paragraph's direction without
showing anything; other languages are left as they are.
"""

from __future__ import annotations

from metnos.ground.i18n.formatting import text_direction

RLM = "\u200f"


def marked(text: str, lang: str) -> str:
    """`text` with each non-empty line opened by RLM when `lang` runs right to left."""
    if text_direction(lang) != "rtl":
        return text
    return "\n".join(RLM + line if line and not line.startswith(RLM) else line
                     for line in text.split("\n"))
