"""Issue 25, finding 12: the sandbox makes no hard links.

An approved `shell_run cp -l a b` used to link workspace files; the path policy then refused
both names (a file with a second name may be a planted link to a secret), so the owner's own
files were locked out of every `fs_*` tool. The seccomp filter now answers EPERM to `link` and
`linkat`: whatever runs inside (cp -l, ln, os.link), no second name appears and the files stay
usable. Real bubblewrap, the real shell_run executor and the real path policy.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metnos.mechanisms.policy.paths import resolve_in_workspace
from metnos.mechanisms.sandbox import SandboxProfile
from tests.executors.test_shell_web import run_in_sandbox
from tests.sandbox._helpers import Runner

WRITE = SandboxProfile(write=("workspace",))
PROBE = """\
import subprocess
tried = {}
try:
    os.link("hello.txt", "py_link.txt")
    tried["os_link"] = "ok"
except OSError as exc:
    tried["os_link"] = exc.errno
try:
    os.link("hello.txt", "py_linkat.txt", follow_symlinks=False)
    tried["os_linkat"] = "ok"
except OSError as exc:
    tried["os_linkat"] = exc.errno
for name, argv in {"ln": ["ln", "hello.txt", "ln_link.txt"],
                   "cp_l": ["cp", "-l", "hello.txt", "cp_link.txt"],
                   "cp_link": ["cp", "--link", "hello.txt", "cp_link2.txt"]}.items():
    done = subprocess.run(argv, capture_output=True, text=True)
    tried[name] = done.returncode
reply(**tried)
"""


def _usable(workspace: Path, name: str) -> None:
    """The fs tools' path policy accepts the file: it has one name only."""
    assert os.stat(workspace / name).st_nlink == 1
    assert resolve_in_workspace(name, workspace, home_dir=workspace.parent / "home",
                                metnos_home=workspace.parent) == name


@pytest.mark.attack
async def test_no_hard_link_from_inside_the_sandbox(run: Runner, workspace: Path) -> None:
    result = await run(PROBE, profile=WRITE)
    assert result.ok and result.result is not None, (result.error_key, result.stderr_tail)
    tried = result.result
    assert tried["os_link"] == 1 and tried["os_linkat"] == 1, tried  # EPERM
    assert tried["ln"] != 0 and tried["cp_l"] != 0 and tried["cp_link"] != 0, tried
    assert sorted(p.name for p in workspace.iterdir() if p.name[0] != ".") == ["hello.txt"]
    _usable(workspace, "hello.txt")


@pytest.mark.attack
@pytest.mark.parametrize("command", ["cp -l a.txt b.txt", "cp --link a.txt b.txt",
                                     "cp -al docs copy"])
def test_shell_run_cp_link_leaves_the_files_usable(tmp_path: Path, command: str) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "a.txt").write_text("ciao\n")
    (workspace / "docs" / "note.txt").write_text("nota\n")
    result = run_in_sandbox("shell_run", workspace, {"command": command})
    assert result.ok and result.result is not None, (result.error_key, result.stderr_tail)
    assert result.result["exit_code"] != 0, result.result
    for path in workspace.rglob("*"):
        if path.is_file():
            _usable(workspace, path.relative_to(workspace).as_posix())
    assert not (workspace / "b.txt").exists()
    assert not (workspace / "copy" / "note.txt").exists()


async def test_control_other_file_operations_still_work(run: Runner, workspace: Path) -> None:
    """The filter takes links only: copies, renames and symbolic links still work."""
    body = """\
import shutil
shutil.copy("hello.txt", "copy.txt")
os.rename("copy.txt", "moved.txt")
os.symlink("moved.txt", "sym.txt")
reply(names=sorted(n for n in os.listdir(".") if n[0] != "."))
"""
    result = await run(body, profile=WRITE)
    assert result.ok and result.result is not None, (result.error_key, result.stderr_tail)
    assert result.result["names"] == ["hello.txt", "moved.txt", "sym.txt"]
