"""The embedded planner's words of each executor, as one layer (issue 16).

Without a model, Metnos understands a request through each executor's hassil sentences
(`[utterances]`), its spoken phrases (`[slots]`) and, for a model, its arguments'
descriptions (`[inputs.<name>] description`). A value of this layer is those three for one
executor in one language: `{"utterances": [...], "slots": {slot: {phrase: value}},
"inputs": {input: description}}`.

The languages the signed manifest has are read from it (a promotion into one of them
rewrites the manifest, which must then be signed again, like layer 2). Any other language's
reviewed text is `planner/<lang>/<executor>.json` in the resources folder, read by the
registry (`metnos.ground.i18n.planner_words`); the record and the candidates are
`planner/lang_state.json`.

A candidate must parse with hassil, fill the same inputs as the source, keep the slot names
and the slot values every language shares (the verbs of `lists` all mean "add", "remove"...),
and each of its sentences must still be understood, as this executor, from example sentences
sampled from it (`check_planner`).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import tomlkit

from metnos.features.languages.checks import Problem, check_text
from metnos.features.languages.layers import MANIFEST_FILE, STATE_FILE, RecordedLayer
from metnos.features.languages.resources import Candidate, atomic_write
from metnos.ground.i18n.planner_words import PLANNER_DIR, read_words
from metnos.ground.i18n.textnorm import value_hash

MAX_SAMPLES = 8  # example sentences sampled from each template


class PlannerLayer(RecordedLayer):
    name: ClassVar[str] = "planner"
    kind: ClassVar[str] = "planner"

    def __init__(self, root: Path, executor_dirs: Iterable[Path], languages: Iterable[str],
                 default_source: str) -> None:
        super().__init__(languages, default_source, root / PLANNER_DIR / STATE_FILE)
        self.dir = root / PLANNER_DIR
        self._folders: dict[str, Path] = {}
        for base in executor_dirs:
            for manifest in sorted(base.glob(f"*/{MANIFEST_FILE}")) if base.is_dir() else []:
                self._folders.setdefault(manifest.parent.name, manifest.parent)
        self._manifests: dict[str, dict[str, Any]] = {}

    # -- reading ---------------------------------------------------------------------------
    def manifest(self, name: str) -> dict[str, Any]:
        if name not in self._manifests:
            with (self._folders[name] / MANIFEST_FILE).open("rb") as fh:
                self._manifests[name] = tomllib.load(fh)
        return self._manifests[name]

    def resources(self) -> list[str]:
        return sorted(name for name in self._folders
                      if self.manifest(name).get("utterances") or self.manifest(name).get(
                          "inputs"))

    def own_languages(self, name: str) -> list[str]:
        """The languages the signed manifest has (those of its description)."""
        return sorted(self.manifest(name).get("description", {}))

    def text(self, name: str, lang: str) -> dict[str, Any] | None:
        if lang in self.own_languages(name):
            return manifest_words(self.manifest(name), lang)
        path = self.path(name, lang)
        return read_words(path) if path.is_file() else None

    def path(self, name: str, lang: str) -> Path:
        return self.dir / lang / f"{name}.json"

    def candidate(self, name: str, lang: str) -> Candidate | None:
        meta = self._meta(name, lang)
        if not isinstance(meta, Mapping) or "value" not in meta:
            return None
        return Candidate.from_meta(meta["value"], meta)

    def problems(self, name: str, source: Any, value: Any) -> list[Problem]:
        return check_planner(source, value, self.texts(name))

    # -- writing ---------------------------------------------------------------------------
    def put_candidate(self, name: str, lang: str, candidate: Candidate) -> None:
        self._set_meta(name, lang, {**candidate.meta(), "value": candidate.value})

    def drop_candidate(self, name: str, lang: str) -> None:
        self._drop_meta(name, lang)

    def promote(self, name: str, lang: str, value: Any) -> list[str]:
        if lang not in self.own_languages(name):
            atomic_write(self.path(name, lang),
                         json.dumps(value, ensure_ascii=False, indent=2) + "\n")
            return []
        self._rewrite_manifest(name, lang, value)
        return [f"manifest_resign:{name}"]

    def _rewrite_manifest(self, name: str, lang: str, value: Mapping[str, Any]) -> None:
        """A language the signed manifest has: its sentences, phrases and input descriptions
        are rewritten in place (comments kept); the manifest must be signed again."""
        path = self._folders[name] / MANIFEST_FILE
        document = tomlkit.parse(path.read_text(encoding="utf-8"))
        if value.get("utterances"):
            utterances = document.setdefault("utterances", tomlkit.table())
            utterances[lang] = list(value["utterances"])
        for slot, phrases in value.get("slots", {}).items():
            table = tomlkit.inline_table()
            table.update(dict(phrases))
            document["slots"][slot][lang] = table
        for field, text in value.get("inputs", {}).items():
            document["inputs"][field]["description"][lang] = text
        atomic_write(path, tomlkit.dumps(document))
        self._manifests.pop(name, None)


def manifest_words(manifest: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """The planner's words of a manifest (its raw TOML table) in `lang`."""
    slots = {slot: dict(table[lang]) for slot, table in manifest.get("slots", {}).items()
             if lang in table}
    inputs = {field: spec["description"][lang]
              for field, spec in manifest.get("inputs", {}).items()
              if isinstance(spec.get("description"), Mapping) and lang in spec["description"]}
    return {"utterances": list(manifest.get("utterances", {}).get(lang, [])),
            "slots": slots, "inputs": inputs}


# -- checks ----------------------------------------------------------------------------------
def check_planner(source: Any, candidate: Any, others: Iterable[Any] = ()) -> list[Problem]:
    """The checks of a planner candidate against its source (see the module doc)."""
    if not isinstance(candidate, Mapping) or not isinstance(source, Mapping):
        return [Problem("shape", "not an object with utterances, slots and inputs")]
    utterances = candidate.get("utterances", [])
    slots = candidate.get("slots", {})
    inputs = candidate.get("inputs", {})
    if not (isinstance(utterances, list) and all(isinstance(u, str) for u in utterances)
            and isinstance(slots, Mapping) and isinstance(inputs, Mapping)
            and all(isinstance(t, Mapping) for t in slots.values())):
        return [Problem("shape", "utterances must be a list of strings, slots and inputs "
                                 "objects")]
    problems = _input_problems(source.get("inputs", {}), inputs)
    problems += _slot_problems(source.get("slots", {}), slots, list(others))
    if source.get("utterances") and not utterances:
        problems.append(Problem("utterances", "no sentence left"))
    problems += _sentence_problems(source, candidate)
    if value_hash(dict(source)) == value_hash(dict(candidate)):
        problems.append(Problem("unchanged", "the candidate is identical to the source"))
    return problems


def _input_problems(source: Mapping[str, str], candidate: Mapping[str, Any]) -> list[Problem]:
    problems = _same_keys("inputs", source, candidate)
    for field in sorted(set(source) & set(candidate)):
        text = candidate[field]
        if not isinstance(text, str) or not text.strip():
            problems.append(Problem("inputs", f"{field}: an empty description"))
            continue
        problems += [Problem(p.check, f"{field}: {p.detail}", p.enforced)
                     for p in check_text(source[field], text) if p.check != "unchanged"]
    return problems


def _same_keys(what: str, source: Mapping[str, Any],
               candidate: Mapping[str, Any]) -> list[Problem]:
    if set(source) == set(candidate):
        return []
    return [Problem(what, f"{what} {sorted(candidate)}, the source has {sorted(source)}")]


def _slot_problems(source: Mapping[str, Mapping[str, Any]], candidate: Mapping[str, Any],
                   others: list[Any]) -> list[Problem]:
    problems = _same_keys("slots", source, candidate)
    for slot in sorted(set(source) & set(candidate)):
        phrases = candidate[slot]
        if not phrases:
            problems.append(Problem("slots", f"{slot}: no phrase"))
            continue
        shared = [set(map(json.dumps, o.get("slots", {}).get(slot, {}).values()))
                  for o in others if isinstance(o, Mapping)]
        fixed = set(map(json.dumps, source[slot].values()))
        if shared and all(values == fixed for values in shared):  # the same in every language
            new = sorted(set(map(json.dumps, phrases.values())) - fixed)
            if new:
                problems.append(Problem("slots", f"{slot}: values {', '.join(new)} are not "
                                                 "among the source's"))
    return problems


def _sentence_problems(source: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[Problem]:
    """Each template parses, references known inputs and slots, fills the source's inputs,
    and is understood (as this executor) from sentences sampled from it."""
    from metnos.mechanisms.executors._utterances import check_utterances, filled_inputs

    inputs = set(source.get("inputs", {})) | filled_inputs(source.get("utterances", []))
    slots = {slot: {"xx": table} for slot, table in candidate.get("slots", {}).items()}
    templates = list(candidate.get("utterances", []))
    try:
        check_utterances({"xx": tuple(templates)}, inputs, slots)
    except ValueError as exc:
        return [Problem("utterances", str(exc).replace("utterances.xx ", ""))]
    want, got = filled_inputs(source.get("utterances", [])), filled_inputs(templates)
    if want - got:
        return [Problem("utterances", "no sentence fills " + ", ".join(sorted(want - got)))]
    from metnos.mechanisms.llm.embedded import misunderstood

    return [Problem("utterances", f"{template!r} is not understood from {example!r}")
            for template, example in misunderstood(templates, candidate.get("slots", {}),
                                                   MAX_SAMPLES)]
