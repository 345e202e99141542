"""Compose first: a chain of admitted executors that closes a proto-mnest's need, found in code.

The pool is a graph over the typed `[inputs]`/`[outputs]` of the admitted, active executors
(quarantined and archived ones are left out): a chain of 1–3 executors whose first takes the
need's `have_kind` as a required input, each later one's required inputs are fillable from
what came before (an earlier output or the original step's arguments, by kind or by name),
and whose last outputs `want_kind`. Shortest first, then lowest total risk, then by names:
the same pool and need always give the same chain. No model is asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import permutations

from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.executors.registry import Registry

MAX_CHAIN = 3
_RISK = {"low": 0, "medium": 1, "high": 2}


@dataclass(frozen=True)
class Need:
    """What a proto-mnest wanted: from `src` (an executor, may be ""), `have_kind` → `want_kind`."""

    src: str
    capability: str
    have_kind: str
    want_kind: str


@dataclass(frozen=True)
class Chain:
    executors: tuple[str, ...]
    risk: int

    def label(self) -> str:
        return " → ".join(self.executors)


def pool(registry: Registry, inactive: Iterable[str] = ()) -> dict[str, Manifest]:
    """The admitted executors still in the active pool, by name."""
    left_out = set(inactive)
    return {spec.name: spec.manifest for spec in registry.admitted if spec.name not in left_out}


def find_chain(need: Need, manifests: dict[str, Manifest]) -> Chain | None:
    """The best chain that closes `need`, or None (no kinds, or nothing closes it)."""
    if not need.have_kind or not need.want_kind:
        return None
    candidates = {n: m for n, m in manifests.items() if n != need.src}
    origin = _origin(need, manifests.get(need.src))
    for length in range(1, MAX_CHAIN + 1):
        found = [chain for names in _orders(candidates, need, length)
                 if (chain := _closes(names, candidates, need, origin)) is not None]
        if found:
            return min(found, key=lambda c: (c.risk, c.executors))
    return None


def _origin(need: Need, src: Manifest | None) -> set[str]:
    """What the original step had: the `have_kind`, and the src's input names and kinds."""
    have = {f"kind:{need.have_kind}"}
    if src is not None:
        for name, spec in src.inputs.items():
            have.add(f"name:{name}")
            if spec.kind:
                have.add(f"kind:{spec.kind}")
    return have


def _orders(candidates: dict[str, Manifest], need: Need,
            length: int) -> Iterable[Sequence[str]]:
    first = sorted(n for n, m in candidates.items() if _takes(m, need.have_kind))
    last = {n for n, m in candidates.items() if _gives(m, need.want_kind)}
    others = sorted(candidates)
    for head in first:
        if length == 1:
            if head in last:
                yield (head,)
            continue
        rest = [n for n in others if n != head]
        for tail in permutations(rest, length - 1):
            if tail[-1] in last:
                yield (head, *tail)


def _closes(names: Sequence[str], manifests: dict[str, Manifest], need: Need,
            origin: set[str]) -> Chain | None:
    available = set(origin)
    for index, name in enumerate(names):
        manifest = manifests[name]
        required = [(field, spec) for field, spec in manifest.inputs.items()
                    if spec.is_required and not spec.host_set]
        if index == 0:  # its have_kind input is filled by the need itself
            required = [(f, s) for f, s in required if s.kind != need.have_kind][:]
        for field, spec in required:
            if f"name:{field}" not in available and not (
                    spec.kind and f"kind:{spec.kind}" in available):
                return None
        for field, out in manifest.outputs.items():
            available.add(f"name:{field}")
            if out.kind:
                available.add(f"kind:{out.kind}")
    return Chain(tuple(names), sum(_RISK[manifests[n].risk] for n in names))


def _takes(manifest: Manifest, kind: str) -> bool:
    return any(spec.kind == kind and spec.is_required and not spec.host_set
               for spec in manifest.inputs.values())


def _gives(manifest: Manifest, kind: str) -> bool:
    return any(out.kind == kind for out in manifest.outputs.values())
