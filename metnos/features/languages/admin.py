"""What `metnos-prompts` does, as plain functions over the layers (SPEC §9.4, §9.5).

`LanguageAdmin` opens the layers of one instance (its resources folder and its i18n
database) and offers: `status`, `add_language`, `sweep`, `review`, `mark_synced` (one
resource, or every reviewed message of a language), `resolve` (a conflict), `record_untracked`,
`check` and `check_surfaces` (`metnos.features.languages.surfaces`). Each change appends a line to
the multilingual audit log (`METNOS_HOME/multilang/audit.jsonl`).

Order of writes in `mark_synced`: the text first, then the record, then the candidate is
dropped. A language whose text already equals its pending candidate is not taken for an edit
(`Layer.assess`), so a crash between two writes leaves an honest state and a rerun finishes.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from metnos.features.languages.checks import check_message, enforced
from metnos.features.languages.instance import multilang_audit, open_instance_store
from metnos.features.languages.layer_messages import MessagesLayer
from metnos.features.languages.layer_planner import PlannerLayer
from metnos.features.languages.layers import (
    ChannelsLayer,
    LexiconLayer,
    ManifestsLayer,
    PromptsLayer,
    WorkspaceLayer,
)
from metnos.features.languages.resources import Layer, known_languages, now_iso
from metnos.features.languages.state import AlignError, align, record_new
from metnos.features.languages.surfaces import SurfaceProblem, WebPages, check_surfaces
from metnos.features.languages.sweep import SweepReport, Translator, find_work, translate
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.i18n.skeleton import PromptTemplateError, compare, skeleton
from metnos.ground.i18n.store import MessageStore
from metnos.ground.i18n.tags import base_language
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import executor_dirs

LAYERS = ("prompts", "manifests", "messages", "channels", "lexicon", "workspace", "planner")


class LanguagesError(MetnosError, ValueError):
    """A language request that cannot be done: an unknown layer, resource or language (or one
    not active), a translation from a language to itself, nothing to sync, or a candidate that
    is obsolete, fails its checks or does not align with its record."""

    key = "ERR_LANGS_REQUEST_INVALID"


@dataclass(frozen=True)
class StatusRow:
    layer: str
    name: str
    lang: str
    status: str
    candidate: str | None = None  # "current" | "obsolete" | None


@dataclass(frozen=True)
class Review:
    layer: str
    name: str
    lang: str
    status: str
    source_lang: str | None
    source: str
    current: str
    candidate: str | None
    obsolete: bool
    warnings: tuple[str, ...]

    @property
    def diff(self) -> str:
        if self.candidate is None:
            return ""
        lines = difflib.unified_diff(self.current.splitlines(keepends=True),
                                     self.candidate.splitlines(keepends=True),
                                     f"{self.lang} (now)", f"{self.lang} (candidate)")
        return "".join(lines)


@dataclass
class CheckIssue:
    layer: str
    name: str
    lang: str
    problem: str
    error: bool = True


@dataclass
class AddLanguageReport:
    code: str
    source_lang: str
    created: list[str] = field(default_factory=list)
    rows: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.created or self.rows)


class LanguageAdmin:
    """The layers of one instance, and the operations of `metnos-prompts`."""

    def __init__(self, settings: Settings, store: MessageStore | None = None) -> None:
        self.settings = settings
        root = settings.resources_root
        self.languages = known_languages(root)
        source = settings.i18n.source_lang
        manifests = ManifestsLayer(executor_dirs(settings), self.languages, source)
        self.store = store if store is not None else open_instance_store(settings, manifests)
        self.layers: dict[str, Layer] = {
            "prompts": PromptsLayer(root, self.languages, source),
            "manifests": manifests,
            "messages": MessagesLayer(root, self.store, self.languages, source),
            "channels": ChannelsLayer(root, self.languages, source),
            "lexicon": LexiconLayer(root, self.languages, source),
            "workspace": WorkspaceLayer(root, self.languages, source),
            "planner": PlannerLayer(root, executor_dirs(settings), self.languages, source),
        }

    # -- reading ---------------------------------------------------------------------------
    def layer(self, name: str) -> Layer:
        if name not in self.layers:
            raise LanguagesError("ERR_LANGS_LAYER_UNKNOWN", layer=name, layers=", ".join(LAYERS))
        return self.layers[name]

    def resource(self, layer: str, name: str) -> Layer:
        found = self.layer(layer)
        if name not in found.resources():
            raise LanguagesError("ERR_LANGS_RESOURCE_UNKNOWN", layer=layer, name=name)
        return found

    def lang(self, tag: str) -> str:
        code = base_language(tag)
        if code not in self.languages:
            raise LanguagesError("ERR_LANGS_LANGUAGE_UNKNOWN", lang=code,
                                 languages=", ".join(self.languages))
        return code

    def status(self, layers: Iterable[str] = LAYERS) -> list[StatusRow]:
        rows = []
        for layer in (self.layer(name) for name in layers):
            for name in layer.resources():
                state = layer.assess(name)
                for lang in self.languages:
                    cand = layer.candidate(name, lang)
                    mark = None if cand is None else (
                        "current" if cand.source_hash == state.source_hash else "obsolete")
                    rows.append(StatusRow(layer.name, name, lang,
                                          state.status.get(lang, "missing"), mark))
        return rows

    def review(self, layer: str, name: str, lang: str) -> Review:
        found, code = self.resource(layer, name), self.lang(lang)
        state = found.assess(name)
        cand = found.candidate(name, code)
        source = state.source
        return Review(layer, name, code, state.status.get(code, "missing"), source,
                      _show(found.text(name, source)) if source else "",
                      _show(found.text(name, code)),
                      None if cand is None else _show(cand.value),
                      cand is not None and cand.source_hash != state.source_hash,
                      () if cand is None else cand.warnings)

    # -- changing --------------------------------------------------------------------------
    def add_language(self, tag: str, source_lang: str | None = None) -> AddLanguageReport:
        """Idempotent: `prompts/<code>/`, the i18n rows to translate, and an audit line."""
        code = base_language(tag)
        source = base_language(source_lang or self.settings.i18n.source_lang)
        if source not in self.languages:
            raise LanguagesError("ERR_LANGS_LANGUAGE_UNKNOWN", lang=source,
                                 languages=", ".join(self.languages))
        if code == source:
            raise LanguagesError("ERR_LANGS_SAME_LANGUAGE", lang=code)
        report = AddLanguageReport(code, source)
        folder = self.settings.resources_root / "prompts" / code
        if not folder.is_dir():
            folder.mkdir(parents=True)
            report.created.append(f"prompts/{code}/")
        report.rows = self.store.bootstrap_language(code, source)
        self.store.set_meta(f"lang_source:{code}", source)
        if code not in self.languages:
            self.languages.append(code)
            for layer in self.layers.values():
                layer.languages.append(code)
        self.audit("add-language", code=code, source_lang=source, changed=report.changed,
                   rows=report.rows)
        return report

    async def sweep(self, translator: Translator, *, layers: Iterable[str] = LAYERS,
                    names: Sequence[str] | None = None, langs: Sequence[str] | None = None,
                    progress: Callable[[str], None] | None = None) -> SweepReport:
        report = SweepReport()
        wanted = [self.lang(tag) for tag in langs] if langs else None
        preferred = {lang: self.store.get_meta(f"lang_source:{lang}") or ""
                     for lang in self.languages}
        for layer in (self.layer(name) for name in layers):
            if names is not None:
                for name in names:
                    self.resource(layer.name, name)
            items = find_work(layer, names=names, langs=wanted, report=report,
                              preferred_source={k: v for k, v in preferred.items() if v})
            if progress is not None:
                progress(f"{layer.name}: {len(items)}")
            report.merge(await translate(layer, items, translator,
                                         batch=self.settings.i18n.sweep_batch,
                                         progress=progress))
        self.audit("sweep", translated_by=translator.label, **_counts(report))
        return report

    def mark_synced(self, layer: str, name: str, lang: str, *, source: str | None = None,
                    keep_current: bool = False) -> list[str]:
        """`lang` of `name` is in sync: its candidate (if any) is promoted, then aligned."""
        found, code = self.resource(layer, name), self.lang(lang)
        notes, by = self._promote(found, name, code, keep_current)
        self._align(found, name, code, source=source and self.lang(source), by=by)
        found.drop_candidate(name, code)
        self.audit("mark-synced", layer=layer, name=name, lang=code, translated_by=by)
        return notes

    def mark_all(self, layer: str, lang: str) -> tuple[int, list[str]]:
        """Promote every current, valid candidate of `lang` in `layer` (bulk review)."""
        found, code = self.layer(layer), self.lang(lang)
        done, skipped = [], []
        for name in found.resources():
            cand = found.candidate(name, code)
            if cand is None:
                continue
            try:
                _, by = self._promote(found, name, code, False)
                self._align(found, name, code, source=None, by=by, flush=False)
            except LanguagesError as exc:
                skipped.append(f"{name}: {i18n.message(exc, self.settings.lang)}")
                continue
            done.append(name)
        found.flush()
        for name in done:
            found.drop_candidate(name, code)
        self.audit("mark-synced", layer=layer, lang=code, count=len(done))
        return len(done), skipped

    def resolve(self, layer: str, name: str, source: str) -> None:
        """End a conflict: `source` wins; every other language becomes stale."""
        found, winner = self.resource(layer, name), self.lang(source)
        self._align(found, name, None, source=winner, by=None)
        self.audit("resolve", layer=layer, name=name, source_lang=winner)

    def record_untracked(self) -> int:
        """Record every resource that has no record yet, as aligned to its derived source,
        and forget the records of resources that are gone."""
        count = forgotten = 0
        for layer in self.layers.values():
            names = layer.resources()
            for name in names:
                state = layer.assess(name)
                if not state.tracked and state.source is not None:
                    layer.save_record(name, record_new(layer.hashes(name), state.source))
                    count += 1
            for name in set(layer.recorded()) - set(names):
                layer.forget(name)
                forgotten += 1
            layer.flush()
        if count or forgotten:
            self.audit("sync", recorded=count, forgotten=forgotten)
        return count

    def check(self) -> list[CheckIssue]:
        """Read-only: skeletons and placeholders of every language, conflicts, untracked."""
        issues: list[CheckIssue] = []
        for layer in self.layers.values():
            for name in layer.resources():
                state = layer.assess(name)
                if state.conflict:
                    issues.append(CheckIssue(layer.name, name, ",".join(state.in_conflict),
                                             "conflict"))
                elif not state.tracked:
                    issues.append(CheckIssue(layer.name, name, "*", "untracked", error=False))
                if state.source is not None:
                    issues += self._check_texts(layer, name, state.source)
        return issues

    def check_surfaces(self, tag: str, pages: WebPages) -> list[SurfaceProblem]:
        """Every surface in `tag` (an active language), linted
        (`metnos.features.languages.surfaces`), the web chat's `pages` included."""
        code = self.lang(tag)
        if code not in self.settings.active_languages:
            raise LanguagesError("ERR_LANGS_SURFACES_INACTIVE", lang=code)
        return check_surfaces(code, self.settings.resources_root, pages)

    # -- internals -------------------------------------------------------------------------
    def _promote(self, layer: Layer, name: str, lang: str,
                 keep_current: bool) -> tuple[list[str], str]:
        state, cand = layer.assess(name), layer.candidate(name, lang)
        if cand is None or keep_current:
            if layer.text(name, lang) is None:
                raise LanguagesError("ERR_LANGS_NOTHING_TO_SYNC", name=name, lang=lang)
            return [], "person"
        if cand.source_hash != state.source_hash:
            raise LanguagesError("ERR_LANGS_CANDIDATE_OBSOLETE", name=name, lang=lang)
        source_value = layer.text(name, cand.source_lang)
        blocking = enforced(layer.problems(name, source_value, cand.value))
        if blocking:
            raise LanguagesError("ERR_LANGS_CANDIDATE_INVALID", name=name, lang=lang,
                                 problems="; ".join(f"{p.check}: {p.detail}" for p in blocking))
        return layer.promote(name, lang, cand.value), cand.translated_by

    def _align(self, layer: Layer, name: str, lang: str | None, *, source: str | None,
               by: str | None, flush: bool = True) -> None:
        """Align `name`'s record; `flush=False` leaves the write to the caller (a bulk
        review writes each file once, not once per resource)."""
        try:
            record = align(layer.record(name), layer.hashes(name), layer.languages,
                           layer.default_source, lang, source=source, translated_by=by,
                           reviewed_at=now_iso())
        except AlignError as exc:
            raise LanguagesError(f"ERR_LANGS_ALIGN_{exc.code.upper()}", name=name,
                                 lang=exc.lang) from exc
        layer.save_record(name, record)
        if flush:
            layer.flush()

    def _check_texts(self, layer: Layer, name: str, source: str) -> list[CheckIssue]:
        issues = []
        source_value = layer.text(name, source)
        for lang in self.languages:
            value = layer.text(name, lang)
            if value is None or lang == source:
                continue
            problems = _text_problems(layer, name, source_value, value)
            issues += [CheckIssue(layer.name, name, lang, p) for p in problems]
        return issues

    def audit(self, action: str, **fields: Any) -> None:
        multilang_audit(self.settings, action, **fields)


def _text_problems(layer: Layer, name: str, source: Any, value: Any) -> list[str]:
    """Structural problems of an existing translation (not 'unchanged': that is for
    candidates, and short strings may well be equal)."""
    kind = layer.kind
    if kind in ("template", "lexicon", "document", "planner"):
        return [f"{p.check}: {p.detail}" for p in enforced(layer.problems(name, source, value))
                if p.check != "unchanged"]
    if kind == "prompt":
        try:
            found = compare(skeleton(str(source)), skeleton(str(value)))
        except PromptTemplateError as exc:
            return [str(exc.vars.get("detail", exc.key))]
        return [p.detail for p in found]
    if kind == "messages":
        return [f"{p.check}: {p.detail}" for p in enforced(check_message(source, value))
                if p.check != "unchanged"]
    return []


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def _counts(report: SweepReport) -> dict[str, int]:
    data = report.to_json()
    return {k: int(v) for k, v in data.items() if k != "details"}
