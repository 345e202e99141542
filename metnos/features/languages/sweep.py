"""The translation sweep (SPEC §9.4): stale and missing texts → candidates for review.

`find_work` is deterministic code over the latest-wins assessment: a resource in conflict is
skipped (a person decides), and a language that already has a candidate for the current
source text is skipped too, so a sweep stopped halfway is finished by the next run.
`translate` asks the LLM port (tier `wise`; `frontier` only when asked) and runs the checks
before anything is written: a candidate that breaks placeholders or the Jinja skeleton, or
that comes back unchanged, is rejected and never reaches review.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from metnos.features.languages.checks import (
    Problem,
    check_document,
    check_lexicon,
    check_message,
    check_prompt,
    check_prose,
    has_prose,
)
from metnos.features.languages.resources import Candidate, Layer
from metnos.features.languages.state import Assessment
from metnos.ground.errors import LLMError

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
TEXT_KINDS = ("prompt", "template", "lexicon", "document")  # a file's text, translated whole
_FENCE = re.compile(r"^\s*```[\w-]*\n(.*?)\n?```\s*$", re.DOTALL)


class Translator(Protocol):
    label: str

    async def translate(self, kind: str, source_lang: str, target_lang: str,
                        payload: str) -> str: ...


@dataclass(frozen=True)
class WorkItem:
    layer: str
    name: str
    lang: str
    source_lang: str
    source_hash: str
    source_value: Any


@dataclass
class SweepReport:
    written: list[tuple[str, str, str]] = field(default_factory=list)
    rejected: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    failed: list[tuple[str, str, str, str]] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[tuple[str, str, str]] = field(default_factory=list)
    up_to_date: int = 0

    def merge(self, other: SweepReport) -> None:
        self.written += other.written
        self.rejected += other.rejected
        self.failed += other.failed
        self.conflicts += other.conflicts
        self.dropped += other.dropped
        self.up_to_date += other.up_to_date

    def to_json(self) -> dict[str, Any]:
        return {"written": len(self.written), "rejected": len(self.rejected),
                "failed": len(self.failed), "conflicts": len(self.conflicts),
                "dropped": len(self.dropped), "up_to_date": self.up_to_date,
                "details": {"written": [list(w) for w in self.written],
                            "rejected": [list(r) for r in self.rejected],
                            "failed": [list(f) for f in self.failed],
                            "conflicts": [list(c) for c in self.conflicts],
                            "dropped": [list(d) for d in self.dropped]}}


def find_work(layer: Layer, *, names: Iterable[str] | None = None,
              langs: Sequence[str] | None = None, preferred_source: dict[str, str] | None = None,
              report: SweepReport | None = None) -> list[WorkItem]:
    """What `layer` needs translated now; conflicts are noted in `report`, never touched."""
    items: list[WorkItem] = []
    for name in names if names is not None else layer.resources():
        state = layer.assess(name)
        if state.conflict:
            if report is not None:
                report.conflicts.append((layer.name, name))
            continue
        if state.source is None or state.source_hash is None:
            continue  # no language has a text left: nothing to translate from
        todo = [lang for lang in state.needing_translation() if not langs or lang in langs]
        if not todo and report is not None:
            report.up_to_date += 1
        _drop_obsolete(layer, name, state, todo, report)
        for lang in todo:
            existing = layer.candidate(name, lang)
            if existing is not None and existing.source_hash == state.source_hash:
                continue
            source = _translate_from(state.source, state.status, (preferred_source or {}).get(lang))
            items.append(WorkItem(layer.name, name, lang, source, state.source_hash,
                                  layer.text(name, source)))
    return items


def _drop_obsolete(layer: Layer, name: str, state: Assessment, todo: list[str],
                   report: SweepReport | None) -> None:
    """A candidate for a language that needs nothing any more (its source was reverted, or it
    was edited to match by hand) will never be accepted: it goes."""
    for lang in state.status:
        if lang in todo or state.status[lang] not in ("synced", "source"):
            continue
        if layer.candidate(name, lang) is not None:
            layer.drop_candidate(name, lang)
            if report is not None:
                report.dropped.append((layer.name, name, lang))


def _translate_from(source: str, status: Mapping[str, str], preferred: str | None) -> str:
    """The source, or the language `add-language` preferred when it is in sync with it."""
    if preferred and status.get(preferred) == "synced":
        return preferred
    return source


async def translate(layer: Layer, items: Sequence[WorkItem], translator: Translator, *,
                    batch: int = 40, progress: Progress | None = None) -> SweepReport:
    """Candidates for `items` (all of one layer), checked and written one by one."""
    report = SweepReport()
    groups = _batches(items, batch if layer.kind == "messages" else 1)
    for done, group in enumerate(groups, start=1):
        first = group[0]
        payload = _payload(layer.kind, group)
        try:
            reply = await translator.translate(layer.kind, first.source_lang, first.lang, payload)
            values = _parse(layer.kind, reply, group)
        except (LLMError, ValueError) as exc:
            detail = exc.key if isinstance(exc, LLMError) else str(exc)[:200]
            log.warning("translation.failed layer=%s lang=%s names=%s detail=%s", layer.name,
                        first.lang, [i.name for i in group][:5], detail)
            report.failed += [(layer.name, i.name, i.lang, detail) for i in group]
            continue
        for item in group:
            _keep(layer, item, values.get(item.name), translator.label, report)
        if progress is not None:
            progress(f"{layer.name} {first.lang}: {done}/{len(groups)}")
    layer.flush()
    return report


def _keep(layer: Layer, item: WorkItem, value: Any, label: str, report: SweepReport) -> None:
    if value is None:
        report.failed.append((layer.name, item.name, item.lang, "no translation returned"))
        return
    problems = layer.problems(item.name, item.source_value, value)
    blocking = [p for p in problems if p.enforced]
    if blocking:
        report.rejected.append((layer.name, item.name, item.lang,
                                [f"{p.check}: {p.detail}" for p in blocking]))
        return
    warnings = tuple(f"{p.check}: {p.detail}" for p in problems)
    layer.put_candidate(item.name, item.lang, Candidate(value, item.source_lang, item.source_hash,
                                                        label, warnings=warnings))
    report.written.append((layer.name, item.name, item.lang))


def check_candidate(kind: str, source: Any, candidate: Any) -> list[Problem]:
    """The checks of one layer's kind of text."""
    if kind in ("prompt", "template"):
        problems = check_prompt(str(source), str(candidate))
        if not has_prose(str(source)):  # only constructs and tags: the same text is right
            problems = [p for p in problems if p.check != "unchanged"]
        return problems
    if kind == "document":
        return check_document(str(source), str(candidate))
    if kind == "lexicon":
        return check_lexicon(str(source), str(candidate), [])
    if kind == "messages":
        return check_message(source, candidate)
    if kind == "planner":
        from metnos.features.languages.layer_planner import check_planner

        return check_planner(source, candidate)
    if not isinstance(candidate, dict):
        return [Problem("shape", "not an object with description and affinity", True)]
    return [*check_prose(source["description"], candidate.get("description", "")),
            *check_prose(source["affinity"], candidate.get("affinity", []))]


def _batches(items: Sequence[WorkItem], size: int) -> list[list[WorkItem]]:
    grouped: dict[tuple[str, str], list[WorkItem]] = {}
    for item in items:
        grouped.setdefault((item.source_lang, item.lang), []).append(item)
    return [group[i:i + size] for group in grouped.values() for i in range(0, len(group), size)]


def _payload(kind: str, group: Sequence[WorkItem]) -> str:
    if kind in TEXT_KINDS:
        return str(group[0].source_value)
    if kind in ("manifest", "planner"):
        return json.dumps(group[0].source_value, ensure_ascii=False, indent=2)
    return json.dumps({i.name: i.source_value for i in group}, ensure_ascii=False, indent=2)


def _parse(kind: str, reply: str, group: Sequence[WorkItem]) -> dict[str, Any]:
    """The translations in `reply` by resource name; ValueError when it is not usable."""
    fenced = _FENCE.match(reply)
    text = fenced.group(1) if fenced else reply
    if kind in TEXT_KINDS:
        if not text.strip():
            raise ValueError("empty reply")
        return {group[0].name: text if text.endswith("\n") else text + "\n"}
    data = _json_object(text)
    if kind in ("manifest", "planner"):
        return {group[0].name: data}
    return {name: value for name, value in data.items() if isinstance(value, str | dict)}


def _json_object(text: str) -> dict[str, Any]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    try:
        data = json.loads(text[start:end + 1])
    except ValueError as exc:
        raise ValueError(f"the reply is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    return data
