"""The activity log in plain words: what happened to the person's things (issue 27).

Each audit line gets a `text` a family member reads ("You signed in on the web.", "I moved
compiti.md to the trash.", "You said no: I did not delete compiti.md. Nothing changed."); the
raw line (action, decision, outcome) stays beside it for the owner's details.

A step of an executor speaks with the executor's own sentences (`metnos.ground.i18n.phrases`),
filled from what the step left: the result of a done step (`TurnStep.result`, by its audit line),
the arguments of an approval it waited for. Any other line reads `ACTIVITY_<ACTION>_<OUTCOME>`,
then `ACTIVITY_<ACTION>` (the action's name upper-cased, dots and dashes as `_`: `web.login` →
`ACTIVITY_WEB_LOGIN`), then the same for its family (the part before the first `.`, `:` or
`/`: `evolution.fuse` → `ACTIVITY_EVOLUTION`), then `ACTIVITY_GENERIC`: never the event's
internal name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep
from metnos.ground.i18n import phrases
from metnos.mechanisms.approvals.card import action_sentence, fill
from metnos.mechanisms.approvals.models import Approval

_NOT_WORD = re.compile(r"[^A-Z0-9]+")
DENIED = "MSG_APPROVAL_DENIED"


def plain_lines(engine: Engine, lines: Sequence[Mapping[str, Any]], executors: set[str],
                lang: str) -> list[dict[str, Any]]:
    """`lines` (audit lines, as read) each with its `text` in `lang`; `executors`: the names
    of the executors (a line about one is a step)."""
    steps, asked = _context(engine, lines, executors)
    return [{**line, "text": line_text(line, executors, steps, asked, lang)} for line in lines]


def line_text(line: Mapping[str, Any], executors: set[str],
              steps: Mapping[int, Mapping[str, Any]], asked: Mapping[str, Approval],
              lang: str) -> str:
    action = str(line.get("action") or "")
    if action in executors:
        return _step_text(line, action, steps, asked, lang)
    values = {k: phrases.quoted(str(v)) for k, v in line.items()
              if isinstance(v, str | int) and v != ""}
    base = "ACTIVITY_" + _NOT_WORD.sub("_", action.upper()).strip("_")
    family = "ACTIVITY_" + _NOT_WORD.sub("_", re.split(r"[.:/]", action)[0].upper()).strip("_")
    outcome = _NOT_WORD.sub("_", str(line.get("outcome") or "").upper()).strip("_")
    for key in (f"{base}_{outcome}", base, f"{family}_{outcome}", family):
        text = fill(key, lang, values)
        if text is not None:
            return text
    return i18n.get("ACTIVITY_GENERIC", lang)


def _step_text(line: Mapping[str, Any], executor: str, steps: Mapping[int, Mapping[str, Any]],
               asked: Mapping[str, Approval], lang: str) -> str:
    approval = asked.get(str(line.get("approval_id") or ""))
    args: dict[str, Any] = dict(approval.args or {}) if approval is not None else {}
    decision, outcome = line.get("decision"), line.get("outcome")
    if decision == "ask":
        return i18n.get("ACTIVITY_STEP_ASKED", lang,
                        action=action_sentence(executor, args, lang))
    if line.get("reason") == DENIED:
        return phrases.denied(executor, args, lang)
    if decision == "deny":
        return i18n.get("ACTIVITY_STEP_REFUSED", lang, what=phrases.asked(executor, lang))
    if outcome == "done":
        return phrases.done(executor, {**args, **steps.get(int(line.get("seq") or 0), {})},
                            lang)
    return i18n.get("ACTIVITY_STEP_FAILED", lang, what=phrases.asked(executor, lang))


def _context(engine: Engine, lines: Sequence[Mapping[str, Any]], executors: set[str]
             ) -> tuple[dict[int, dict[str, Any]], dict[str, Approval]]:
    """The results of the done steps (by audit seq) and the approvals the lines name."""
    ran = [int(ln["seq"]) for ln in lines
           if ln.get("action") in executors and ln.get("outcome") == "done" and ln.get("seq")]
    ids = sorted({str(ln["approval_id"]) for ln in lines if ln.get("approval_id")})
    with db_session(engine) as db:
        rows = db.exec(select(TurnStep).where(col(TurnStep.audit_seq).in_(ran))).all() \
            if ran else []
        found = db.exec(select(Approval).where(col(Approval.id).in_(ids))).all() if ids else []
    steps = {int(r.audit_seq): _scalars(r.result or {}) for r in rows if r.audit_seq}
    return steps, {a.id: a for a in found}


def _scalars(result: Mapping[str, Any]) -> dict[str, Any]:
    """The values of a result a sentence may name (each is quoted short when it does)."""
    return {k: v for k, v in result.items() if isinstance(v, str | int | list)}
