"""The executors' protocol helper (`metnos.mechanisms.sandbox.protocol`): standard library only,
bound read-only into every sandbox, and part of every executor's signed code hash, so a changed
helper is a changed executor: refused at verification, against the lock, and at run time
with its audit line, never run."""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from metnos.ground.errors import SignatureError
from metnos.mechanisms.executors.builtin import check_builtin, lock_path
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.executors.registry import discover
from metnos.mechanisms.executors.signing import code_hash, sign_executor, verify_executor
from metnos.mechanisms.sandbox import SandboxRequest, bwrap, protocol, run_sandboxed
from metnos.testing.llm_server import ScriptedLLM
from tests.executors.conftest import REPO_EXECUTORS
from tests.gateway.test_attacks import attempts, audit_lines, changed_between_turns
from tests.support.home import MakeHome

PWNED = 'import sys\nsys.stdout.write(\'{"ok": true, "result": {"pwned": 1}}\')\nsys.exit(0)\n'


@pytest.fixture
def helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A byte-identical copy of the helper, made the one the host hashes and binds."""
    copy = tmp_path / "helper" / "protocol.py"
    copy.parent.mkdir()
    copy.write_bytes(bwrap.PROTOCOL_SOURCE.read_bytes())
    monkeypatch.setattr(bwrap, "PROTOCOL_SOURCE", copy)
    return copy


def test_the_helper_imports_only_the_standard_library() -> None:
    """The sandbox binds the file alone, with no `metnos` to import."""
    tree = ast.parse(bwrap.PROTOCOL_SOURCE.read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None, database=None)
@given(JSON_VALUES)
def test_the_helper_writes_and_reads_what_json_does(value: object) -> None:
    """The helper's own `dumps`/`loads` (json's C parts, without importing json) give the
    bytes `json.dumps` gives and read them back as `json.loads` does."""
    for ascii_only in (True, False):
        written = protocol.dumps(value, ensure_ascii=ascii_only)
        assert written == json.dumps(value, ensure_ascii=ascii_only)
        assert json.dumps(protocol.loads(f" {written}\n")) == json.dumps(json.loads(written))


@pytest.mark.parametrize("text", ["", " ", "{", "[1,]", "1 2", '{"a": 1}}', "\ufeff{}",
                                  "'a'", '{"a": undefined}', "[1, 2] x"])
def test_the_helper_refuses_what_json_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        protocol.loads(text)


def test_an_executor_run_loads_neither_json_nor_re(tmp_path: Path) -> None:
    """What the helper imports is paid by every executor run: json pulls in re and enum."""
    pylib = tmp_path / "pylib"
    pylib.mkdir()
    (pylib / bwrap.PROTOCOL_DEST).write_bytes(bwrap.PROTOCOL_SOURCE.read_bytes())
    code = (f"import sys\nsys.path.append({str(pylib)!r})\nimport metnos_sandbox_protocol\n"
            "print(sorted({'json', 're', 'enum', 'typing', 'tempfile'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", code], capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_every_builtin_imports_the_helper() -> None:
    for folder in sorted(p.parent for p in REPO_EXECUTORS.glob("*/main.py")):
        code = (folder / "main.py").read_text()
        helper = "metnos_features_mail_imap" if "import metnos_features_mail_imap" in code else \
            "metnos_sandbox_protocol"
        assert f"import {helper}" in code or f"from {helper} import" in code, folder.name
        assert "sys.stdin" not in code and "sys.stdout" not in code, folder.name


def test_a_changed_helper_fails_the_signature_and_the_lock(
        helper: Path, executors_dir: Path, private_key: Ed25519PrivateKey,
        tmp_path: Path) -> None:
    folder = executors_dir / "fs_read"
    sig = tmp_path / "sigs" / "fs_read.minisig"
    signed = sign_executor(folder, private_key, sig)
    [spec] = [s for s in discover([executors_dir]) if s.name == "fs_read"]
    check_builtin(spec, lock_path(executors_dir))  # the copy is the helper the lock pinned
    helper.write_bytes(helper.read_bytes() + b"\n# one more line\n")
    assert code_hash(folder) != signed.code_sha256
    with pytest.raises(SignatureError) as refused:
        verify_executor(folder, private_key.public_key(), sig)
    assert refused.value.key == "ERR_EXECUTOR_CODE_CHANGED"
    with pytest.raises(SignatureError) as mismatch:
        check_builtin(spec, lock_path(executors_dir))
    assert (mismatch.value.key, mismatch.value.vars["field"]) == (
        "ERR_EXECUTOR_BUILTIN_MISMATCH", "code_sha256")


CACHED = """import importlib.util, json, sys
sys.path.append("/home/metnos/pylib")
import metnos_sandbox_protocol as helper
with open(helper.__spec__.cached, "rb") as pyc, open(helper.__file__, "rb") as src:
    head, source = pyc.read(16), src.read()
flags = int.from_bytes(head[4:8], "little")
checked = flags == 3 and head[8:16] == importlib.util.source_hash(source)
sys.stdout.write(json.dumps({"ok": True, "result": {"checked": checked}}))
"""


def test_the_sandbox_binds_the_helpers_bytecode_checked_against_it(tmp_path: Path) -> None:
    """The helper's compiled form is bound where the interpreter looks, in checked-hash mode
    and matching the source bound beside it: the run uses it instead of compiling."""
    folder, workspace = tmp_path / "probe", tmp_path / "workspace"
    folder.mkdir()
    workspace.mkdir()
    (folder / "main.py").write_text(CACHED)
    result = asyncio.run(run_sandboxed(SandboxRequest(
        exec_dir=folder, entry="main.py", profile=parse_manifest(
            REPO_EXECUTORS / "fs_read" / "manifest.toml").sandbox, workspace=workspace)))
    assert result.ok and result.result == {"checked": True}, (result.error_key,
                                                              result.stderr_tail)


def test_the_bytecode_goes_only_to_a_folder_of_ours_closed_to_others(tmp_path: Path) -> None:
    """A folder of that name someone left open, or a link in its place, is never used."""
    from metnos.mechanisms.sandbox._bytecode import _own_folder

    mine = _own_folder(tmp_path / "fresh")
    assert mine is None  # its parent does not exist: nothing is made there
    (tmp_path / "fresh").mkdir()
    mine = _own_folder(tmp_path / "fresh")
    assert mine is not None and mine.stat().st_mode & 0o777 == 0o700
    opened = tmp_path / "opened"
    (opened / mine.name).mkdir(parents=True)
    (opened / mine.name).chmod(0o777)
    assert _own_folder(opened) is None
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / mine.name).symlink_to(mine)
    assert _own_folder(linked) is None


def test_the_sandbox_binds_the_helper_the_hash_covers(helper: Path, tmp_path: Path) -> None:
    """What runs is what was hashed: the file at PROTOCOL_SOURCE, not another copy."""
    helper.write_text(PWNED)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    folder = REPO_EXECUTORS / "fs_read"
    manifest = parse_manifest(folder / "manifest.toml")
    result = asyncio.run(run_sandboxed(SandboxRequest(
        exec_dir=folder, entry=manifest.entry, profile=manifest.sandbox, workspace=workspace,
        args={"path": "a.md"})))
    assert result.ok and result.result == {"pwned": 1}, (result.error_key, result.stderr_tail)


async def test_a_helper_changed_while_running_is_refused_with_its_audit_line(
        helper: Path, make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, autonomy="Full", lang="en")  # signs the built-ins
    _, second = await changed_between_turns(home, scripted_llm, "fs_read",
                                            lambda: helper.write_text(PWNED))
    [refused] = attempts(second)
    assert refused["status"] == "refused" and "fs_read" in str(refused["text"])
    assert "pwned" not in json.dumps(second) + json.dumps(scripted_llm.requests[3])
    lines = audit_lines(home)
    assert [ln["reason"] for ln in lines] == ["ok", "ERR_EXECUTOR_CODE_CHANGED"]
    assert (lines[1]["action"], lines[1]["decision"]) == ("fs_read", "deny")
