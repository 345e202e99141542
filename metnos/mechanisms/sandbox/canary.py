"""The start-up canary: prove from inside a real sandbox that it confines (notes/security.md A1).

`run_canary()` plants a secret file outside the workspace, a secret environment variable and a
listening socket on the host, then runs a small probe script through `run_pinned` exactly as
an executor is run. Every check must hold; `metnos serve` lets only side-effect-free executors
run when one does not (fail closed).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from metnos.ground.errors import SandboxError
from metnos.mechanisms.sandbox import seccomp
from metnos.mechanisms.sandbox._pins import pin
from metnos.mechanisms.sandbox.bwrap import EXECUTOR_DIR, WORKSPACE_DIR, PythonRuntime
from metnos.mechanisms.sandbox.profile import SandboxProfile
from metnos.mechanisms.sandbox.request import SandboxRequest
from metnos.mechanisms.sandbox.runner import find_python_runtime, run_pinned

ENV_NAME = "METNOS_CANARY_SECRET"
CHECKS = (
    "started",
    "cap_eff_zero",
    "no_new_privs",
    "not_root",
    "host_secrets_absent",
    "root_hidden",
    "env_clean",
    "network_blocked",
    "usr_readonly",
    "workspace_readonly",
    "audit_hidden",
    "trash_hidden",
    "userns_denied",
    "pid_isolated",
    "etc_absent",
    "seccomp_filtered",
    "hardlinks_denied",
    "listener_untouched",
)

_PROBE = r"""
import json, os, socket, sys
a = json.load(sys.stdin)["args"]
def fails(fn):
    try:
        fn()
    except OSError:
        return True
    return False
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
def connect():
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", a["port"]))
    finally:
        s.close()
def userns_denied():
    import ctypes
    return ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0  # CLONE_NEWUSER
def ls(path):
    return set(os.listdir(path)) if os.path.isdir(path) else set()
def hardlink():
    open("/tmp/.metnos-canary", "w").close()
    os.link("/tmp/.metnos-canary", "/tmp/.metnos-canary-link")
c = {
    "cap_eff_zero": int(status("CapEff"), 16) == 0,
    "no_new_privs": status("NoNewPrivs") == "1",
    "not_root": os.getuid() != 0 and os.geteuid() != 0,
    "host_secrets_absent": not any(os.path.lexists(p) for p in a["absent"]),
    "root_hidden": ls("/root") <= set(a["root_allowed"]),
    "env_clean": a["env_name"] not in os.environ
        and not any(a["token"] in v for v in os.environ.values()),
    "network_blocked": fails(connect),
    "usr_readonly": fails(lambda: open("/usr/.metnos-canary", "w")),
    "workspace_readonly": fails(lambda: open(".metnos-canary", "w")),
    "audit_hidden": not ls(".audit"),
    "trash_hidden": not ls(".trash"),
    "userns_denied": userns_denied(),
    "pid_isolated": len([p for p in os.listdir("/proc") if p.isdigit()]) <= 3,
    "etc_absent": not os.path.lexists("/etc/passwd") and not os.path.lexists("/etc/shadow"),
    "seccomp_filtered": status("Seccomp") == "2" or not a["seccomp_expected"],
    "hardlinks_denied": fails(hardlink) or not a["seccomp_expected"],
}
print(json.dumps({"ok": True, "result": {"checks": c}}))
"""


@dataclass(frozen=True, slots=True)
class CanaryReport:
    """`ok` only when every check in `checks` holds; `detail` says what failed."""

    ok: bool
    checks: dict[str, bool] = field(default_factory=dict)
    detail: str = ""


async def run_canary(
    workspace_probe_dir: Path | None = None, *, bwrap: Path | None = None
) -> CanaryReport:
    """Run the probe in a read-only, no-network sandbox on `workspace_probe_dir` (a temp dir
    with a planted `.audit` when None) and report which confinement checks hold."""
    with tempfile.TemporaryDirectory(prefix="metnos-canary-") as tmp:
        base = Path(tmp)
        secret = _plant(base, workspace_probe_dir is None)
        workspace = workspace_probe_dir or base / "ws"
        with _listener() as listener:
            return await _probe(base, workspace, secret, listener, bwrap)


def _plant(base: Path, with_workspace: bool) -> Path:
    (base / "exec").mkdir()
    (base / "exec" / "canary.py").write_text(_PROBE)
    (base / "outside").mkdir()
    secret = base / "outside" / "id_ed25519"
    secret.write_text(secrets.token_hex(16))
    if with_workspace:
        (base / "ws" / ".audit").mkdir(parents=True)
        (base / "ws" / ".audit" / "log.jsonl").write_text("{}\n")
        (base / "ws" / ".trash").mkdir()
        (base / "ws" / ".trash" / "deleted.txt").write_text("gone\n")
    return secret


@contextlib.contextmanager
def _listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        sock.setblocking(False)
        yield sock
    finally:
        sock.close()


async def _probe(
    base: Path, workspace: Path, secret: Path, listener: socket.socket, bwrap: Path | None
) -> CanaryReport:
    token = secrets.token_hex(16)
    try:
        runtime = await find_python_runtime(bwrap)
        request = SandboxRequest(
            exec_dir=base / "exec",
            entry="canary.py",
            workspace=workspace,
            bwrap=bwrap,
            profile=SandboxProfile(read=("workspace",), write=(), network=False, timeout_s=5),
            args=_probe_args(runtime, secret, listener.getsockname()[1], token),
        )
        with pin(request) as pinned:
            result = await run_pinned(
                request, pinned, runtime=runtime, env={**os.environ, ENV_NAME: token}
            )
    except SandboxError as exc:
        return CanaryReport(ok=False, checks={"started": False}, detail=str(exc))
    if not result.ok or result.result is None:
        detail = f"{result.error_key} {result.error_vars} {result.stderr_tail}".strip()
        return CanaryReport(ok=False, checks={"started": False}, detail=detail)
    checks = {"started": True, **{k: bool(v) for k, v in result.result["checks"].items()}}
    checks["listener_untouched"] = _untouched(listener)
    failed = [name for name in CHECKS if not checks.get(name, False)]
    return CanaryReport(ok=not failed, checks=checks, detail=", ".join(failed))


def _probe_args(runtime: PythonRuntime, secret: Path, port: int, token: str) -> dict[str, object]:
    root_allowed, absent = _home_expectations(runtime)
    absent += [str(secret), str(secret.parent)]
    return {
        "absent": absent,
        "port": port,
        "token": token,
        "env_name": ENV_NAME,
        "root_allowed": root_allowed,
        "seccomp_expected": seccomp.program() is not None,
    }


def _home_expectations(runtime: PythonRuntime) -> tuple[list[str], list[str]]:
    """Entries of /root allowed inside (the way to the bound interpreter), and host paths that
    must be absent: what /root and $HOME hold, minus that way and the sandbox's own mounts."""
    ways = {p for b in runtime.binds for p in (b, *b.parents)}
    ways |= {Path(EXECUTOR_DIR), Path(WORKSPACE_DIR)}
    allowed = sorted({p.parts[2] for p in ways if len(p.parts) > 2 and p.parts[1] == "root"})
    absent: list[str] = []
    for home in {Path("/root"), Path.home()}:
        with contextlib.suppress(OSError):
            absent += [str(e) for e in sorted(home.iterdir())[:64] if e not in ways]
    return allowed, absent


def _untouched(listener: socket.socket) -> bool:
    try:
        conn, _addr = listener.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False
