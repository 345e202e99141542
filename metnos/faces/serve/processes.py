"""Child processes that `metnos serve` (and the test launcher) supervise.

Each service is a plain OS process started with an explicit environment and stopped in order.
Nothing here imports prefect: the Prefect server and the gateway, which also serves the
scheduled deployments, are started as commands (`python -m deployments.prefect_server`,
`python -m flows.gateway --schedules`).
"""

from __future__ import annotations

import ctypes
import http.client
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from metnos.faces.serve.ports import holder
from metnos.faces.serve.prefect_access import AUTH_ENV, server_environment
from metnos.ground.errors import MetnosError
from metnos.ground.escape import terminal_line

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def die_with_parent(parent: int) -> None:
    """In a child between fork and exec: SIGTERM when the supervisor dies (Linux's
    parent-death signal). Set, then the parent checked: had it died in between, the signal
    would never come, so the child ends at once instead of running on unsupervised."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def base_environment() -> dict[str, str]:
    """The environment every Metnos process gets (SPEC §1 'Prefect operating rules')."""
    env = dict(os.environ)
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    return env


@dataclass
class Service:
    """One supervised child process with a log file and a health URL."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    health_url: str | None = None
    stop_timeout_s: float = 20.0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    started_at: float = 0.0  # time.monotonic() of the last start

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> None:
        """Start it in its own session; it gets SIGTERM should the supervisor die."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        parent = os.getpid()
        with self.log_path.open("ab") as out:
            # Not an executor: a Metnos service of our own, with our own argv.
            self.process = subprocess.Popen(  # noqa: S603
                self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=lambda: die_with_parent(parent),  # noqa: PLW1509 - prctl, getppid only
            )
        self.started_at = time.monotonic()
        log.info("service.started name=%s pid=%s", self.name, self.process.pid)

    def wait_healthy(self, timeout_s: float, stop: threading.Event | None = None) -> None:
        """Poll the health URL until it answers 200; raise with the log tail otherwise (and
        ERR_SERVE_INTERRUPTED when `stop` is set meanwhile)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if stop is not None and stop.is_set():
                raise MetnosError("ERR_SERVE_INTERRUPTED")
            if self.process is not None and self.process.poll() is not None:
                break
            if self.health_url and _answers(self.health_url):
                return
            time.sleep(0.25)
        raise MetnosError(
            "ERR_SERVICE_START_FAILED", service=self.name, log=str(self.log_path),
            detail=tail(self.log_path),
        )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the process group at once (a hung child: a polite stop would wait)."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self.process.wait(timeout=10)

    def end_orphans(self) -> None:
        """After this child died: SIGTERM what it left in its process group (the scheduled
        flow runs the gateway started, say), so that its restart never runs beside them."""
        if self.process is None or self.process.returncode is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            log.warning("service.orphans_stopped name=%s", self.name)
        except (ProcessLookupError, PermissionError):  # nothing left in the group
            return

    def stop(self) -> None:
        """SIGTERM the process group, wait, then SIGKILL what is left."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, self.stop_timeout_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                log.warning("service.stop_timeout name=%s signal=%s", self.name, sig.name)
        log.info("service.stopped name=%s rc=%s", self.name, proc.returncode)


def prefect_server(*, port: int, prefect_home: Path, database_url: str, log_path: Path,
                   auth_string: str, ui: bool = True) -> Service:
    """The Prefect server (API and UI) on 127.0.0.1:port, on the given database, locked by
    `auth_string` (basic auth), CSRF protection and CORS limited to its own UI."""
    prefect_home.mkdir(parents=True, exist_ok=True)
    env = base_environment()
    env.pop(AUTH_ENV, None)
    env.update(server_environment(auth_string=auth_string, port=port))
    env.update({
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": database_url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_ENABLED": "true" if ui else "false",
        "PREFECT_UI_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": "false",
    })
    env.pop("PREFECT_API_URL", None)
    for name in [n for n in env if n.startswith("METNOS_")]:  # API keys, tokens: not its business
        del env[name]
    # `prefect server start` less the schema pages it serves without the credential
    argv = [sys.executable, "-m", "deployments.prefect_server", "--host", "127.0.0.1",
            "--port", str(port)]
    return Service("prefect-server", argv, env, log_path,
                   health_url=f"http://127.0.0.1:{port}/api/health", stop_timeout_s=15.0)


def ensure_port_free(service: str, port: int, host: str = "127.0.0.1") -> None:
    """Refuse to start a service whose port is taken: its health check would otherwise be
    answered by whatever already listens there. The holder is named when the system says
    who it is (pid and command, made safe for the terminal)."""
    found = holder(port, host)
    if found is None:
        return
    if found.pid is None:
        raise MetnosError("ERR_SERVICE_PORT_IN_USE", service=service, port=port)
    raise MetnosError("ERR_SERVICE_PORT_HELD", service=service, port=port, pid=found.pid,
                      command=terminal_line(found.command))


def responds(url: str, timeout_s: float = 3.0) -> bool:
    """True when the server at `url` answers at all (any HTTP status: a draining gateway's
    503 is an answer); False when it does not within `timeout_s` (hung, or gone) or what it
    says is not HTTP."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s):  # noqa: S310 - loopback URL
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):
        return False


def _answers(url: str) -> bool:
    """True when `url` answers 200 within 2 s."""
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback URL
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):
        return False


def wait_responding(url: str, timeout_s: float) -> bool:
    """Poll `url` until the server there answers at all (True: any HTTP status, an
    external server's 401 included), or `timeout_s` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if responds(url, timeout_s=2.0):
            return True
        time.sleep(0.2)
    return False


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
