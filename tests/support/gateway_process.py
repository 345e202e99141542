"""The real gateway process (`python -m flows.gateway`) for tests that signal or kill it: on
the session's PostgreSQL and Prefect server, with the home's environment, its output in a log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.home import Home


@dataclass
class GatewayProcess:
    home: Home
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.env['METNOS_GATEWAY_PORT']}"

    def start(self) -> None:
        """Start it in a session of its own and wait until /healthz answers 200."""
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "flows.gateway"], env=self.env,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError("the gateway did not start:\n" + self.log.read_text()[-3000:])

    def close(self) -> None:
        """Stop it as `metnos serve` does (SIGTERM to its session), killing it if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
