"""Latest-wins (SPEC §9.4, seed §3 and §6): which language is the source, which are stale.

No language is canonical. Per resource (a prompt role, an executor's description, a message
key) and language we *record*, at each alignment, a `LangEntry`: `version_hash` of that
language's text then, and `source_hash`, the source's version_hash it was aligned to (None
for the source itself). `assess` compares the record with the hashes of the texts *now*; it
is plain deterministic code, never a model, and it never looks at file times.

- Nothing edited: the recorded source stays; a language is `synced` when its `source_hash`
  is the source's hash, else `stale`.
- Only the source edited: languages aligned to its old text become `stale`; an edit that
  reverts to the text they were aligned to makes them `synced` again (Weblate's rule).
- Only one translation edited, and it was in sync: it becomes the source (latest wins) and
  every other language is stale, the old source included (retro-translation).
- Two or more languages edited since the last alignment, or an out-of-date translation
  edited after its source changed: `conflict`. No winner is picked; a person chooses with
  `mark-synced ... --source L`, and nothing is translated meanwhile.

Elections are *derived*, never stored on their own: the record changes only at an alignment
(`align`, `record_new`), so a revert before any alignment leaves no trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

Status = Literal["source", "synced", "stale", "missing", "untracked", "conflict"]
STATUSES: tuple[Status, ...] = ("source", "synced", "stale", "missing", "untracked", "conflict")


@dataclass(frozen=True)
class LangEntry:
    """What was recorded for one language of one resource at its last alignment."""

    version_hash: str
    source_hash: str | None = None
    source_lang: str | None = None
    translated_by: str | None = None
    reviewed_at: str | None = None
    needs_review: bool = False

    @property
    def is_source(self) -> bool:
        return self.source_hash is None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LangEntry:
        return cls(
            version_hash=str(data["version_hash"]),
            source_hash=_opt(data.get("source_hash")),
            source_lang=_opt(data.get("source_lang")),
            translated_by=_opt(data.get("translated_by")),
            reviewed_at=_opt(data.get("reviewed_at")),
            needs_review=bool(data.get("needs_review", False)),
        )


class AlignError(ValueError):
    """An alignment that makes no sense; `code` names why (`conflict`, `no_conflict`,
    `is_source`, `empty`, `source_empty`), `lang` the language concerned."""

    def __init__(self, code: str, detail: str, lang: str = "") -> None:
        super().__init__(detail)
        self.code = code
        self.lang = lang


Record = Mapping[str, LangEntry]
Hashes = Mapping[str, str | None]


@dataclass(frozen=True)
class Assessment:
    """The state of one resource now. `source` (and `source_hash`, the hash translations
    must be aligned to) are None only in a conflict."""

    source: str | None
    source_hash: str | None
    status: Mapping[str, Status]
    edited: tuple[str, ...] = ()
    tracked: bool = True

    @property
    def conflict(self) -> bool:
        return any(s == "conflict" for s in self.status.values())

    @property
    def in_conflict(self) -> list[str]:
        return [lang for lang, s in self.status.items() if s == "conflict"]

    def needing_translation(self) -> list[str]:
        """Languages the sweep should write a candidate for (none during a conflict)."""
        if self.conflict:
            return []
        return [lang for lang, s in self.status.items() if s in ("stale", "missing")]


def assess(record: Record, current: Hashes, languages: Sequence[str],
           default_source: str) -> Assessment:
    """The state of a resource from its `record` and the `current` hashes of its texts.

    `languages` are the languages the resource should exist in (the known ones); a language
    with text but no record is `untracked`, one with a record or expected but no text is
    `missing`.
    """
    present = {lang: h for lang, h in current.items() if h is not None}
    if not record:
        return _untracked(present, languages, default_source)
    source = _recorded_source(record, present, languages, default_source)
    edited = tuple(lang for lang, entry in record.items()
                   if lang in present and present[lang] != entry.version_hash)
    status: dict[str, Status] = {}
    for lang in _ordered({*languages, *record, *present}, languages):
        if lang not in present:
            status[lang] = "missing"
        elif lang not in record:
            status[lang] = "untracked"
    if source is None or not edited or edited == (source,):
        return _with_source(record, present, status, source, edited)
    if len(edited) == 1 and _aligned(record, edited[0], source):
        return _elected(record, present, status, edited[0], edited)
    # whoever wins, every language that was not edited needs a new translation
    for lang in (*edited, *((source,) if len(edited) == 1 else ())):
        status[lang] = "conflict"
    for lang in present:
        status.setdefault(lang, "stale")
    return Assessment(None, None, status, edited)


def align(record: Record, current: Hashes, languages: Sequence[str], default_source: str,
          lang: str | None, *, source: str | None = None, translated_by: str | None = None,
          reviewed_at: str | None = None) -> dict[str, LangEntry]:
    """The record after `lang`'s current text is declared aligned to the source's.

    `lang`'s own edit does not count in the election: a promoted candidate or a translation
    made by hand is what aligning means, and in a conflict between `lang` and one other
    language that other one wins. `source` names the winner when that is not enough (a
    conflict among three, or electing without aligning: `lang` None). ValueError when the
    request makes no sense (no text, no source, `lang` is the source).
    """
    present = {k: h for k, h in current.items() if h is not None}
    basis = dict(current)
    if lang is not None:
        basis[lang] = record[lang].version_hash if lang in record else None
    now = assess(record, basis, languages, default_source)
    winner = source or now.source
    if winner is None:
        raise AlignError("conflict", "conflict: name the language that wins (source)")
    if winner not in present:
        raise AlignError("source_empty", f"{winner} has no text to be the source", lang=winner)
    if source is not None and not now.conflict and source != now.source:
        raise AlignError("no_conflict", f"{now.source} is the source and nothing is in conflict",
                         lang=str(now.source))
    new = _rebased(record, present, now, winner)
    if lang is not None:
        if lang == winner:
            raise AlignError("is_source", f"{lang} is the source: nothing to align", lang=lang)
        if lang not in present:
            raise AlignError("empty", f"{lang} has no text to align", lang=lang)
        new[lang] = LangEntry(present[lang], present[winner], winner, translated_by, reviewed_at)
    return new


def record_new(current: Hashes, source: str, translated_by: str | None = "author"
               ) -> dict[str, LangEntry]:
    """The first record of a resource: every present language aligned to `source`."""
    present = {k: h for k, h in current.items() if h is not None}
    if source not in present:
        raise AlignError("source_empty", f"{source} has no text to be the source", lang=source)
    return {lang: LangEntry(h) if lang == source
            else LangEntry(h, present[source], source, translated_by)
            for lang, h in sorted(present.items())}


def flag_review(record: Record, lang: str, needs_review: bool) -> dict[str, LangEntry]:
    """The record with `needs_review` set on `lang` (when it has an entry)."""
    new = dict(record)
    if lang in new:
        new[lang] = replace(new[lang], needs_review=needs_review)
    return new


# -- internals ----------------------------------------------------------------------------
def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _ordered(langs: set[str], preferred: Sequence[str]) -> list[str]:
    first = [lang for lang in preferred if lang in langs]
    return first + sorted(langs - set(first))


def _untracked(present: Mapping[str, str], languages: Sequence[str],
               default_source: str) -> Assessment:
    ordered = _ordered({*present, *languages}, [default_source, *languages])
    source = next((lang for lang in ordered if lang in present), None)
    status: dict[str, Status] = {
        lang: "missing" if lang not in present else "source" if lang == source else "synced"
        for lang in ordered}
    return Assessment(source, present.get(source) if source else None, status, tracked=False)


def _recorded_source(record: Record, present: Mapping[str, str], languages: Sequence[str],
                     default_source: str) -> str | None:
    """The language recorded as source; if its text is gone, the first one aligned to it."""
    sources = [lang for lang, e in record.items() if e.is_source]
    source = _ordered(set(sources), [default_source, *languages])[0] if sources else None
    if source is not None and source in present:
        return source
    fallback = [lang for lang in record if lang in present
                and (source is None or _aligned(record, lang, source))]
    ordered = _ordered(set(fallback), [default_source, *languages])
    return ordered[0] if ordered else None


def _aligned(record: Record, lang: str, source: str) -> bool:
    """Whether `lang` was, at its last alignment, a translation of `source`'s recorded text."""
    if lang == source:
        return True
    entry, src = record.get(lang), record.get(source)
    return entry is not None and src is not None and entry.source_hash == src.version_hash


def _with_source(record: Record, present: Mapping[str, str], status: dict[str, Status],
                 source: str | None, edited: tuple[str, ...]) -> Assessment:
    """No election: translations are synced when aligned to the source's text *now*."""
    source_hash = present.get(source) if source else None
    for lang in present:
        if lang in status:
            continue
        if lang == source:
            status[lang] = "source"
        else:
            status[lang] = "synced" if record[lang].source_hash == source_hash else "stale"
    return Assessment(source, source_hash, status, edited)


def _elected(record: Record, present: Mapping[str, str], status: dict[str, Status],
             winner: str, edited: tuple[str, ...]) -> Assessment:
    """`winner`, an in-sync translation, was edited: it is the source, the rest is stale."""
    for lang in present:
        status.setdefault(lang, "source" if lang == winner else "stale")
    return Assessment(winner, present[winner], status, edited)


def _rebased(record: Record, present: Mapping[str, str], now: Assessment,
             winner: str) -> dict[str, LangEntry]:
    """The record rewritten around `winner` as source, keeping every other alignment."""
    old_source = next((lang for lang, e in record.items() if e.is_source), None)
    winner_old = record[winner].version_hash if winner in record else None
    new: dict[str, LangEntry] = {}
    for lang, entry in record.items():
        if lang == winner:
            continue
        hash_now = present.get(lang, entry.version_hash)
        if now.status.get(lang) == "synced" and now.source == winner:
            new[lang] = replace(entry, version_hash=hash_now, source_hash=present[winner],
                                source_lang=winner)
        elif lang not in now.edited and winner_old is not None and old_source is not None \
                and old_source != winner and _aligned(record, lang, old_source) \
                and _aligned(record, winner, old_source):
            # it was a translation of the winner's previous text: a revert clears it
            new[lang] = replace(entry, version_hash=hash_now, source_hash=winner_old,
                                source_lang=winner)
        else:
            new[lang] = replace(entry, version_hash=hash_now, source_lang=winner,
                                source_hash=entry.source_hash or "")
    previous = record.get(winner)
    new[winner] = LangEntry(present[winner], None, None, None,
                            previous.reviewed_at if previous else None)
    return dict(sorted(new.items()))
