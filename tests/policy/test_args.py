"""Tool-call arguments checked against an executor's typed inputs."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from metnos.ground import i18n
from metnos.ground.errors import ManifestError, ModelRetryError, PolicyDenied
from metnos.mechanisms.policy import (
    json_schema,
    resolve_in_workspace,
    resolve_path_args,
    validate_args,
)

INPUTS: dict[str, dict[str, Any]] = {
    "path": {"type": "path", "access": "read", "required": True, "description": {"en": "x"}},
    "max_bytes": {"type": "integer", "required": False, "default": 1000},
    "ratio": {"type": "number", "required": False},
    "recursive": {"type": "boolean", "default": False},
    "patterns": {"type": "array", "items": {"type": "string"}, "required": False},
    "mode": {"type": "string", "enum": ["text", "bytes"], "default": "text"},
}


def test_valid_args_get_defaults() -> None:
    out = validate_args(INPUTS, {"path": "notes/a.md", "ratio": 2}, executor="fs_read")
    assert out == {
        "path": "notes/a.md",
        "ratio": 2,
        "max_bytes": 1000,
        "recursive": False,
        "mode": "text",
    }


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({}, "'path' is a required property"),
        ({"path": "a", "colour": "red"}, "'colour' was unexpected"),
        ({"path": 5}, "path: 5 is not of type 'string'"),
        ({"path": "a", "max_bytes": "10"}, "max_bytes"),
        ({"path": "a", "max_bytes": True}, "max_bytes"),  # a boolean is not an integer
        ({"path": "a", "max_bytes": 1.5}, "max_bytes"),
        ({"path": "a", "recursive": "yes"}, "recursive"),
        ({"path": "a", "patterns": ["*.md", 3]}, "patterns/1"),
        ({"path": "a", "patterns": "*.md"}, "patterns"),
        ({"path": "a", "mode": "hex"}, "mode"),
        (["a"], "is not of type 'object'"),
        (None, "is not of type 'object'"),
    ],
)
def test_invalid_args_go_back_to_the_model(args: Any, fragment: str) -> None:
    with pytest.raises(ModelRetryError) as err:
        validate_args(INPUTS, args, executor="fs_read")
    assert err.value.key == "ERR_ARGS_INVALID"
    assert err.value.vars["executor"] == "fs_read"
    assert fragment in err.value.vars["detail"]
    assert "fs_read" in i18n.message(err.value, "it")


def test_required_defaults_to_true_without_a_default() -> None:
    schema = json_schema({"a": {"type": "string"}, "b": {"type": "string", "default": "x"}})
    assert schema["required"] == ["a"]
    assert schema["additionalProperties"] is False


def test_unknown_input_type_is_a_manifest_error() -> None:
    with pytest.raises(ManifestError):
        validate_args({"a": {"type": "blob"}}, {"a": 1}, executor="x")
    with pytest.raises(ManifestError):
        validate_args({"a": {"type": "array", "items": "blob"}}, {"a": []}, executor="x")


def test_path_args_are_resolved(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    resolve = partial(resolve_in_workspace, workspace=ws, home_dir=tmp_path, metnos_home=tmp_path)
    inputs = {
        "src": {"type": "path"},
        "many": {"type": "array", "items": "path"},
        "note": {"type": "string"},
    }
    args = {"src": str(ws / "a.md"), "many": ["./b//c", "d/../e"], "note": "../x"}
    out = resolve_path_args(inputs, validate_args(inputs, args), resolve)
    assert out == {"src": "a.md", "many": ["b/c", "e"], "note": "../x"}
    with pytest.raises(PolicyDenied):
        resolve_path_args(inputs, {**args, "many": ["ok", "../../etc/passwd"]}, resolve)
