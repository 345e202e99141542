"""A real `metnos init` + `metnos serve` process group for tests of the whole topology.

Embedded PostgreSQL, the Prefect server with its UI, the gateway serving the schedules too,
each on a free loopback port under a throwaway METNOS_HOME outside pytest's basetemp (pytest
resets that tree to 0700, and the embedded PostgreSQL, run as its own user when we are root,
must traverse it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from metnos.faces.serve.processes import tail
from tests.support.pg import free_port
from tests.support.tutor_catalog import install_catalog

METNOS = [sys.executable, "-m", "metnos.faces.cli.main"]


class Output:
    """What `metnos serve` prints after its banner, read line by line by a thread as it comes:
    the pipe never fills up (a supervisor blocked on a full pipe supervises nothing), a test
    waits for a line, and the tail is printed when the instance stops."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def mark(self) -> int:
        """Where the lines printed from now on begin."""
        with self._changed:
            return len(self.lines)

    def wait_for(self, needle: str, since: int, within_s: float) -> tuple[int, str]:
        """The first line from `since` on that holds `needle`, and the index after it."""
        deadline = time.monotonic() + within_s
        with self._changed:
            while True:
                for i in range(since, len(self.lines)):
                    if needle in self.lines[i]:
                        return i + 1, self.lines[i]
                since = len(self.lines)
                left = deadline - time.monotonic()
                assert left > 0, f"metnos serve did not say {needle!r}"
                self._changed.wait(left)

    def tail(self, count: int = 40) -> str:
        with self._changed:
            return "\n".join(self.lines[-count:])


@dataclass
class ServedInstance:
    env: dict[str, str]
    process: subprocess.Popen[str]
    banner: str
    output: Output | None = None  # what it printed after the banner (None: not followed)

    @property
    def home(self) -> Path:
        return Path(self.env["METNOS_HOME"])

    @property
    def gateway(self) -> str:
        return f"http://127.0.0.1:{self.env['METNOS_GATEWAY_PORT']}"

    @property
    def prefect(self) -> str:
        return f"http://127.0.0.1:{self.env['METNOS_PREFECT_PORT']}"

    def owner_headers(self) -> dict[str, str]:
        token = (self.home / "secrets" / "owner.token").read_text().strip()
        return {"Authorization": f"Bearer {token}"}

    def prefect_credential(self) -> str:
        return (self.home / "secrets" / "prefect.auth").read_text().strip()


def instance_env(root: Path, **extra: str) -> dict[str, str]:
    """An environment for a fresh instance under `root` (nothing of the test session's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "METNOS_"))}
    env.update({
        "METNOS_HOME": str(root / "home"),
        "METNOS_DATABASE_PORT": str(free_port()),
        "METNOS_GATEWAY_PORT": str(free_port()),
        "METNOS_PREFECT_PORT": str(free_port()),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # as the suite's other homes (tests/conftest.py): a write still asks in Supervised
        "METNOS_POLICY_REVERSIBLE_WITHOUT_ASKING": os.environ.get(
            "METNOS_POLICY_REVERSIBLE_WITHOUT_ASKING", "true"),
        **extra,
    })
    return env


def wait_ready(proc: subprocess.Popen[str], timeout_s: float = 240) -> str:
    """What `metnos serve` printed up to its "Ctrl-C" banner line."""
    out = ""
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        out += line
        if "Ctrl-C" in line:
            return out
    raise AssertionError(f"serve did not become ready:\n{out}")


def init_home(env: dict[str, str], catalog: Path | None) -> str:
    """`metnos init` for `env`'s home; what it printed. With `catalog` (the session's
    `compiled_catalog`), init leaves the Tutor's catalog to it instead of compiling one (a
    model load and every shipped page embedded): the home gets that one, verified by the key
    that signed it, as `metnos init` would have left it. Without, init compiles its own."""
    init_env = env if catalog is None else {**env, "METNOS_TUTOR_ENABLED": "false"}
    init = subprocess.run([*METNOS, "init"], env=init_env, capture_output=True, text=True,
                          timeout=600)
    assert init.returncode == 0, init.stdout + init.stderr
    if catalog is not None:
        install_catalog(catalog, Path(env["METNOS_HOME"]))
    return init.stdout + init.stderr


@contextmanager
def served_instance(catalog: Path | None = None, **extra_env: str) -> Iterator[ServedInstance]:
    """`metnos init` (`init_home`) then `metnos serve`; stopped with SIGTERM (SIGKILL if it
    must) after: the instance's `process`, which a bench that restarts it replaces (`start`)."""
    root = Path(tempfile.mkdtemp(prefix="metnos-served-"))
    env = instance_env(root, **extra_env)
    try:
        init_home(env, catalog)
        proc = subprocess.Popen([*METNOS, "serve"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        inst: ServedInstance | None = None
        try:
            banner = wait_ready(proc)
            assert proc.stdout is not None
            inst = ServedInstance(env, proc, banner, Output(proc.stdout))
            yield inst
        finally:
            _stop(proc if inst is None else inst.process, env)
            if inst is not None and inst.output is not None:
                print("--- metnos serve (tail) ---\n" + inst.output.tail())
            # shown by pytest when a test failed (the gateway's holds its runner's too)
            print("--- gateway.log (tail) ---\n" + tail(Path(env["METNOS_HOME"]) / "logs" /
                                                     "gateway.log"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def start(inst: ServedInstance) -> float:
    """`metnos serve` again on the instance's home (its last one stopped): seconds to its
    "ready" banner; what it prints is followed as before."""
    t0 = time.perf_counter()
    inst.process = subprocess.Popen([*METNOS, "serve"], env=inst.env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
    inst.banner = wait_ready(inst.process)
    took = time.perf_counter() - t0
    assert inst.process.stdout is not None
    inst.output = Output(inst.process.stdout)
    return took


def _stop(proc: subprocess.Popen[str], env: dict[str, str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=90)
            return
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    stop_postgres(env)


def stop_postgres(env: dict[str, str]) -> None:
    """Stop the embedded PostgreSQL a killed `metnos serve` left running (no-op otherwise)."""
    home = Path(env["METNOS_HOME"])
    subprocess.run([sys.executable, "-m", "metnos.ground.db.embedded", "stop", "--data-dir",
                    str(home / "pg"), "--port", env["METNOS_DATABASE_PORT"],
                    "--password-file", str(home / "secrets" / "pg.password")],
                   capture_output=True, timeout=60, check=False)
