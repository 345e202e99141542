"""What Metnos has learned, in plain words: the top of the "What I remember" page (issue 27).

From the mnestoma's snapshot (`metnos.features.mnestoma.views.snapshot`): the heaviest hand-offs
become "When you look for files, you often open one next" (`WEB_LEARNED_HANDOFF`, each executor as
what a person asks of it: `metnos.ground.i18n.phrases.asked`), the most used executors "You often
ask me to …" (`WEB_LEARNED_OFTEN`), the missing capabilities a count of wishes. No tool's name: the
graph and its tables, a click further, keep those for the owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metnos.ground import i18n
from metnos.ground.i18n import phrases

MAX_HANDOFFS = 5
MAX_OFTEN = 3


def learned(view: Mapping[str, Any], lang: str) -> list[str]:
    """The sentences, most telling first; empty when nothing was learned yet."""
    lines: list[str] = []
    for mnest in list(view.get("mnests") or [])[:MAX_HANDOFFS]:
        first = phrases.asked(str(mnest["src"]), lang)
        then = phrases.asked(str(mnest["dst"]), lang)
        line = i18n.get("WEB_LEARNED_HANDOFF", lang, first=first, then=then)
        if first != then and line not in lines:
            lines.append(line)
    used = sorted((e for e in view.get("executors") or [] if e.get("invocations", 0) > 0),
                  key=lambda e: (-int(e["invocations"]), str(e["name"])))
    for executor in used[:MAX_OFTEN]:
        lines.append(i18n.get("WEB_LEARNED_OFTEN", lang, what=phrases.asked(
            str(executor["name"]), lang), count=int(executor["invocations"])))
    wishes = sum(int(p.get("count", 0)) for p in view.get("proto_mnests") or []
                 if p.get("status", "open") == "open")
    if wishes:
        lines.append(i18n.get("WEB_LEARNED_WISHES", lang, count=wishes))
    return lines
