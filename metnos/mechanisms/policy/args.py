"""Checking a model's tool-call arguments against an executor's typed inputs.

`inputs_schema` is the manifest's `[inputs]` table as a plain dict, one entry per argument:
`{"type": "path"|"string"|"integer"|"number"|"boolean"|"array", "required": bool,
"default": ..., "access": "read"|"write", "items": <type or {"type": ...}>, "enum": [...]}`.
It becomes a JSON Schema (additional properties refused) checked with `jsonschema`.
An input without `required` is required unless it has a `default`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from metnos.ground.errors import ManifestError, ModelRetryError

InputsSchema = Mapping[str, Mapping[str, Any]]
JSON_TYPES = {
    "path": "string",
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
}


def json_schema(inputs_schema: InputsSchema, *, executor: str = "") -> dict[str, Any]:
    """The JSON Schema (an object) of an executor's inputs."""
    properties = {name: _property(name, spec, executor) for name, spec in inputs_schema.items()}
    required = [name for name, spec in inputs_schema.items() if _is_required(spec)]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def validate_args(inputs_schema: InputsSchema, args: Any, *, executor: str = "") -> dict[str, Any]:
    """`args` checked (required, unknown, types) with defaults filled in.

    Raises `ModelRetryError("ERR_ARGS_INVALID", executor=..., detail=...)`: the detail goes
    back to the model so it can correct the call.
    """
    validator = Draft202012Validator(json_schema(inputs_schema, executor=executor))
    error = best_match(validator.iter_errors(args))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        detail = f"{where}: {error.message}" if where else error.message
        raise ModelRetryError("ERR_ARGS_INVALID", executor=executor, detail=detail)
    out = dict(args)
    for name, spec in inputs_schema.items():
        if name not in out and "default" in spec:
            out[name] = spec["default"]
    return out


def resolve_path_args(
    inputs_schema: InputsSchema,
    args: Mapping[str, Any],
    resolve: Callable[[str], str],
) -> dict[str, Any]:
    """`args` with every `path` input (and every item of an array of paths) passed through
    `resolve` (e.g. `resolve_in_workspace` bound to the instance's paths)."""
    out = dict(args)
    for name, spec in inputs_schema.items():
        if name not in out or out[name] is None:
            continue
        if spec.get("type") == "path":
            out[name] = resolve(out[name])
        elif spec.get("type") == "array" and _item_type(spec) == "path":
            out[name] = [resolve(item) for item in out[name]]
    return out


def _property(name: str, spec: Mapping[str, Any], executor: str) -> dict[str, Any]:
    kind, item = spec.get("type"), _item_type(spec)
    if kind not in JSON_TYPES or (item is not None and item not in JSON_TYPES):
        detail = f"inputs.{name}.type"
        raise ManifestError("ERR_EXECUTOR_MANIFEST_INVALID", name=executor, detail=detail)
    prop: dict[str, Any] = {"type": JSON_TYPES[kind]}
    if kind == "array" and item is not None:
        prop["items"] = {"type": JSON_TYPES[item]}
    if "enum" in spec:
        prop["enum"] = list(spec["enum"])
    for bound in ("minimum", "maximum"):  # the manifest's bounds bind the model too
        if spec.get(bound) is not None:
            prop[bound] = spec[bound]
    return prop


def _item_type(spec: Mapping[str, Any]) -> str | None:
    items = spec.get("items")
    if isinstance(items, Mapping):
        return items.get("type")
    return items if isinstance(items, str) else None


def _is_required(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("required", "default" not in spec))
