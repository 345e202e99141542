"""The `wish` built-in tool (SPEC §7.2): the model says "from this step I wanted X, which no
executor does", and goes on to answer.

A host tool (`WishTool`, `metnos.turns.steps.HostTool`): a call named `wish` never reaches
the step checker or the sandbox: its `check` validates it (a malformed one is refused like
any unusable call, so the model may fix it), scrubs its `why` (known secrets redacted by
Law 2's scanner, then e-mail addresses, URLs, paths and file names, phone numbers and long
digit runs replaced by placeholders, cut to 160 characters), leaves one audit line (action
"wish") and returns a done outcome whose result is the stored wish.
`metnos.features.mnestoma.record` counts it as a proto-mnest when the turn closes.
Its descriptions come from the i18n catalog (`i18n/<lang>/mnestoma.toml`), in the session's
language; the kinds it offers are those the admitted manifests declare.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from metnos.features.mnestoma.record import WISH, invoked
from metnos.ground import i18n
from metnos.ground.db.models import TurnStep
from metnos.ground.errors import ModelRetryError
from metnos.mechanisms.audit import digest_args
from metnos.mechanisms.executors.registry import Registry
from metnos.mechanisms.llm.tools import PlanStep, ToolSpec
from metnos.turns.checker import refuse
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome
from metnos.turns.steps import Finished, Timed, recorded

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime

TOOL = WISH
CAPABILITY_RE = re.compile(r"^[a-z][a-z0-9_]{1,39}$")  # lower_snake_case, at most 40
MAX_WHY = 200
KEPT_WHY = 160
INVALID = "ERR_WISH_INVALID"
_FIELDS = ("capability", "why", "from_step", "have", "want")
# what a why must not carry, in the order it is replaced (a URL before the paths inside it)
_SCRUB: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE), "<url>"),
    (re.compile(r"[\w.%+-]+@[\w-]+(?:\.[\w-]+)+"), "<email>"),
    (re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|~[/\\]|/)[^\s,;:()\"']*"), "<path>"),
    (re.compile(r"\b[\w.-]+(?:[/\\][\w.-]+)+[/\\]?"), "<path>"),
    (re.compile(r"\b[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{1,4}\b"), "<file>"),
    (re.compile(r"\+?\(?\d[\d ()./-]{6,}\d"), "<phone>"),
    (re.compile(r"\d{5,}"), "<number>"),
)


def kinds(registry: Registry) -> list[str]:
    """The semantic kinds the admitted manifests declare (inputs, outputs, wishes)."""
    found: set[str] = set()
    for spec in registry:
        manifest = spec.manifest
        found.update(f.kind for f in manifest.inputs.values() if f.kind)
        found.update(f.kind for f in manifest.outputs.values() if f.kind)
        for wish in manifest.wishes.values():
            found.update((wish.have, wish.want))
    return sorted(found)


def tool_spec(registry: Registry, lang: str) -> ToolSpec:
    """The `wish` tool as the model sees it, described in `lang`."""
    def text(key: str) -> str:
        return i18n.get(key, lang)

    properties: dict[str, Any] = {
        "capability": {"type": "string", "pattern": CAPABILITY_RE.pattern, "maxLength": 40,
                       "description": text("TOOL_WISH_CAPABILITY")},
        "why": {"type": "string", "maxLength": MAX_WHY, "description": text("TOOL_WISH_WHY")},
        "from_step": {"type": "integer", "minimum": 1,
                      "description": text("TOOL_WISH_FROM_STEP")},
    }
    declared = kinds(registry)
    if declared:
        properties["have"] = {"type": "string", "enum": declared,
                              "description": text("TOOL_WISH_HAVE")}
        properties["want"] = {"type": "string", "enum": declared,
                              "description": text("TOOL_WISH_WANT")}
    return ToolSpec(name=TOOL, description=text("TOOL_WISH_DESCRIPTION"), parameters={
        "type": "object", "properties": properties, "required": ["capability", "why"],
        "additionalProperties": False})


def parse(args: dict[str, Any], declared: Sequence[str],
          trace: Sequence[TurnStep]) -> dict[str, Any]:
    """The wish as given (not yet scrubbed); ModelRetryError naming the field at fault.
    `from_step` names the step whose result showed the need: its executor is the wish's
    source, when it is a real executor's step that ran this turn."""
    for name in args:
        if name not in _FIELDS:
            raise ModelRetryError(INVALID, field=name)
    capability, why = args.get("capability"), args.get("why")
    if not isinstance(capability, str) or not CAPABILITY_RE.match(capability):
        raise ModelRetryError(INVALID, field="capability")
    if not isinstance(why, str) or not why.strip() or len(why) > MAX_WHY:
        raise ModelRetryError(INVALID, field="why")
    from_step = args.get("from_step")
    if from_step is not None and (isinstance(from_step, bool) or not isinstance(from_step, int)
                                  or from_step < 1):
        raise ModelRetryError(INVALID, field="from_step")
    wish: dict[str, Any] = {"capability": capability, "why": why, "from_step": from_step}
    for name in ("have", "want"):
        value = args.get(name)
        if value is not None and (not isinstance(value, str) or value not in declared):
            raise ModelRetryError(INVALID, field=name)
        wish[name] = value or ""
    source = next((s for s in trace if s.seq == from_step and invoked(s)), None)
    wish["src"] = source.executor if source is not None else ""
    return wish


def scrub(why: str, redact: Any = None) -> str:
    """`why`, short and free of personal data: secrets (through `redact`, Law 2's scanner),
    then addresses, URLs, paths, file names, phone numbers, long digit runs."""
    text = redact(why)[0] if redact is not None else why
    for pattern, placeholder in _SCRUB:
        text = pattern.sub(placeholder, text)
    text = " ".join(text.split())
    return text if len(text) <= KEPT_WHY else text[:KEPT_WHY - 1].rstrip() + "…"


class WishTool:
    """The `wish` tool as a host tool (`metnos.turns.steps.HostTool`)."""

    name = TOOL
    read_only = True  # a wish changes nothing
    outside_text = False  # Metnos's own words, never outside data

    def spec(self, registry: Registry, lang: str) -> ToolSpec:
        return tool_spec(registry, lang)

    def check(self, service: Runtime, ctx: TurnContext, step: PlanStep, *, seq: int,
              think: int, trace: Sequence[TurnStep]) -> CheckedStep:
        """A done outcome holding the stored wish, or a refusal of the malformed call (one
        audit line either way). Blocking."""
        checked = CheckedStep(step, None, args_digest=digest_args(step.args), seq=seq,
                              think=think)
        if step.error:
            checked.malformed = True
            return refuse(service, ctx, checked, step.error, {"executor": TOOL})
        try:
            wish = parse(step.args, kinds(service.registry), trace)
        except ModelRetryError as exc:
            checked.malformed = True
            return refuse(service, ctx, checked, exc.key, exc.vars)
        wish["why"] = scrub(wish["why"], service.guard.redact)
        audit_seq = service.record.audit_line(
            ctx, action=TOOL, decision="allow", outcome="done", args_digest=checked.args_digest,
            reason=f"capability={wish['capability']} src={wish['src'] or '-'}")
        checked.outcome = StepOutcome(TOOL, "done", result=wish, audit_seq=audit_seq)
        checked.carried_out = True
        return checked

    def finish(self, service: Runtime, ctx: TurnContext, checked: CheckedStep,
               timed: Timed, seen: list[int], warning: str | None) -> Finished:
        """Bookkeeping for the mnestoma, never shown: its step, no activity item; the model
        reads a short note, so it goes on and answers."""
        done = recorded(service, ctx, checked, timed, seen, warning, shown=False)
        if not checked.carried_out:
            return done
        capability = (timed[0].result or {}).get("capability", "")
        return replace(done, content={"status": "done", "result": i18n.get(
            "MSG_WISH_NOTED", ctx.lang, capability=capability)})
