"""What a candidate must pass, in code, before a model reviews it and before anyone is asked.

- the manifest parses with the real `parse_manifest`, takes the need's `have_kind` as a
  required input and outputs its `want_kind` (when the need names them), declares no host
  effect, no `account` (the host would hand it the mail password) and no `runs_on`;
- the profile is sane: no network unless the spec needs it, writes only for an executor with
  side effects, no host packages, at most 60 s and 1024 MB;
- the code is one stdlib `main.py` under `MAX_CODE_BYTES` that compiles and imports none of
  `FORBIDDEN_MODULES` (network modules only with network) nor calls `os.system`/`os.exec*`/
  `os.fork`/`os.popen`/`os.spawn*`;
- not a **near-duplicate** of an admitted executor: same input and output kinds and a token
  Jaccard similarity of the English descriptions' words longer than three letters (every
  manifest has English) at or above `DUPLICATE_JACCARD` (0.6: two
  descriptions of one tool written apart share most content words; two tools with the same
  kinds but another job share little: the built-in executors pairwise share at most 0.27,
  measured: notify and reminder_set).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

from metnos.features.synt.compose import Need
from metnos.features.synt.stages import Invalid
from metnos.mechanisms.executors.manifest import NAME_RE, Manifest
from metnos.mechanisms.sandbox.profile import SandboxProfile

MAX_CODE_BYTES = 32 * 1024
MAX_CASES = 10
MAX_FIXTURE_BYTES = 256 * 1024
DUPLICATE_JACCARD = 0.6
FORBIDDEN_MODULES = frozenset({"subprocess", "socket", "ctypes", "multiprocessing", "pty",
                               "importlib", "signal", "resource", "shutil"})
NETWORK_MODULES = frozenset({"urllib", "http", "ssl", "ftplib", "smtplib", "asyncio"})
_FORBIDDEN_CALLS = re.compile(r"^(system|popen|fork|forkpty|exec\w*|spawn\w*|kill\w*)$")
_WORD = re.compile(r"[a-z0-9]+")


def spec(answer: dict[str, Any], taken: Iterable[str]) -> dict[str, Any]:
    name = answer.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise Invalid("name must be lower_snake_case, 2-41 characters")
    if name in set(taken):
        raise Invalid(f"an executor named {name!r} exists already: choose another name")
    description = answer.get("description")
    if not isinstance(description, dict) or not all(
            isinstance(description.get(lang), str) and description[lang] for lang in ("it", "en")):
        raise Invalid("description must be {\"it\": ..., \"en\": ...}")
    return {"name": name, "description": {k: str(v) for k, v in description.items()},
            "network": answer.get("network") is True}


def manifest(parsed: Manifest, need: Need, name: str) -> Manifest:
    if parsed.name != name:
        raise Invalid(f"name must be {name!r}")
    if parsed.effect is not None:
        raise Invalid("a generated executor declares no host effect")
    if parsed.account is not None or parsed.runs_on is not None:  # the host's credentials
        raise Invalid("a generated executor gets no account and runs on this server")
    if need.have_kind and not any(s.kind == need.have_kind and s.is_required and not s.host_set
                                  for s in parsed.inputs.values()):
        raise Invalid(f"a required input must have kind {need.have_kind!r}")
    if need.want_kind and not any(o.kind == need.want_kind for o in parsed.outputs.values()):
        raise Invalid(f"an output must have kind {need.want_kind!r}")
    return parsed


def profile(answer: dict[str, Any], needs_network: bool, side_effects: bool) -> SandboxProfile:
    try:
        value = SandboxProfile.model_validate(answer)
    except ValueError as exc:
        raise Invalid(f"not a valid sandbox profile: {exc}") from exc
    if value.network and not needs_network:
        raise Invalid("network must be false: the spec does not need it")
    if value.write and not side_effects:
        raise Invalid("write must be empty: the executor has no side effects")
    if value.python_packages or value.trash:
        raise Invalid("python_packages and trash are not for generated executors")
    if value.timeout_s > 60 or value.memory_mb > 1024:
        raise Invalid("at most timeout_s 60 and memory_mb 1024")
    return value


def code(answer: dict[str, Any], network: bool) -> str:
    text = answer.get("main_py")
    if not isinstance(text, str) or not text.strip():
        raise Invalid("main_py must be the whole program as a string")
    problems = code_problems(text, network)
    if problems:
        raise Invalid("; ".join(problems))
    return text


def code_problems(text: str, network: bool) -> list[str]:
    """What is wrong with `main.py` (empty: nothing)."""
    if len(text.encode()) > MAX_CODE_BYTES:
        return [f"main.py is larger than {MAX_CODE_BYTES} bytes"]
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [f"main.py does not compile: {exc.msg} (line {exc.lineno})"]
    problems = []
    banned = FORBIDDEN_MODULES | (set() if network else NETWORK_MODULES)
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        problems += [f"imports {n}" for n in names if n.split(".")[0] in banned]
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "os" and _FORBIDDEN_CALLS.match(node.attr)):
            problems.append(f"uses os.{node.attr}")
        if isinstance(node, ast.Name) and node.id in {"__import__", "eval", "exec"}:
            problems.append(f"uses {node.id}")
    return sorted(set(problems))


def cases(answer: dict[str, Any]) -> list[dict[str, Any]]:
    found = answer.get("cases")
    if not isinstance(found, list) or not 1 <= len(found) <= MAX_CASES:
        raise Invalid(f"cases must be a list of 1 to {MAX_CASES} test cases")
    checked = []
    for case in found:
        if not isinstance(case, dict) or not isinstance(case.get("args"), dict) \
                or not isinstance(case.get("expect"), dict) or not case["expect"]:
            raise Invalid("each case is {\"args\": {...}, \"expect\": {field: value}, "
                          "\"files\": {path: text}}")
        files = case.get("files") or {}
        if not isinstance(files, dict) or any(
                not isinstance(k, str) or not isinstance(v, (str, dict)) for k, v in files.items()):
            raise Invalid("files maps a workspace-relative path to its text or {\"base64\": ...}")
        checked.append({"args": case["args"], "expect": case["expect"], "files": files})
    return checked


def near_duplicate(candidate: Manifest, admitted: Iterable[Manifest]) -> str | None:
    """The admitted executor `candidate` nearly duplicates, or None."""
    kinds = _kinds(candidate)
    words = _words(candidate.description.get("en", ""))
    for other in admitted:
        if _kinds(other) != kinds:
            continue
        if jaccard(words, _words(other.description.get("en", ""))) >= DUPLICATE_JACCARD:
            return other.name
    return None


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _kinds(m: Manifest) -> tuple[frozenset[str], frozenset[str]]:
    return (frozenset(s.kind for s in m.inputs.values() if s.kind),
            frozenset(o.kind for o in m.outputs.values() if o.kind))


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3}  # no list of stop words
