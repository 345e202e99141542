"""The builtin executors' real ToolSpecs (their manifests, as the registry reads them), and
whether a planned step would change anything."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from metnos.features.schedules.planning import plan_timed
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.executors.registry import discover
from metnos.mechanisms.llm.tools import ToolSpec

# the embedded planner's first readings, as the runtime has them (`metnos.faces.wiring`)
FIRST = (plan_timed,)


@lru_cache(maxsize=1)
def manifests() -> dict[str, Manifest]:
    return {spec.name: spec.manifest for spec in discover([resources_path("executors")])}


def builtin_tools(lang: str) -> list[ToolSpec]:
    return [manifest.tool_spec(lang) for manifest in manifests().values()]


def others(lang: str, active: tuple[str, ...] = ("it", "en")) -> dict[str, list[ToolSpec]]:
    """The tools in the other active languages, as the pipeline passes them."""
    return {other: builtin_tools(other) for other in active if other != lang}


def changes(executor: str, args: dict[str, Any]) -> bool:
    """Whether running `executor` with `args` may change state: a side-effecting executor,
    unless an input holds one of its read-only values (lists' action "show")."""
    manifest = manifests()[executor]
    if not manifest.side_effects:
        return False
    for name, spec in manifest.inputs.items():
        read_only = getattr(spec, "read_only", None)
        if read_only and args.get(name, spec.default) in read_only:
            return False
    return True
