"""The runner with the real bwrap: protocol, confinement, limits, cleanup."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from pathlib import Path

import pytest

from metnos.ground.errors import SandboxError
from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest
from metnos.mechanisms.sandbox.runner import pin, run_pinned
from tests.sandbox._helpers import TRIED, Runner, processes_with, write_executor


async def test_happy_path_and_stdin_args(run: Runner) -> None:
    result = await run(
        "reply(echo=args, cwd=os.getcwd(), files=sorted(os.listdir('.')))",
        args={"path": "hello.txt", "n": 3},
    )
    assert result.ok and result.error_key is None and result.exit_code == 0
    assert result.result == {
        "echo": {"path": "hello.txt", "n": 3},
        "cwd": "/home/metnos/workspace",
        "files": [".audit", "hello.txt"],
    }
    assert 0 < result.spawn_s <= result.duration_s


async def test_executor_reported_error_maps_to_key(run: Runner) -> None:
    body = """print(json.dumps({"ok": False, "error": {"key": "ERR_FILE_NOT_FOUND",
                                                     "vars": {"path": "x"}}}))"""
    result = await run(body)
    assert not result.ok
    assert (result.error_key, result.error_vars) == ("ERR_FILE_NOT_FOUND", {"path": "x"})


async def test_executor_error_vars_cannot_clash_with_the_runner(run: Runner) -> None:
    """Vars named like the runner's own parameters are just vars, never a TypeError."""
    body = """print(json.dumps({"ok": False, "error": {"key": "ERR_FILE_NOT_FOUND",
                     "vars": {"key": "k", "started": 1, "self": 2, "error_vars": 3}}}))"""
    result = await run(body)
    assert not result.ok and result.error_key == "ERR_FILE_NOT_FOUND"
    assert result.error_vars == {"key": "k", "started": 1, "self": 2, "error_vars": 3}


async def test_deeply_nested_output_is_a_crash_not_an_exception(run: Runner) -> None:
    result = await run("sys.stdout.write('[' * 200000 + ']' * 200000)")
    assert not result.ok and result.error_key == "ERR_SANDBOX_CRASHED"


@pytest.mark.parametrize(
    "body",
    ["print('not json')", "print('{\"ok\": 1}')", "sys.stderr.write('boom-tail'); sys.exit(3)"],
)
async def test_protocol_violations_are_crashes(run: Runner, body: str) -> None:
    result = await run(body)
    assert not result.ok and result.error_key == "ERR_SANDBOX_CRASHED"
    if "boom" in body:
        assert result.exit_code == 3 and "boom-tail" in result.stderr_tail


async def test_host_secrets_and_system_files_are_invisible(
    run: Runner, workspace: Path, secret_dir: Path
) -> None:
    key = secret_dir / "id_rsa"
    (workspace / "link_to_key").symlink_to(key)
    assert (workspace / "link_to_key").read_text().startswith("-----BEGIN")  # works on the host
    body = """
    def readable(p):
        try:
            open(p).read()
            return True
        except OSError:
            return False
    paths = args["paths"]
    reply(**{p: readable(p) for p in paths}, audit=os.listdir(".audit"),
          root=os.listdir("/root") if os.path.isdir("/root") else [])
    """
    paths = [
        str(key),
        str(secret_dir),
        "/root/.ssh/id_rsa",
        "/root/.bash_history",
        "/etc/shadow",
        "../../etc/shadow",
        "/etc/passwd",
        "/proc/self/root/etc/passwd",
        "link_to_key",
        ".audit/log.jsonl",
        "/proc/1/root/etc/passwd",
    ]
    result = await run(body, args={"paths": paths})
    assert result.ok, result
    assert result.result is not None
    assert not any(result.result[p] for p in paths), result.result
    assert result.result["audit"] == []
    assert set(result.result["root"]) <= {".pyenv"}  # only the way to the interpreter


async def test_writes_follow_the_profile(run: Runner, workspace: Path) -> None:
    body = """
    def wrote(p):
        try:
            with open(p, "w") as fh:
                fh.write("x")
            return True
        except OSError:
            return False
    reply(**{p: wrote(p) for p in args["paths"]})
    """
    paths = [
        "new.txt",
        "out/new.txt",
        "/usr/evil",
        "/etc/evil",
        "/home/metnos/evil",
        "/home/metnos/executor/main.py",
        ".audit/evil",
        "/tmp/scratch",
    ]
    (workspace / "out").mkdir()
    ro = await run(body, args={"paths": paths})
    assert ro.result == {p: p == "/tmp/scratch" for p in paths}
    sub = await run(body, SandboxProfile(write=("out",)), args={"paths": paths})
    assert sub.result == {p: p in ("out/new.txt", "/tmp/scratch") for p in paths}
    rw = await run(body, SandboxProfile(write=("workspace",)), args={"paths": paths})
    assert rw.result == {p: p in ("new.txt", "out/new.txt", "/tmp/scratch") for p in paths}
    assert (workspace / "new.txt").read_text() == "x"
    assert sorted(p.name for p in (workspace / ".audit").iterdir()) == ["log.jsonl"]


async def test_missing_audit_dir_cannot_be_planted(run: Runner, workspace: Path) -> None:
    """No `.audit` yet: a writable executor must not create one (a symlink or a forged log
    that the host's audit log would later follow or chain onto)."""
    (workspace / ".audit" / "log.jsonl").unlink()
    (workspace / ".audit").rmdir()
    body = TRIED + """
def forge():
    os.makedirs(".audit", exist_ok=True)
    with open(".audit/audit.jsonl", "w") as fh:
        fh.write("{}")
reply(link=tried(lambda: os.symlink("/tmp", ".audit")), forge=tried(forge),
      swap=tried(lambda: os.rename(".audit", "moved")))
"""
    result = await run(body, SandboxProfile(write=("workspace",)))
    assert result.result == {"link": False, "forge": False, "swap": False}
    audit = workspace / ".audit"
    assert not audit.is_symlink() and (not audit.exists() or list(audit.iterdir()) == [])


async def test_network_blocked_unless_declared(run: Runner) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    body = """
    import socket
    s = socket.socket()
    s.settimeout(1)
    try:
        s.connect(("127.0.0.1", args["port"]))
        reply(connected=True)
    except OSError as exc:
        reply(connected=False, err=str(exc))
    """
    try:
        blocked = await run(body, args={"port": port})
        allowed = await run(body, SandboxProfile(network=True), args={"port": port})
    finally:
        listener.close()
    assert blocked.result is not None and blocked.result["connected"] is False
    assert allowed.result is not None and allowed.result["connected"] is True  # the control


async def test_env_secrets_absent_and_no_capabilities(
    run: Runner, tmp_path: Path, workspace: Path, bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = uuid.uuid4().hex
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", token)
    body = """
    status = dict(l.split(":", 1) for l in open("/proc/self/status"))
    reply(env=dict(os.environ), cap=status["CapEff"].strip(), nnp=status["NoNewPrivs"].strip(),
          uid=os.getuid(), pids=[p for p in os.listdir("/proc") if p.isdigit()])
    """
    by_default = await run(body)  # the gateway's environment is not even handed to bwrap
    exec_dir, entry = write_executor(tmp_path, body)
    request = SandboxRequest(
        exec_dir=exec_dir, entry=entry, profile=SandboxProfile(), workspace=workspace, bwrap=bwrap
    )
    with pin(request) as pinned:  # and when it is, --clearenv drops it
        handed = await run_pinned(request, pinned, env={**os.environ, "API_KEY": token})
    for result in (by_default, handed):
        assert result.result is not None
        assert token not in str(result.result["env"])
        assert set(result.result["env"]) <= {"PATH", "HOME", "LANG", "PWD"}
        assert int(result.result["cap"], 16) == 0 and result.result["nnp"] == "1"
        assert result.result["uid"] == 1000 and len(result.result["pids"]) <= 3


async def test_timeout_kills_the_whole_tree(run: Runner) -> None:
    marker = f"loop_{uuid.uuid4().hex}.py"
    body = "os.fork()\nwhile True:\n    pass\n"
    result = await run(body, SandboxProfile(timeout_s=0.5), entry=marker)
    assert result.error_key == "ERR_SANDBOX_TIMEOUT" and result.error_vars == {"seconds": 0.5}
    assert 0.5 <= result.duration_s < 30  # the endless loop ran to its timeout, then was killed
    assert processes_with(marker) == []


async def test_cancellation_kills_the_sandbox(run: Runner) -> None:
    marker = f"sleep_{uuid.uuid4().hex}.py"
    task = asyncio.create_task(run("import time\ntime.sleep(30)", entry=marker))
    for _ in range(50):  # wait until it really runs
        await asyncio.sleep(0.02)
        if processes_with(marker):
            break
    assert processes_with(marker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert processes_with(marker) == []


async def test_output_cap(run: Runner) -> None:
    result = await run("reply(big='x' * 200_000)", max_output_bytes=4096)
    assert result.error_key == "ERR_SANDBOX_OUTPUT_TOO_LARGE"
    assert result.error_vars == {"limit": 4096}


async def test_memory_hog_is_stopped(run: Runner) -> None:
    result = await run(
        "b = bytearray(512 * 1024 * 1024)\nreply(n=len(b))", SandboxProfile(memory_mb=128)
    )
    assert not result.ok
    assert result.error_key == "ERR_SANDBOX_MEMORY_EXCEEDED"


async def test_symlinked_or_off_limits_folders_are_refused(
    run: Runner, tmp_path: Path, secret_dir: Path, workspace: Path
) -> None:
    link = tmp_path / "ws_link"
    link.symlink_to(secret_dir)
    (workspace / "docs").symlink_to(secret_dir)
    cases = [
        await run("reply()", workspace=link),
        await run("reply()", SandboxProfile(read=(".audit",))),
        await run("reply()", SandboxProfile(read=("docs",))),
        await run("reply()", SandboxProfile(write=(".audit/x",))),
    ]
    for result in cases:
        assert not result.ok and result.error_key == "ERR_SANDBOX_PATH_UNSAFE", result
    request = SandboxRequest(
        exec_dir=link, entry="main.py", profile=SandboxProfile(), workspace=workspace
    )
    with pytest.raises(SandboxError), pin(request):  # the lower level raises
        pass


async def test_workspace_swapped_after_pinning_is_not_followed(
    tmp_path: Path, workspace: Path, secret_dir: Path, bwrap: Path
) -> None:
    exec_dir, entry = write_executor(tmp_path, "reply(files=sorted(os.listdir('.')))")
    request = SandboxRequest(
        exec_dir=exec_dir, entry=entry, profile=SandboxProfile(), workspace=workspace, bwrap=bwrap
    )
    with pin(request) as pinned:
        workspace.rename(tmp_path / "moved_away")  # the attacker swaps the checked path
        workspace.symlink_to(secret_dir)
        assert (workspace / "id_rsa").exists()
        result = await run_pinned(request, pinned)
    assert result.result == {"files": [".audit", "hello.txt"]}


async def test_resource_limits_apply_inside(run: Runner) -> None:
    body = """
    rows = {l[:26].strip(): l[26:].split()[0] for l in open("/proc/self/limits").readlines()[1:]}
    reply(**rows)
    """
    result = await run(
        body, SandboxProfile(timeout_s=2.5, memory_mb=96), max_processes=17, max_file_bytes=1 << 20
    )
    assert result.result is not None
    limits = result.result
    assert limits["Max address space"] == str(96 * 1024 * 1024)
    assert limits["Max cpu time"] == "4"
    assert limits["Max processes"] == "17"
    assert limits["Max file size"] == str(1 << 20)
    assert limits["Max core file size"] == "0"


async def test_missing_bwrap_is_unavailable(run: Runner, tmp_path: Path) -> None:
    result = await run("reply()", bwrap=tmp_path / "nope")
    assert result.error_key == "ERR_SANDBOX_UNAVAILABLE" and not result.ok


async def test_process_limit_root_or_not(run: Runner) -> None:
    """RLIMIT_NPROC stops the forks as non-root; as root (not enforced) the watchdog kills."""
    body = """
    import time
    n = 0
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(0.5)
            os._exit(0)
        n += 1
    reply(forked=n)
    """
    result = await run(body, max_processes=8)
    assert not (result.ok and result.result == {"forked": 200}), result
    if os.geteuid() == 0:
        assert result.error_key == "ERR_SANDBOX_TOO_MANY_PROCESSES", result
