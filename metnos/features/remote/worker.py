"""The laptop's side of a remote step: everything is checked again here, against this
machine's own METNOS_HOME (its workspace, its copy of the executors, the keys it trusts).

`handle(request)` is what a run of the `remote-step/<pool>` deployment does on the worker:
- the executor must be admitted by this machine's registry (manifest and code signed with the
  trusted `executors` key; the code hash checked again right before the run) and meant for
  this place (`runs_on`);
- the arguments are validated against its manifest, and every path is resolved inside this
  machine's workspace, the forbidden paths refused (`metnos.mechanisms.policy`);
- it runs only in the bubblewrap sandbox (`metnos.mechanisms.sandbox.run_sandboxed`).

Phases: `prepare` plans the batch in the sandbox (read only) and returns, for each file,
(original path, new path, size, SHA-256) hashed here; `apply` renames only a batch that
carries the server's signature over that record and whose files still have the recorded
size and hash; `undo` moves back each file that still has them, and names the others.
The reply is a small JSON object, `{"ok": true, ...}` or `{"ok": false, "key", "vars"}`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from metnos.features.remote import record
from metnos.ground import keys
from metnos.ground.errors import MetnosError, ModelRetryError, PolicyDenied
from metnos.ground.fdpaths import open_workspace
from metnos.ground.reversibility import Walker, valid_action_id
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.executors.registry import ExecutorSpec, load_registry
from metnos.mechanisms.executors.signing import code_hash
from metnos.mechanisms.policy.args import resolve_path_args, validate_args
from metnos.mechanisms.policy.paths import resolve_in_workspace
from metnos.mechanisms.sandbox import SandboxRequest, run_sandboxed

SERVER_KEY = "server"  # keys/server.pub: the server's audit public key, given at enrolment


class Refused(MetnosError, PermissionError):
    key = "ERR_REMOTE_REFUSED_THERE"


async def handle(request: dict[str, Any], settings: Settings | None = None) -> dict[str, Any]:
    settings = settings or get_settings()
    try:
        phase, action_id = request.get("phase"), request.get("action_id")
        if phase not in ("prepare", "apply", "undo") or not valid_action_id(action_id):
            raise Refused("ERR_REMOTE_REQUEST_INVALID")
        spec = admitted(settings, str(request.get("executor")), str(request.get("place")))
        args = checked_args(settings, spec, request.get("args"))
        if phase == "prepare":
            return {"ok": True, **await prepare(settings, spec, args, str(action_id))}
        manifest = record.verify(request.get("record"), keys.load_public_key(
            settings.keys_dir, SERVER_KEY), str(action_id))
        if manifest["executor"] != spec.name or manifest["folder"] != args.get("folder"):
            raise Refused("ERR_REMOTE_RECORD_INVALID", detail="another batch")
        if phase == "apply":
            return {"ok": True, **await apply(settings, spec, args, manifest)}
        return {"ok": True, **await undo(settings, spec, args, manifest)}
    except (MetnosError, ModelRetryError, PolicyDenied) as exc:
        return {"ok": False, "key": exc.key, "vars": exc.vars}


def admitted(settings: Settings, name: str, place: str) -> ExecutorSpec:
    """The executor as this machine's registry admits it, unchanged since it was signed."""
    registry = load_registry(settings)
    spec = registry.find(name)
    if spec is None:
        reason = registry.refusal(name)
        key, vars = reason if reason is not None else ("ERR_EXECUTOR_NOT_FOUND", {})
        raise Refused(key, **{"executor": name, **vars})
    if spec.manifest.runs_on != place:
        raise Refused("ERR_REMOTE_WRONG_PLACE", executor=name, place=place)
    if code_hash(spec.folder) != registry.signed[name].code_sha256:
        raise Refused("ERR_EXECUTOR_CODE_CHANGED", name=name)
    return spec


def checked_args(settings: Settings, spec: ExecutorSpec, args: Any) -> dict[str, Any]:
    schema = spec.manifest.input_schema()
    home = Path(os.path.expanduser("~"))

    def resolve(raw: str) -> str:
        return resolve_in_workspace(raw, settings.workspace, home_dir=home,
                                    metnos_home=settings.home)

    return resolve_path_args(schema, validate_args(schema, args, executor=spec.name), resolve)


async def sandboxed(settings: Settings, spec: ExecutorSpec, args: dict[str, Any],
                    action_id: str) -> dict[str, Any]:
    result = await run_sandboxed(SandboxRequest(
        exec_dir=spec.folder, entry=spec.manifest.entry, profile=spec.manifest.sandbox,
        workspace=settings.workspace, args=args, action_id=action_id,
        max_output_bytes=settings.sandbox.max_output_bytes,
        max_processes=settings.sandbox.max_processes))
    if not result.ok or result.result is None:
        raise Refused(result.error_key or "ERR_SANDBOX_FAILED", **result.error_vars)
    return result.result


def states(settings: Settings, paths: list[str]) -> dict[str, dict[str, Any]]:
    """Kind, size and SHA-256 of each path, read beneath the workspace descriptor (links
    never followed)."""
    walker = Walker(None, 0)
    fd = open_workspace(settings.workspace)
    try:
        return {path: walker.scan(fd, path) for path in paths}
    finally:
        os.close(fd)


def same(state: dict[str, Any], item: dict[str, Any]) -> bool:
    return bool(state["kind"] == "file" and state["size"] == item["size"]
                and state["sha256"] == item["sha256"])


async def prepare(settings: Settings, spec: ExecutorSpec, args: dict[str, Any],
                  action_id: str) -> dict[str, Any]:
    planned = await sandboxed(settings, spec, {**args, "phase": "plan"}, action_id)
    pairs = planned.get("renames")
    if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 for p in pairs):
        raise Refused("ERR_REMOTE_REPLY_INVALID")
    found = states(settings, [str(src) for src, _ in pairs])
    items = []
    for src, dst in pairs:
        state = found[str(src)]
        if state["kind"] != "file":
            raise Refused("ERR_FILE_NOT_FOUND", path=str(src))
        items.append({"src": src, "dst": dst, "size": state["size"], "sha256": state["sha256"]})
    return {"folder": args["folder"], "items": record.checked_items(items, args["folder"])}


async def apply(settings: Settings, spec: ExecutorSpec, args: dict[str, Any],
                manifest: dict[str, Any]) -> dict[str, Any]:
    items = manifest["items"]
    found = states(settings, [i["src"] for i in items])
    changed = [i["src"] for i in items if not same(found[i["src"]], i)]
    if changed:  # the files are no longer what the server recorded: nothing moves
        raise Refused("ERR_REMOTE_CHANGED", path=changed[0], count=len(changed))
    done = await sandboxed(settings, spec, {
        **args, "phase": "apply", "sources": [i["src"] for i in items],
        "targets": [i["dst"] for i in items]}, manifest["action_id"])
    return {"result": {"folder": manifest["folder"], "renamed": done.get("renamed", 0)}}


async def undo(settings: Settings, spec: ExecutorSpec, args: dict[str, Any],
               manifest: dict[str, Any]) -> dict[str, Any]:
    items = manifest["items"]
    found = states(settings, [p for i in items for p in (i["src"], i["dst"])])
    back = [i for i in items if same(found[i["dst"]], i) and found[i["src"]]["kind"] == "missing"]
    kept = [i["src"] for i in items if same(found[i["src"]], i)]  # never renamed, or back
    failed = [i["dst"] for i in items if i not in back and i["src"] not in kept]
    if back:
        await sandboxed(settings, spec, {
            **args, "phase": "apply", "sources": [i["dst"] for i in back],
            "targets": [i["src"] for i in back]}, manifest["action_id"])
    return {"result": {"restored": [i["src"] for i in back], "kept": kept, "failed": failed}}
