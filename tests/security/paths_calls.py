"""The executors under attack and the arguments of the attacker's calls, from the manifests.

Nothing here names an executor: a new folder under `executors/` is attacked as soon as its
manifest parses (whether it runs depends on it being admitted: see `admitted`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.manifest import InputSpec, Manifest
from metnos.mechanisms.executors.registry import discover

# a text input gets a command that leaves a trace if anything ever runs it (shell_run)
FILLER_TEXT = "touch pwned-by-attack.txt"
# a valid value for an input whose host check would refuse the filler text before the policy
# is reached (the attack is on the policy, not on the argument's shape)
CHECKED_FILLERS = {"archive_destination": "attack", "cadence": "every Monday at 8"}


@cache
def repo_manifests() -> tuple[Manifest, ...]:
    """Every executor of the repository, parsed from its manifest (no code imported)."""
    return tuple(sorted((spec.manifest for spec in discover([resources_path("executors")])),
                        key=lambda m: m.name))


def manifest(name: str) -> Manifest:
    return next(m for m in repo_manifests() if m.name == name)


def path_targets() -> list[tuple[str, str]]:
    """(executor, path input) for every `type = "path"` input a planner may pass (an input
    the host sets, a list's file, is refused whole: `test_a_host_set_input_is_refused`).
    An executor that runs on another machine (`runs_on`) is left out: its paths name that
    machine's files, which this server cannot resolve, so the laptop's worker refuses them
    (attacked in tests/remote/test_worker.py)."""
    return [(m.name, name) for m in repo_manifests() for name in m.path_inputs()
            if not m.inputs[name].host_set and m.runs_on is None]


def host_set_targets() -> list[tuple[str, str]]:
    """(executor, input) for every input only the host may set."""
    return [(m.name, name) for m in repo_manifests()
            for name, spec in m.inputs.items() if spec.host_set]


def filler(spec: InputSpec) -> Any:
    """A valid value for a required non-path input, from its manifest type."""
    if spec.enum:
        return spec.enum[0]
    if spec.check in CHECKED_FILLERS:
        return CHECKED_FILLERS[spec.check]
    if spec.type in ("integer", "number"):
        return spec.minimum if spec.minimum is not None else 1
    return {"string": FILLER_TEXT, "boolean": False, "array": []}.get(spec.type, "x")


def call_args(m: Manifest, paths: dict[str, Any]) -> dict[str, Any]:
    """Arguments for `m`: `paths` for its path inputs, a filler for every other required one."""
    args = dict(paths)
    for name, spec in m.inputs.items():
        if name not in args and spec.type != "path" and spec.is_required:
            args[name] = filler(spec)
    return args
