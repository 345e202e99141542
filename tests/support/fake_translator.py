"""A stand-in for a translating model, behind the scripted LLM server (the LLM edge).

`fake_translation(body)` answers a request made with the `translator` prompt, keeping what a
good translator keeps: Jinja constructs, HTML tags, markdown markers, code spans, `{name}`
placeholders and hassil references, paths, commands, whitespace, JSON and TOML shapes, and
the keys of word data that every shipped language shares. Other requests get None (the
scripted server then answers from its queue).

How it "translates" depends on the target:
- a language with a word list in `tests/support/glossary/<lang>.txt` (French): word for word
  from English, so a detector reads French and the embedded planner's sentences are French
  words a test can say; words the list lacks stay as they are;
- Arabic (`ar`): every Latin word is spelt in Arabic letters (a right-to-left script through
  every surface, and sentences a test can say with `spoken("...", "ar")`);
- any other language: the prose is marked `[xx] ...`.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import tomlkit

from metnos.ground.paths import resources_path

_CODES = re.compile(r"\(`([A-Za-z]{2,3}(?:-[A-Za-z0-9]+)*)`\)")
_EDGES = re.compile(r"^(\s*)(.*?)(\s*)$", re.DOTALL)
_GLOSSARIES = Path(__file__).with_name("glossary")
# what a translation keeps as it is: Jinja, tags, code, placeholders, URLs, paths and file
# names, options, identifiers, a `metnos ...` command and its two next words
_KEEP = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|<[^<>\n]*>|`[^`\n]*`|\{[^{}\n]*\}"
                   r"|https?://\S+|[\w~-]*[./][\w./~-]*\w|(?<![\w-])--?[\w-]+|\b\w*[_\d]\w*\b"
                   r"|\b[A-Z]{2,}\b|\bmetnos(?:-prompts)?(?:[ \t]+[a-z][\w-]*){0,2}")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_ARABIC = dict(zip("abcdefghijklmnopqrstuvwxyz",
                   "ابكديفجهيجكلمنوبقرستوفوكيز", strict=True))
_MARKERS = re.compile(r"^(\s*(?:#{1,6}\s|[-*•]\s|\d+[.)]\s)?)")


def target_of(body: dict[str, Any]) -> str | None:
    """The target language of a translator request (the second `(code)` of its prompt)."""
    system = next((str(m.get("content")) for m in body.get("messages", [])
                   if m.get("role") == "system"), "")
    codes = _CODES.findall(system)
    return codes[1] if len(codes) >= 2 else None


def fake_translation(body: dict[str, Any]) -> str | None:
    target = target_of(body)
    if target is None:
        return None
    user = next(str(m.get("content")) for m in body["messages"] if m.get("role") == "user")
    prose = _translator(target)
    try:
        data = json.loads(user)
    except ValueError:
        if _toml(user) is not None:
            return _lexicon(user, prose)
        return "".join(_line(line, prose) for line in user.splitlines(keepends=True))
    if "description" in data and "affinity" in data:
        affinity = [f"{word}-{target}" if _marks(prose) else prose(word).strip()
                    for word in data["affinity"]]
        return json.dumps({"description": prose(data["description"]),
                           "affinity": list(dict.fromkeys(affinity))}, ensure_ascii=False)
    if "utterances" in data and "slots" in data:
        return json.dumps(_planner(data, prose), ensure_ascii=False)
    return json.dumps({key: ({form: prose(text) for form, text in value.items()}
                             if isinstance(value, dict) else prose(value))
                       for key, value in data.items()}, ensure_ascii=False)


def spoken(english: str, lang: str) -> str:
    """What a person of `lang` says, as the scripted translator taught Metnos to understand
    it: `spoken("delete the file notes.md", "fr")` is "supprimer le fichier notes.md"."""
    return _translator(lang)(english)


# -- the three ways -------------------------------------------------------------------------
def _translator(target: str) -> Callable[[str], str]:
    words = _glossary(target)
    if words:
        return lambda text: _words(text, lambda w: words.get(w.lower()))
    if target == "ar":
        return lambda text: _words(text, lambda w: "".join(_ARABIC.get(c, c) for c in w.lower()))
    return lambda text: _mark(text, target)


@lru_cache(maxsize=8)
def _glossary(lang: str) -> dict[str, str]:
    path = _GLOSSARIES / f"{lang}.txt"
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            word, _, said = line.partition(":")
            found.setdefault(word.strip().lower(), said.strip())
    return found


def _words(text: str, say: Callable[[str], str | None]) -> str:
    """Every word outside what is kept, said in the target language (when it has a word)."""
    out, at = [], 0
    for kept in _KEEP.finditer(text):
        out.append(_say(text[at:kept.start()], say))
        out.append(kept.group())
        at = kept.end()
    out.append(_say(text[at:], say))
    return "".join(out)


def _say(prose: str, say: Callable[[str], str | None]) -> str:
    def one(match: re.Match[str]) -> str:
        word = match.group()
        said = say(word)
        if not said:
            return word
        return said[:1].upper() + said[1:] if word[:1].isupper() else said

    return _WORD.sub(one, prose)


def _mark(text: str, target: str) -> str:
    match = _EDGES.match(text)
    assert match is not None
    lead, core, trail = match.groups()
    return f"{lead}[{target}] {core}{trail}" if core else text


def _line(line: str, prose: Callable[[str], str]) -> str:
    """One line of a template or document: its prose translated, its constructs, tags, code
    and markdown markers kept."""
    body = line.rstrip("\n")
    if not body.strip():
        return line
    lead = _MARKERS.match(body)
    start = lead.end() if lead else 0
    rest = body[start:]
    if not _LETTER.search(_KEEP.sub("", rest)):
        return line
    translated = prose(rest) if not _marks(prose) else _mark_first(rest, prose)
    return body[:start] + translated + line[len(body):]


_LETTER = re.compile(r"[^\W\d_]")


def _marks(prose: Callable[[str], str]) -> bool:
    return prose("a").startswith("[")


def _mark_first(text: str, prose: Callable[[str], str]) -> str:
    """The `[xx]` mark before the first stretch of prose outside what is kept."""
    at = 0
    for kept in _KEEP.finditer(text):
        if _LETTER.search(text[at:kept.start()]):
            break
        at = kept.end()
    gap = text[at:]
    skip = len(gap) - len(gap.lstrip())
    return text[:at + skip] + prose("x")[:-1] + text[at + skip:]


# -- word data ------------------------------------------------------------------------------
def _toml(text: str) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    return data if data else None


def _lexicon(source: str, prose: Callable[[str], str]) -> str:
    """A lexicon file: its phrases and the words used as keys translated; the keys the
    shipped languages share (intents, templates, priors...) kept."""
    data = tomllib.loads(source)
    fixed = _shared_keys(source)
    if _marks(prose):
        return f"# {prose('x')[:-1].strip()} (the same words as the source)\n{source}"

    def walk(value: Any, path: tuple[str, ...]) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                name = key if (*path, key) in fixed else prose(key)
                out.setdefault(name, walk(item, (*path, key)))
            return out
        if isinstance(value, list):
            return [walk(item, path) for item in value]
        return prose(value) if isinstance(value, str) and not _CODE_VALUE.match(value) \
            else value

    return tomlkit.dumps(walk(data, ()))


_CODE_VALUE = re.compile(r"^[\d*,/\- ]+$")  # a cron field such as "1-5"


def _shared_keys(source: str) -> set[tuple[str, ...]]:
    """The key paths of the shipped file `source` is, that every shipped language has."""
    for path in sorted(resources_path().glob("lexicon/*/*.toml")):
        if path.read_text(encoding="utf-8") == source:
            shipped = [tomllib.loads(p.read_text(encoding="utf-8"))
                       for p in resources_path().glob(f"lexicon/*/{path.name}")]
            return set.intersection(*(set(_paths(t)) for t in shipped))
    return set(_paths({k: {} for k in tomllib.loads(source)}))


def _paths(table: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for key, value in table.items():
        found.append((*prefix, key))
        if isinstance(value, dict):
            found += _paths(value, (*prefix, key))
    return found


def _planner(data: dict[str, Any], prose: Callable[[str], str]) -> dict[str, Any]:
    """An executor's sentences, phrases (values kept) and argument descriptions."""
    if _marks(prose):  # "[xx]" would read as an optional word: the phrases are marked after
        return {"utterances": [f"{u} [{prose('x')[1:-3]}]" for u in data["utterances"]],
                "slots": data["slots"],
                "inputs": {k: prose(v) for k, v in data.get("inputs", {}).items()}}
    return {"utterances": list(dict.fromkeys(prose(u) for u in data["utterances"])),
            "slots": {slot: {prose(phrase): value for phrase, value in table.items()}
                      for slot, table in data["slots"].items()},
            "inputs": {k: prose(v) for k, v in data.get("inputs", {}).items()}}


def main() -> None:
    """Serve the scripted translator on loopback until Ctrl-C, to add a language by hand:

        .venv/bin/python -m tests.support.fake_translator
        # then, in another terminal, with the three lines it prints exported:
        metnos-prompts add-language fr && metnos-prompts translate-all --lang fr
    """
    import time

    from metnos.testing.llm_server import ScriptedLLM

    with ScriptedLLM() as llm:
        llm.respond_with(fake_translation)
        print("METNOS_LLM_MODEL=openai/scripted", f"METNOS_LLM_API_BASE={llm.api_base}",
              "METNOS_LLM_API_KEY=sk-test", sep="\n", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
