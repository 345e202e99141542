"""The committed lock pins the built-ins; only matching ones get the instance signature."""

from __future__ import annotations

from pathlib import Path

import pytest

from metnos.ground.errors import SignatureError
from metnos.mechanisms.executors.builtin import (
    build_lock,
    check_builtin,
    lock_path,
    main,
    read_lock,
    sign_builtins,
)
from metnos.mechanisms.executors.registry import discover
from metnos.mechanisms.executors.signing import signature_path
from tests.executors.conftest import BUILTINS, REPO_EXECUTORS


def test_committed_lock_matches_tree() -> None:
    assert read_lock(lock_path(REPO_EXECUTORS)) == build_lock(REPO_EXECUTORS), (
        "run: python -m metnos.mechanisms.executors.builtin --update-lock"
    )
    assert set(read_lock(lock_path(REPO_EXECUTORS))) == set(BUILTINS)


def test_check_builtin(executors_dir: Path) -> None:
    lock = lock_path(executors_dir)
    for spec in discover([executors_dir]):
        check_builtin(spec, lock)
    (executors_dir / "fs_find" / "main.py").write_text("# changed\n")
    spec = next(s for s in discover([executors_dir]) if s.name == "fs_find")
    with pytest.raises(SignatureError) as info:
        check_builtin(spec, lock)
    assert (info.value.key, info.value.vars["field"]) == (
        "ERR_EXECUTOR_BUILTIN_MISMATCH",
        "code_sha256",
    )


def test_sign_builtins_idempotent(executors_dir: Path, keys_dir: Path, tmp_path: Path) -> None:
    sigs = tmp_path / "sigs"
    assert sign_builtins(executors_dir, keys_dir, sigs) == sorted(BUILTINS)
    before = signature_path(sigs, "fs_read").read_bytes()
    assert sign_builtins(executors_dir, keys_dir, sigs) == []
    assert signature_path(sigs, "fs_read").read_bytes() == before
    signature_path(sigs, "fs_read").unlink()
    assert sign_builtins(executors_dir, keys_dir, sigs) == ["fs_read"]


def test_sign_builtins_refuses_tampered(
    executors_dir: Path, keys_dir: Path, tmp_path: Path
) -> None:
    manifest = executors_dir / "fs_write" / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('risk = "medium"', 'risk = "low"'))
    sigs = tmp_path / "sigs"
    with pytest.raises(SignatureError) as info:
        sign_builtins(executors_dir, keys_dir, sigs)
    assert info.value.vars == {"name": "fs_write", "field": "manifest_sha256"}
    assert not sigs.exists() or not any(sigs.iterdir())  # nothing signed at all


def test_sign_builtins_missing(executors_dir: Path, keys_dir: Path, tmp_path: Path) -> None:
    import shutil

    shutil.rmtree(executors_dir / "fs_move")
    with pytest.raises(SignatureError, match="ERR_EXECUTOR_BUILTIN_MISSING"):
        sign_builtins(executors_dir, keys_dir, tmp_path / "sigs")


def test_update_lock_cli(executors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dir", str(executors_dir)]) == 0
    (executors_dir / "fs_read" / "main.py").write_text("# changed\n")
    assert main(["--dir", str(executors_dir)]) == 1
    assert "fs_read" in capsys.readouterr().err
    assert main(["--update-lock", "--dir", str(executors_dir)]) == 0
    assert main(["--dir", str(executors_dir)]) == 0
