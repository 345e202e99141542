"""Recovery after a crash: how long until `metnos serve` answers again.

    python bench/recovery.py --rounds 3

One real instance (`metnos init`, `metnos serve`, embedded PostgreSQL, its own Prefect server,
under a throwaway METNOS_HOME). Each round:
- kill -9 of the supervisor, then a new `metnos serve` at once: seconds from its start to the
  gateway's /healthz answering 200 (what the crashed run left is stopped on the way);
- kill -9 of the gateway: seconds until /healthz answers 200 again, restarted by the
  supervisor with no command typed.
Printed: each sample and the medians. Needs no PostgreSQL or Prefect of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from tests.support.serve_process import METNOS, served_instance, stop_postgres  # noqa: E402


def healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def until_healthy(url: str, t0: float, limit_s: float = 180) -> float:
    while time.monotonic() - t0 < limit_s:
        if healthy(url):
            return time.monotonic() - t0
        time.sleep(0.1)
    raise SystemExit(f"not healthy within {limit_s} s: {url}")


def pid_of(home: Path, name: str) -> int:
    recs = json.loads((home / "run" / "processes.json").read_text())
    return int(next(r["pid"] for r in recs if r["name"] == name))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    supervisor_s: list[float] = []
    gateway_s: list[float] = []
    with served_instance(METNOS_LANG="en") as inst:
        health = f"{inst.gateway}/healthz"
        serve = inst.process
        try:
            for n in range(args.rounds):
                os.kill(serve.pid, signal.SIGKILL)
                serve.wait()
                t0 = time.monotonic()
                serve = subprocess.Popen([*METNOS, "serve"], env=inst.env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
                time.sleep(0.5)  # the old gateway may still answer while it drains
                supervisor_s.append(until_healthy(health, t0))
                time.sleep(3)  # the runner starts after the gateway
                gateway = pid_of(inst.home, "gateway")
                os.kill(gateway, signal.SIGKILL)
                t0 = time.monotonic()
                while healthy(health):  # until the killed one no longer answers
                    time.sleep(0.05)
                gateway_s.append(until_healthy(health, t0))
                print(f"round {n + 1}: kill -9 supervisor -> next serve healthy "
                      f"{supervisor_s[-1]:.1f} s; kill -9 gateway -> healthy again "
                      f"{gateway_s[-1]:.1f} s", flush=True)
        finally:
            if serve is not inst.process and serve.poll() is None:
                serve.send_signal(signal.SIGTERM)
                try:
                    serve.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    os.killpg(serve.pid, signal.SIGKILL)
                    stop_postgres(inst.env)
    print(f"median kill -9 supervisor -> next serve healthy: "
          f"{statistics.median(supervisor_s):.1f} s")
    print(f"median kill -9 gateway -> healthy again: {statistics.median(gateway_s):.1f} s")


if __name__ == "__main__":
    main()
