"""Split the published docs and the executor manifests into catalog sections.

Docs (`docs/<lang>/**/*.md`) are cut at `##` and `###` headings (anchor = GitHub-style slug,
title = the heading path); a small `###` is merged into its parent, a long section is cut at
paragraphs. Optional front matter (`---` lines `concept:` / `audience:`); a page under
`docs/<lang>/owner/` is for the owner. Translations share a `concept`: the page's key in
`docs/index.toml` plus the heading's position. Each manifest yields, per language it
describes, one `contract` section and one `argument` section per input.

How people ask for a section, in their own words, is language data beside the pages:
`docs/<lang>/keywords.toml` maps `"<file>#<anchor>"` to a list of phrasings ("how do I go
back after a change?" for the undo section). They are not shown: they are embedded and
indexed with the section (its first chunk, where a long section's answer then starts), so a
question phrased the way a person asks finds the section whose heading says it differently.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from metnos.ground import i18n
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.manifest import Manifest, manifest_bytes, parse_manifest

MAX_CHARS = 1200
MIN_CHARS = 240
HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    id: str
    source: str
    lang: str
    title: str
    text: str
    kind: str
    audience: str
    url: str
    concept: str
    keywords: str = ""  # how people ask for it, one phrasing a line (docs/<lang>/keywords.toml)

    def phrasings(self) -> list[str]:
        return [k for k in self.keywords.splitlines() if k.strip()]


KEYWORDS_FILE = "keywords.toml"


def keywords(lang_dir: Path) -> dict[str, str]:
    """`"<file>#<anchor>"` → its phrasings, one a line, from `docs/<lang>/keywords.toml`."""
    path = lang_dir / KEYWORDS_FILE
    if not path.is_file():
        return {}
    table = tomllib.loads(path.read_text(encoding="utf-8"))
    return {key: "\n".join(unicodedata.normalize("NFC", str(p)).strip() for p in phrases)
            for key, phrases in table.items() if isinstance(phrases, list)}


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = unicodedata.normalize("NFC", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def front_matter(text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 4)
    if end < 0:
        return {}, text
    meta: dict[str, str] = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip()] = value.strip().strip("\"'")
    return meta, text[end + 5:]


@dataclass
class _Block:
    level: int
    heading: str
    anchor: str
    path: tuple[str, ...]
    ordinal: int
    body: str = ""


def _blocks(text: str) -> list[_Block]:
    blocks = [_Block(1, "", "", (), 0)]
    seen: dict[str, int] = {}
    trail: list[str] = []
    lines: list[str] = []
    fenced = False
    ordinal = 0

    def close() -> None:
        blocks[-1].body = "\n".join(lines).strip()
        lines.clear()

    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        level, heading = len(match.group(1)), match.group(2).strip()
        plain = re.sub(r"[*`_]{1,2}(.+?)[*`_]{1,2}", r"\1", heading)
        base = slug(plain)
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchor = base if count == 0 else f"{base}-{count}"
        if level == 1 and not trail:
            blocks[0].heading, blocks[0].anchor, blocks[0].path = plain, anchor, (plain,)
            trail = [plain]
            continue
        close()
        ordinal += 1
        trail = trail[: max(level - 1, 1)] + [plain] if trail else [plain]
        blocks.append(_Block(level, plain, anchor, tuple(trail), ordinal))
    close()
    return blocks


def _merged(blocks: list[_Block]) -> list[_Block]:
    """Small `###` blocks are appended to the preceding `##` (or intro) block."""
    out: list[_Block] = []
    for block in blocks:
        if out and block.level >= 3 and len(block.body) < MIN_CHARS:
            parent = out[-1]
            parent.body = f"{parent.body}\n\n{'#' * block.level} {block.heading}\n\n{block.body}"
            continue
        out.append(block)
    return [b for b in out if b.body.strip()]


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; a fenced code block stays one paragraph."""
    out: list[str] = []
    lines: list[str] = []
    fenced = False
    for line in text.strip().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and not line.strip():
            if lines:
                out.append("\n".join(lines))
                lines = []
            continue
        lines.append(line)
    if lines:
        out.append("\n".join(lines))
    return out


def chunks(text: str, limit: int | None = None) -> list[str]:
    """`text` cut at paragraphs into pieces of at most about `limit` characters."""
    limit = limit or MAX_CHARS
    pieces: list[str] = []
    current = ""
    for para in paragraphs(text):
        while len(para) > limit:  # one giant paragraph: cut at a line or a space
            code = FENCE.match(para) is not None  # a long code block: closed, then reopened
            room = limit - 4 if code else limit
            cut = para.rfind("\n", 0, room)
            cut = cut if cut > room // 2 else para.rfind(" ", 0, room)
            cut = cut if cut > 0 else room
            if current:
                pieces.append(current)
                current = ""
            head, para = para[:cut].strip(), para[cut:].strip()
            pieces.append(f"{head}\n```" if code else head)
            para = f"```\n{para}" if code else para
        if current and len(current) + 2 + len(para) > limit:
            pieces.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current:
        pieces.append(current)
    return [p for p in pieces if p]


def page_concepts(docs_dir: Path) -> dict[tuple[str, str], str]:
    """(lang, relative file) → page key, from `docs/index.toml` when present."""
    index = docs_dir / "index.toml"
    if not index.is_file():
        return {}
    table = tomllib.loads(index.read_text(encoding="utf-8")).get("pages", {})
    return {(lang, rel): key for key, files in table.items() for lang, rel in files.items()}


def doc_sections(docs_dir: Path) -> Iterator[Section]:
    pages = page_concepts(docs_dir)
    for lang_dir in sorted(p for p in docs_dir.iterdir() if p.is_dir()):
        lang = lang_dir.name
        asked = keywords(lang_dir)
        for path in sorted(lang_dir.rglob("*.md")):
            rel = path.relative_to(lang_dir).as_posix()
            yield from _page(path, lang, rel, pages.get((lang, rel)), asked)


def _page(path: Path, lang: str, rel: str, page: str | None,
          asked: dict[str, str]) -> Iterator[Section]:
    raw = path.read_text(encoding="utf-8").replace("\r\n", "\n").lstrip("\ufeff")
    meta, body = front_matter(unicodedata.normalize("NFC", raw))
    owner = rel.startswith("owner/") or meta.get("audience") == "owner"
    audience = "owner" if owner else "everyone"
    concept_base = meta.get("concept") or page or rel.removesuffix(".md")
    source = f"docs/{lang}/{rel}"
    page_url = f"/docs/{lang}/{rel.removesuffix('.md')}"
    for block in _merged(_blocks(body)):
        title = " › ".join(block.path) or rel
        anchor = block.anchor or "top"
        for n, piece in enumerate(chunks(block.body)):
            sid = f"{source}#{anchor}" + (f"/{n + 1}" if n else "")
            url = f"{page_url}#{block.anchor}" if block.ordinal else page_url
            yield Section(sid, source, lang, title, piece, "doc", audience, url,
                          f"{concept_base}#{block.ordinal}",
                          "" if n else asked.get(f"{rel}#{anchor}", ""))


def manifest_sections(executors_dir: Path) -> Iterator[Section]:
    for folder in sorted(p for p in executors_dir.iterdir() if (p / "manifest.toml").is_file()):
        path = folder / "manifest.toml"
        manifest = parse_manifest(path, manifest_bytes(path))
        for lang in manifest.languages():
            yield from _contract(manifest, lang)


def _contract(m: Manifest, lang: str) -> Iterator[Section]:
    source = f"executors/{m.name}"
    url = f"/docs/executors/{m.name}"
    effect = "TUTOR_CONTRACT_CHANGES" if m.side_effects else "TUTOR_CONTRACT_CHANGES_NOTHING"
    undo = "TUTOR_CONTRACT_REVERSIBLE" if m.reversible else "TUTOR_CONTRACT_IRREVERSIBLE"
    returns = "; ".join(f"{name}: {_text(o.description, lang).rstrip('.')}"
                        for name, o in m.outputs.items())
    args = ", ".join(m.inputs) or "-"
    lines = [_text(m.description, lang).strip(),
             i18n.get(effect, lang), i18n.get(undo, lang),
             i18n.get("TUTOR_CONTRACT_RISK", lang, risk=m.risk),
             i18n.get("TUTOR_CONTRACT_INPUTS", lang, inputs=args)]
    if returns:
        lines.append(i18n.get("TUTOR_CONTRACT_RETURNS", lang, outputs=returns))
    title = i18n.get("TUTOR_CONTRACT_TITLE", lang, name=m.name)
    yield Section(f"{source}#contract", source, lang, title, "\n".join(lines), "contract",
                  "everyone", url, f"{source}#contract")
    for name, spec in m.inputs.items():
        title = i18n.get("TUTOR_ARGUMENT_TITLE", lang, name=m.name, arg=name)
        text = f"{name} ({spec.type}): {_text(spec.description, lang)}"
        yield Section(f"{source}#arg-{name}", source, lang, title, text, "argument",
                      "everyone", f"{url}#arg-{name}", f"{source}#arg-{name}")


def _text(table: dict[str, str], lang: str) -> str:
    return table.get(lang) or table.get(i18n.FALLBACK_LANG) or next(iter(table.values()), "")


def all_sections(docs_dir: Path | None = None,
                 executors_dir: Path | None = None) -> list[Section]:
    """The sections of the docs and the manifests (by default the shipped ones)."""
    found = [*doc_sections(docs_dir or resources_path("docs")),
             *manifest_sections(executors_dir or resources_path("executors"))]
    keys = [(s.id, s.lang) for s in found]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate section ids")
    return found
