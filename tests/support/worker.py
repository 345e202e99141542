"""A second machine on this one: a "laptop" METNOS_HOME and a Prefect worker in its own process.

`laptop_home(root, server)` lays out what a laptop keeps after enrolment (docs/en/scale-out.md):
its own workspace, its own copy of the executors (and of the i18n and prompts resources, as an
installed copy of Metnos would have), the server's `executors` public key it trusts with the
signatures made by it, and the server's audit public key as `keys/server.pub` (which signs the
before-records the laptop must see before it renames anything).

`Worker(home, pool, name)` runs `prefect worker start --pool <pool> --type process` with the
laptop's environment only: its METNOS_HOME, its own PREFECT_HOME, the session's
PREFECT_API_URL and the Prefect credential (PREFECT_API_AUTH_STRING), a short query interval.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from metnos.ground.paths import resources_path
from metnos.ground.settings import Settings

QUERY_SECONDS = "1"
HEARTBEAT_SECONDS = "5"  # the server calls a worker offline after 3 missed heartbeats


def laptop_home(root: Path, server: Settings) -> Path:
    home, resources = root / "laptop-home", root / "laptop-resources"
    for name in ("executors", "i18n", "prompts"):
        shutil.copytree(resources_path(name), resources / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (home / "keys").mkdir(parents=True, mode=0o700)
    (home / "workspace").mkdir()
    shutil.copy2(server.keys_dir / "executors.pub", home / "keys" / "executors.pub")
    shutil.copy2(server.keys_dir / "audit.pub", home / "keys" / "server.pub")
    shutil.copytree(server.home / "signatures", home / "signatures")
    return home


def worker_env(home: Path, *, auth: bool = True) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "METNOS_HOME": str(home),
        "METNOS_LANG": "en",
        "METNOS_I18N_RESOURCES_DIR": str(home.parent / "laptop-resources"),
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_API_URL": os.environ["PREFECT_API_URL"],
        "PREFECT_WORKER_QUERY_SECONDS": QUERY_SECONDS,
        "PREFECT_WORKER_HEARTBEAT_SECONDS": HEARTBEAT_SECONDS,
        "PREFECT_WORKER_PREFETCH_SECONDS": "2",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    if auth:
        env["PREFECT_API_AUTH_STRING"] = os.environ["PREFECT_API_AUTH_STRING"]
    return env


class Worker:
    """`prefect worker start` for `pool`, in its own process and environment."""

    def __init__(self, home: Path, pool: str = "laptop", name: str = "laptop-1", *,
                 limit: int = 4, auth: bool = True) -> None:
        self.home, self.pool, self.name, self.limit, self.auth = home, pool, name, limit, auth
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = home / f"worker-{name}.log"

    def start(self, wait: bool = True) -> Worker:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - the test's own worker
                [sys.executable, "-m", "prefect", "worker", "start", "--pool", self.pool,
                 "--type", "process", "--name", self.name, "--limit", str(self.limit)],
                env=worker_env(self.home, auth=self.auth), cwd=self.home, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        if wait:
            self.wait_online()
        return self

    def wait_online(self, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.tail()
            if self.name in online_workers(self.pool):
                return
            time.sleep(0.5)
        raise AssertionError(f"worker {self.name} not online: {self.tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def tail(self, size: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-size:] if self.log.exists() else ""

    def __enter__(self) -> Worker:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def online_workers(pool: str) -> set[str]:
    """The names of the pool's workers the server counts as online."""
    from prefect import get_client
    from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError

    with get_client(sync_client=True) as client:
        try:
            workers = client.read_workers_for_work_pool(pool)
        except (ObjectNotFound, PrefectHTTPStatusError):  # no such pool (yet)
            return set()
    return {w.name for w in workers if w.status == "ONLINE"}
