"""Discovery without importing code, admission by signature, precedence of the repo."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground.errors import ExecutorNotFound
from metnos.ground.settings import get_settings
from metnos.mechanisms.executors.builtin import sign_builtins
from metnos.mechanisms.executors.registry import admit, discover, discover_all, load_registry
from metnos.mechanisms.executors.signing import sign_executor, signature_path
from tests.executors.conftest import BUILTINS, REPO_EXECUTORS


def test_discover_does_not_import_code(executors_dir: Path) -> None:
    main = executors_dir / "fs_read" / "main.py"
    main.write_text("raise SystemExit('imported!')\n")
    (executors_dir / "not_an_executor").mkdir()
    (executors_dir / "notes.txt").write_text("x")
    names = [spec.name for spec in discover([executors_dir])]
    assert names == sorted(BUILTINS)  # and main.py did not run (it would raise SystemExit)


def test_broken_manifest_reported_not_fatal(executors_dir: Path) -> None:
    (executors_dir / "fs_move" / "manifest.toml").write_text('name = "fs_move"\n')
    specs, problems = discover_all([executors_dir])
    assert sorted(s.name for s in specs) == sorted(set(BUILTINS) - {"fs_move"})
    assert [(p.name, p.key) for p in problems] == [("fs_move", "ERR_EXECUTOR_MANIFEST_INVALID")]


def test_admit(executors_dir: Path, private_key: Ed25519PrivateKey, tmp_path: Path) -> None:
    sigs = tmp_path / "sigs"
    for name in ("fs_find", "fs_read", "fs_write"):
        sign_executor(executors_dir / name, private_key, signature_path(sigs, name))
    (executors_dir / "fs_write" / "main.py").write_text("# changed\n")
    registry = admit(discover([executors_dir]), private_key.public_key(), sigs)
    assert registry.names() == ["fs_find", "fs_read"]
    assert registry.get("fs_read").manifest.risk == "low"
    with pytest.raises(ExecutorNotFound):
        registry.get("fs_write")
    with pytest.raises(LookupError):
        registry.get("nope")
    refused = {r.name: r.key for r in registry.refused}
    unsigned = set(BUILTINS) - {"fs_find", "fs_read", "fs_write"}
    assert refused == {"fs_write": "ERR_EXECUTOR_CODE_CHANGED",
                       **{name: "ERR_EXECUTOR_UNSIGNED" for name in unsigned}}
    assert [t.name for t in registry.tool_specs("it")] == ["fs_find", "fs_read"]


def test_manifest_changed_after_discovery(
    executors_dir: Path, private_key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    sigs = tmp_path / "sigs"
    specs = discover([executors_dir])
    folder = executors_dir / "fs_read"
    path = folder / "manifest.toml"
    path.write_text(path.read_text().replace('risk = "low"', 'risk = "high"'))
    sign_executor(folder, private_key, signature_path(sigs, "fs_read"))  # signs the new bytes
    registry = admit([s for s in specs if s.name == "fs_read"], private_key.public_key(), sigs)
    assert "fs_read" not in registry
    assert registry.refused[0].key == "ERR_EXECUTOR_SIGNATURE_INVALID"


def test_load_registry_repo_wins(metnos_home: Path) -> None:
    settings = get_settings()
    signed = sign_builtins(REPO_EXECUTORS, settings.keys_dir, metnos_home / "signatures")
    assert signed == sorted(BUILTINS)
    owner_dir = metnos_home / "executors"
    owner_dir.mkdir()
    shutil.copytree(REPO_EXECUTORS / "fs_read", owner_dir / "fs_read")
    registry = load_registry(settings)
    assert registry.names() == sorted(BUILTINS)
    assert registry.get("fs_read").folder == REPO_EXECUTORS / "fs_read"
    dup = registry.refusal("fs_read")
    assert dup is not None and dup.key == "ERR_EXECUTOR_DUPLICATE"
    assert dup.vars["folder"] == str(owner_dir / "fs_read")


def test_load_registry_without_key(metnos_home: Path) -> None:
    (metnos_home / "keys" / "executors.pub").unlink()
    registry = load_registry(get_settings())
    assert len(registry) == 0
    assert {r.key for r in registry.refused} == {"ERR_KEY_UNREADABLE"}
