"""Issue 3 hardening with the real bwrap: action id envelope, `.trash` masking, process and
memory bounds enforced by the watchdog (which must hold when the tests run as root)."""

from __future__ import annotations

import stat
import uuid
from pathlib import Path

import pytest

from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, run_sandboxed
from tests.sandbox._helpers import (
    FORK_BOMB,
    MEMORY_HOG,
    THREAD_BOMB,
    TRIED,
    Runner,
    processes_with,
)

RW = SandboxProfile(write=("workspace",))
PLANT = TRIED + """
def plant():
    os.makedirs(".trash/forged", exist_ok=True)
    with open(".trash/forged/x.txt", "w") as fh:
        fh.write("forged")
listing = sorted(os.listdir(".trash")) if os.path.isdir(".trash") else None
reply(listing=listing, plant=tried(plant), link=tried(lambda: os.symlink("/tmp", ".trash")),
      swap=tried(lambda: os.rename(".trash", "moved")))
"""


@pytest.mark.parametrize("action_id", ["", "d41d8cd98f00", "0F-a_9"])
async def test_envelope_is_args_plus_action_id(
    tmp_path: Path, workspace: Path, bwrap: Path, action_id: str
) -> None:
    exec_dir = tmp_path / "envelope"
    exec_dir.mkdir()
    (exec_dir / "main.py").write_text(
        "import json, sys\n"
        'print(json.dumps({"ok": True, "result": {"envelope": json.load(sys.stdin)}}))\n'
    )
    request = SandboxRequest(
        exec_dir=exec_dir, entry="main.py", profile=SandboxProfile(), workspace=workspace,
        args={"path": "a.txt"}, action_id=action_id, bwrap=bwrap,
    )
    result = await run_sandboxed(request)
    assert result.result == {"envelope": {"args": {"path": "a.txt"}, "action_id": action_id}}


@pytest.mark.parametrize("bad", ["../x", "a/b", "x" * 129, "has space", "é", "a\n"])
def test_action_id_is_a_plain_token(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        SandboxRequest(
            exec_dir=tmp_path, entry="main.py", profile=SandboxProfile(), workspace=tmp_path,
            action_id=bad,
        )


@pytest.mark.parametrize("profile", [SandboxProfile(), RW], ids=["read-only", "read-write"])
async def test_trash_is_masked_without_the_trash_flag(
    run: Runner, workspace: Path, profile: SandboxProfile
) -> None:
    (workspace / ".trash" / "a1").mkdir(parents=True)
    (workspace / ".trash" / "a1" / "secret.txt").write_text("deleted but private")
    result = await run(PLANT, profile)
    assert result.result == {"listing": [], "plant": False, "link": False, "swap": False}
    assert sorted(p.name for p in (workspace / ".trash").iterdir()) == ["a1"]


async def test_missing_trash_is_made_0700_and_masked(run: Runner, workspace: Path) -> None:
    result = await run(PLANT, RW)
    assert result.result == {"listing": [], "plant": False, "link": False, "swap": False}
    trash = workspace / ".trash"
    st = trash.lstat()
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert list(trash.iterdir()) == []


async def test_missing_trash_in_a_read_only_run_stays_missing(
    run: Runner, workspace: Path
) -> None:
    result = await run(PLANT)
    assert result.result == {"listing": None, "plant": False, "link": False, "swap": False}
    assert not (workspace / ".trash").exists()


async def test_trash_flag_shows_the_trash_writable(run: Runner, workspace: Path) -> None:
    (workspace / ".trash" / "old").mkdir(parents=True)
    body = """
    os.makedirs(".trash/act1", exist_ok=True)
    os.rename("hello.txt", ".trash/act1/hello.txt")
    reply(listing=sorted(os.listdir(".trash")), audit=os.listdir(".audit"))
    """
    result = await run(body, SandboxProfile(write=("workspace",), trash=True))
    assert result.result == {"listing": ["act1", "old"], "audit": []}
    assert (workspace / ".trash" / "act1" / "hello.txt").read_text() == "ciao"


async def test_trash_symlink_or_trash_roots_are_refused(
    run: Runner, workspace: Path, secret_dir: Path
) -> None:
    for profile in (SandboxProfile(read=(".trash",)), SandboxProfile(write=(".trash/x",))):
        refused = await run("reply()", profile)
        assert refused.error_key == "ERR_SANDBOX_PATH_UNSAFE", refused
    (workspace / ".trash").symlink_to(secret_dir)
    for profile in (SandboxProfile(), RW, SandboxProfile(write=("workspace",), trash=True)):
        refused = await run("reply()", profile)
        assert refused.error_key == "ERR_SANDBOX_PATH_UNSAFE", refused
    assert (workspace / ".trash").is_symlink()  # left as found


async def test_fork_bomb_is_bounded_even_as_root(run: Runner) -> None:
    marker = f"bomb_{uuid.uuid4().hex}.py"
    result = await run(FORK_BOMB, SandboxProfile(timeout_s=20), entry=marker, max_processes=16)
    assert result.error_key == "ERR_SANDBOX_TOO_MANY_PROCESSES", result
    assert result.error_vars == {"limit": 16}
    assert result.duration_s < 20  # killed by the bound, not by the timeout (speed: bench/)
    assert processes_with(marker) == []


async def test_thread_bomb_is_bounded(run: Runner) -> None:
    result = await run(THREAD_BOMB + "reply(started=2000)\n", SandboxProfile(timeout_s=20),
                       max_processes=32)
    assert result.error_key == "ERR_SANDBOX_TOO_MANY_PROCESSES", result
    assert result.duration_s < 20  # killed by the bound, not by the timeout


async def test_memory_summed_over_processes(run: Runner) -> None:
    """Each child stays under its own RLIMIT_AS; together they exceed the profile's memory."""
    result = await run(MEMORY_HOG, SandboxProfile(timeout_s=20, memory_mb=128))
    assert result.error_key == "ERR_SANDBOX_MEMORY_EXCEEDED", result
    assert result.error_vars == {"memory_mb": 128}
    assert result.duration_s < 20  # killed by the summed bound, not by the timeout


async def test_a_few_processes_within_the_bound_are_fine(run: Runner) -> None:
    body = """
    pids = []
    for _ in range(6):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    reply(codes=[os.waitpid(p, 0)[1] for p in pids])
    """
    result = await run(body, max_processes=16)
    assert result.ok and result.result == {"codes": [0] * 6}, result
