"""Which executors exist, and which of them may run.

`discover` scans folders for `manifest.toml` and parses them **without importing any executor
code** (Home Assistant's integration loader does the same). `admit` then checks each one's
signature: only signed, untampered executors reach the `Registry`; the others are listed in
`Registry.refused` with an i18n key saying why (a synt candidate, a folder holding
`CANDIDATE.json`, is refused as awaiting the owner's signature, signed or not; a copy older
than the owner's newest signature of it, as rolled back: `metnos.mechanisms.executors.versions`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from metnos.ground import i18n
from metnos.ground.errors import ExecutorNotFound, ManifestError, SignatureError
from metnos.ground.i18n.planner_words import planner_text
from metnos.ground.i18n.store import affinity_words
from metnos.ground.keys import load_public_key
from metnos.mechanisms.executors import versions
from metnos.mechanisms.executors.manifest import (
    MANIFEST_FILE,
    Manifest,
    manifest_bytes,
    parse_manifest,
)
from metnos.mechanisms.executors.signing import SignedFacts, signature_path, verify_executor
from metnos.mechanisms.llm.tools import ToolSpec

if TYPE_CHECKING:
    from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

KEY_PURPOSE = "executors"
RESERVED_NAMES = frozenset({"wish"})  # the loop's own tools (metnos.features.mnestoma.wish)
# a folder the synt generated, waiting for the owner (`metnos synt sign`): never admitted
CANDIDATE_FILE = "CANDIDATE.json"


@dataclass(frozen=True)
class ExecutorSpec:
    """A discovered executor: its parsed manifest, its folder, and the hash of the bytes parsed."""

    manifest: Manifest
    folder: Path
    manifest_sha256: str

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def entry_path(self) -> Path:
        return self.folder / self.manifest.entry


class Refusal(NamedTuple):
    """An executor that will not run: its name, the i18n key of the reason, and its variables."""

    name: str
    key: str
    vars: dict[str, Any]


class Reason(NamedTuple):
    """Why one executor was refused: an i18n key and its variables."""

    key: str
    vars: dict[str, Any]


class Registry:
    """The admitted executors (by name), the refused ones with their reasons, and what each
    admitted executor's signature vouches for (`signed`, e.g. to re-check the code hash
    right before a run)."""

    def __init__(
        self,
        admitted: Iterable[ExecutorSpec] = (),
        refused: Iterable[Refusal] = (),
        signed: dict[str, SignedFacts] | None = None,
    ) -> None:
        self._by_name: dict[str, ExecutorSpec] = {spec.name: spec for spec in admitted}
        self.refused: list[Refusal] = list(refused)
        self.signed: dict[str, SignedFacts] = dict(signed or {})

    @property
    def admitted(self) -> tuple[ExecutorSpec, ...]:
        """The admitted executors, sorted by name."""
        return tuple(self._by_name[name] for name in self.names())

    def find(self, name: str) -> ExecutorSpec | None:
        return self._by_name.get(name)

    def changes_something(self, name: str) -> bool:
        """Whether executor `name` changes something (its manifest's `side_effects`); one
        that is not admitted is taken to."""
        spec = self._by_name.get(name)
        return spec is None or spec.manifest.side_effects

    def get(self, name: str) -> ExecutorSpec:
        spec = self._by_name.get(name)
        if spec is None:
            raise ExecutorNotFound(executor=name)
        return spec

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def tool_specs(self, lang: str) -> list[ToolSpec]:
        """Every admitted executor as a planner tool in `lang`, sorted by name."""
        return [_tool_spec(spec.manifest, lang) for spec in self.admitted]

    def refusal(self, name: str) -> Reason | None:
        """Why `name` was refused (the first reason), or None."""
        found = next((r for r in self.refused if r.name == name), None)
        return Reason(found.key, found.vars) if found else None

    def add(self, spec: ExecutorSpec, facts: SignedFacts) -> None:
        self._by_name[spec.name] = spec
        self.signed[spec.name] = facts

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[ExecutorSpec]:
        return iter(self.admitted)

    def __len__(self) -> int:
        return len(self._by_name)


def discover_all(dirs: Iterable[Path]) -> tuple[list[ExecutorSpec], list[Refusal]]:
    """Scan `dirs` in order; earlier dirs win a name clash. Returns (specs, problems)."""
    specs: dict[str, ExecutorSpec] = {}
    problems: list[Refusal] = []
    for base in dirs:
        for folder in _candidate_folders(base):
            try:
                spec = _read_spec(folder)
            except (ManifestError, SignatureError) as exc:
                problems.append(Refusal(folder.name, exc.key, exc.vars))
                continue
            kept = specs.get(spec.name)
            if kept is not None:
                problems.append(
                    Refusal(
                        spec.name,
                        "ERR_EXECUTOR_DUPLICATE",
                        {"name": spec.name, "folder": str(folder), "kept": str(kept.folder)},
                    )
                )
                continue
            specs[spec.name] = spec
    for problem in problems:
        log.warning("executors.refused name=%s key=%s vars=%s", *problem)
    return list(specs.values()), problems


def discover(dirs: Iterable[Path]) -> list[ExecutorSpec]:
    """The executors found in `dirs`; broken manifests are logged and skipped."""
    return discover_all(dirs)[0]


def admit(
    specs: Iterable[ExecutorSpec],
    public_key: Ed25519PublicKey,
    signatures_dir: Path,
    problems: Iterable[Refusal] = (),
    marks: dict[str, versions.Mark] | None = None,
) -> Registry:
    """Verify each spec's signature; the valid ones are admitted, the others refused. `marks`
    (`metnos.mechanisms.executors.versions`): a valid signature older than its executor's mark is
    refused as rolled back (ERR_EXECUTOR_ROLLED_BACK)."""
    registry = Registry(refused=list(problems))
    marks = marks or {}
    for spec in specs:
        if spec.name in RESERVED_NAMES:  # a built-in tool of the loop has this name
            log.warning("executors.refused name=%s key=ERR_EXECUTOR_NAME_RESERVED", spec.name)
            registry.refused.append(Refusal(spec.name, "ERR_EXECUTOR_NAME_RESERVED",
                                            {"name": spec.name}))
            continue
        if (spec.folder / CANDIDATE_FILE).exists():
            log.warning("executors.refused name=%s key=ERR_EXECUTOR_CANDIDATE", spec.name)
            registry.refused.append(Refusal(spec.name, "ERR_EXECUTOR_CANDIDATE",
                                            {"name": spec.name}))
            continue
        try:
            sig = signature_path(signatures_dir, spec.name)
            facts = verify_executor(spec.folder, public_key, sig)
            if facts.manifest_sha256 != spec.manifest_sha256:  # changed since it was parsed
                raise SignatureError("ERR_EXECUTOR_SIGNATURE_INVALID", name=spec.name)
            mark = marks.get(spec.name)
            if mark is not None and versions.rolled_back(facts, mark):
                raise SignatureError("ERR_EXECUTOR_ROLLED_BACK", name=spec.name,
                                     version=facts.version, signed_version=mark.version)
        except (SignatureError, ManifestError) as exc:
            log.warning("executors.refused name=%s key=%s", spec.name, exc.key)
            registry.refused.append(Refusal(spec.name, exc.key, exc.vars))
            continue
        registry.add(spec, facts)
    return registry


def executor_dirs(settings: Settings) -> list[Path]:
    """Where executors live, in precedence order: the repository's, then the owner's."""
    return [settings.resources_root / "executors", settings.home / "executors"]


def signatures_dir(settings: Settings) -> Path:
    return settings.home / "signatures"


def load_registry(settings: Settings) -> Registry:
    """Discover the executors of the repository and of METNOS_HOME, and admit the signed ones."""
    specs, problems = discover_all(executor_dirs(settings))
    return admit_with_settings(specs, settings, problems)


def admit_with_settings(
    specs: Iterable[ExecutorSpec], settings: Settings, problems: Iterable[Refusal] = ()
) -> Registry:
    """`admit` with the instance's `executors` public key, signatures folder and high-water
    marks; a rolled-back executor's refusal leaves an audit line."""
    try:
        public_key = load_public_key(settings.keys_dir, KEY_PURPOSE)
        marks = versions.read_marks(versions.marks_path(settings.keys_dir))
    except SignatureError as exc:
        refused = list(problems) + [Refusal(spec.name, exc.key, exc.vars) for spec in specs]
        return Registry(refused=refused)
    registry = admit(specs, public_key, signatures_dir(settings), problems, marks)
    _confine_network(registry, settings.resources_root / "executors")
    for refusal in registry.refused:
        if refusal.key == "ERR_EXECUTOR_ROLLED_BACK":
            versions.audit_line(settings, "executors.admit", "deny", reason=refusal.key,
                                outcome=f"{refusal.name} {refusal.vars['version']} < "
                                        f"{refusal.vars['signed_version']}")
    return registry


def _confine_network(registry: Registry, builtin_dir: Path) -> None:
    """The host's network is for the built-ins pinned by BUILTIN.lock (web_fetch checks every
    address itself); any other admitted executor asking for the network without an egress
    runs with `egress = "none"` (an empty network namespace), still a network tool for the
    Laws. Issue 25: a synt candidate, once signed, must not reach loopback services."""
    from metnos.mechanisms.executors.builtin import (  # builtin imports this module
        LOCK_FILE,
        read_lock,
    )

    try:
        lock = read_lock(builtin_dir / LOCK_FILE)
    except SignatureError:
        lock = {}
    for spec in registry.admitted:
        sandbox = spec.manifest.sandbox
        if not sandbox.network or sandbox.egress is not None:
            continue
        facts = registry.signed[spec.name]
        pinned = lock.get(spec.name) == {"version": facts.version, "code_sha256":
                                         facts.code_sha256,
                                         "manifest_sha256": facts.manifest_sha256}
        if pinned and spec.folder.parent == builtin_dir:
            continue
        log.info("executors.confined name=%s network=none (not a pinned built-in)", spec.name)
        manifest = spec.manifest.model_copy(
            update={"sandbox": sandbox.model_copy(update={"egress": "none"})})
        registry.add(replace(spec, manifest=manifest), facts)


def _tool_spec(manifest: Manifest, lang: str) -> ToolSpec:
    """`manifest.tool_spec(lang)`; when the manifest has no description in `lang`, the reviewed
    layer-3 messages `EX_DESCRIPTION_<name>` and `EX_AFFINITY_<name>` of exactly that
    language, if any (SPEC §9.3), and its reviewed planner words (sentences, phrases, argument
    descriptions: `metnos.ground.i18n.planner_words`)."""
    tool = manifest.tool_spec(lang)
    base = lang.replace("_", "-").split("-")[0].lower()
    if lang in manifest.description or base in manifest.description:
        return tool
    tool = _with_planner_words(tool, planner_text(manifest.name, base))
    text = i18n.lookup(f"EX_DESCRIPTION_{manifest.name}", lang)
    if not isinstance(text, str) or not text:
        return tool
    words = i18n.lookup(f"EX_AFFINITY_{manifest.name}", lang)
    affinity = tuple(affinity_words(words)) if isinstance(words, str) else tool.affinity
    return replace(tool, description=text, affinity=affinity)


def _with_planner_words(tool: ToolSpec, words: dict[str, Any] | None) -> ToolSpec:
    if not words:
        return tool
    properties = {
        name: {**schema, "description": str(words.get("inputs", {}).get(name)
                                            or schema.get("description", ""))}
        for name, schema in tool.parameters.get("properties", {}).items()}
    slots = words.get("slots", {})
    return replace(
        tool, parameters={**tool.parameters, "properties": properties},
        utterances=tuple(str(u) for u in words.get("utterances", ())),
        slot_values={slot: dict(table) for slot, table in slots.items()
                     if isinstance(table, dict)})


def _candidate_folders(base: Path) -> list[Path]:
    if not base.is_dir():
        return []
    return sorted(
        child
        for child in base.iterdir()
        if not child.name.startswith((".", "_")) and (child / MANIFEST_FILE).exists()
    )


def _read_spec(folder: Path) -> ExecutorSpec:
    path = folder / MANIFEST_FILE
    if folder.is_symlink() or path.is_symlink():
        raise SignatureError("ERR_EXECUTOR_SYMLINK", name=folder.name, path=str(path))
    try:
        data = manifest_bytes(path)
    except OSError as exc:
        raise ManifestError(name=folder.name, path=str(path), detail=str(exc)) from exc
    manifest = parse_manifest(path, data)
    return ExecutorSpec(manifest, folder, hashlib.sha256(data).hexdigest())
