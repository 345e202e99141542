"""Which built-in steps are ordinary reversible changes (issue 27), from their manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.policy.routine import routine_change
from metnos.turns.autonomy import record_fits
from tests.security.paths_calls import repo_manifests

MANIFESTS = {m.name: m for m in repo_manifests()}
# what the issue names: writes, renames and moves, archiving, lists, reminders, photo renames
ROUTINE = {"fs_write", "fs_move", "archive", "lists", "reminder_set", "photo_rename"}


def test_the_class_is_exactly_the_ordinary_reversible_changes() -> None:
    found = {name for name, m in MANIFESTS.items() if routine_change(m, {})}
    assert found == ROUTINE & set(MANIFESTS)


@pytest.mark.parametrize("name", ["fs_delete", "shell_run", "web_fetch", "move_messages",
                                  "schedule_set", "notify", "fs_read"])
def test_deletion_shell_network_mail_schedules_are_never_routine(name: str) -> None:
    assert name in MANIFESTS
    assert not routine_change(MANIFESTS[name], {})


def test_a_manifest_that_grows_a_network_or_an_account_leaves_the_class() -> None:
    m: Manifest = MANIFESTS["fs_write"]
    netted = m.model_copy(update={"sandbox": m.sandbox.model_copy(update={"network": True})})
    assert not routine_change(netted, {})
    assert not routine_change(m.model_copy(update={"account": "imap"}), {})
    assert not routine_change(m.model_copy(update={"effect": "schedule_task"}), {})
    assert not routine_change(m.model_copy(update={"reversible": False}), {})


def test_the_before_record_must_keep_every_byte(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text("x" * 10)
    (tmp_path / "big.bin").write_bytes(b"y" * 2000)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text("a" * 600)
    (tmp_path / "tree" / "b.txt").write_text("b" * 600)
    (tmp_path / "link").symlink_to("/etc")
    assert record_fits(tmp_path, ["small.txt", "new/file.txt"], budget=1000)
    assert not record_fits(tmp_path, ["big.bin"], budget=1000)  # too big to copy: ask
    assert not record_fits(tmp_path, ["tree"], budget=1000)  # a tree together
    assert record_fits(tmp_path, ["tree"], budget=2000)
    assert not record_fits(tmp_path, ["link/passwd"], budget=1000)  # a link on the way
    assert not record_fits(tmp_path, ["small.txt", "big.bin"], budget=1500)
    import os
    os.mkfifo(tmp_path / "pipe")
    assert not record_fits(tmp_path, ["pipe"], budget=1000)
