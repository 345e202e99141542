"""Footprint of a whole instance: memory per process, start to healthy, the CLI's wall time.

    python bench/footprint.py [--turns 20]

One real instance under a throwaway METNOS_HOME (`metnos init`, then `metnos serve`: embedded
PostgreSQL, the Prefect server, the gateway serving the schedules too), its model a scripted
OpenAI-compatible server on loopback. Printed:
- start to healthy: from `metnos serve` to its "ready" banner (the gateway answering, the
  model checked), the first start after `init` and a warm one (stopped, started again);
- RSS and PSS of each process and in total, right after the start and after `--turns` turns
  (half text turns, half one-tool turns: an `fs_read`, then the answer);
- the wall time of `metnos --help`, `metnos chat "ciao"` and `metnos approvals list` against
  the running instance (median of 5 each).
Targets (issue 29): idle after 20 turns ≤ 600 MiB PSS in all; warm start ≤ 8 s; `--help`
≤ 0.3 s; `chat "ciao"` ≤ 0.6 s; a missed one is printed MISSED (the exit code stays 0, so
`make bench` goes on). Needs no PostgreSQL or Prefect of its own.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import psutil  # noqa: E402

from metnos.testing.llm_server import ScriptedLLM  # noqa: E402
from tests.support.serve_process import (  # noqa: E402
    ServedInstance,
    served_instance,
    start,
)

CLI = [str(Path(sys.executable).parent / "metnos")]  # the console script a person runs
MIB = 1024 * 1024


def kind(proc: psutil.Process, supervisor: int) -> str:
    """What a process of the instance is, from its command line."""
    if proc.pid == supervisor:
        return "supervisor"
    try:
        line = " ".join(proc.cmdline())
    except psutil.Error:
        return "gone"
    for needle, name in (("flows.gateway", "gateway"), ("deployments.serve", "runner"),
                         ("deployments.prefect_server", "prefect-server"),
                         ("serve.watchdog", "watchdog"), ("prefect.engine", "flow run"),
                         ("postgres", "postgresql")):
        if needle in line:
            return name
    return str(proc.name())


def memory(inst: ServedInstance) -> dict[str, tuple[float, float, int]]:
    """(RSS MiB, PSS MiB, processes) per kind of process of the instance: the supervisor's
    tree, and PostgreSQL's (its postmaster is not the supervisor's child: `pg_ctl` starts it)."""
    supervisor = inst.process.pid
    roots = [psutil.Process(supervisor)]
    records = json.loads((inst.home / "run" / "processes.json").read_text())
    roots += [psutil.Process(int(r["pid"])) for r in records if r["name"] == "postgres"]
    procs = {p.pid: p for root in roots for p in [root, *root.children(recursive=True)]}
    found: dict[str, tuple[float, float, int]] = {}
    for proc in procs.values():
        try:
            info = proc.memory_full_info()
        except psutil.Error:
            continue
        rss, pss, count = found.get(kind(proc, supervisor), (0.0, 0.0, 0))
        found[kind(proc, supervisor)] = (rss + info.rss / MIB, pss + info.pss / MIB, count + 1)
    return found


def show_memory(title: str, found: dict[str, tuple[float, float, int]]) -> float:
    print(f"\n== memory, {title}")
    print(f"{'process':16} {'n':>3} {'RSS MiB':>9} {'PSS MiB':>9}")
    for name, (rss, pss, count) in sorted(found.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:16} {count:3d} {rss:9.0f} {pss:9.0f}")
    total_rss = sum(v[0] for v in found.values())
    total_pss = sum(v[1] for v in found.values())
    print(f"{'total':16} {sum(v[2] for v in found.values()):3d} {total_rss:9.0f} "
          f"{total_pss:9.0f}")
    return total_pss


def turns(inst: ServedInstance, llm: ScriptedLLM, count: int) -> list[float]:
    (inst.home / "workspace" / "milk.md").write_text("buy milk\n")
    took = []
    for i in range(count):
        if i % 2:
            llm.enqueue_tool_call("fs_read", {"path": "milk.md"})
            llm.enqueue_text("Your note says: buy milk.")
        else:
            llm.enqueue_text("Ciao!")
        t0 = time.perf_counter()
        done = httpx.post(f"{inst.gateway}/api/turns", headers=inst.owner_headers(),
                          json={"text": f"turn {i}: what does milk.md say?", "lang": "en"},
                          timeout=120).json()
        took.append(time.perf_counter() - t0)
        assert done.get("status") == "completed", done
    return took


def cli_wall(env: dict[str, str], args: list[str], llm: ScriptedLLM | None = None,
             rounds: int = 5) -> float:
    walls = []
    for _ in range(rounds):
        if llm is not None:
            llm.enqueue_text("Ciao!")
        t0 = time.perf_counter()
        done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True,
                              timeout=120)
        walls.append(time.perf_counter() - t0)
        assert done.returncode == 0, done.stdout + done.stderr
    return statistics.median(walls)


def restart(inst: ServedInstance) -> float:
    """Stop `metnos serve` (SIGTERM), start it again: seconds to its "ready" banner."""
    inst.process.send_signal(signal.SIGTERM)
    inst.process.wait(timeout=120)
    return start(inst)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    with ScriptedLLM() as llm:
        t0 = time.perf_counter()
        with served_instance(METNOS_LANG="en", METNOS_LLM_MODEL="openai/scripted",
                             METNOS_LLM_API_BASE=llm.api_base,
                             METNOS_LLM_API_KEY="sk-bench") as inst:
            first = time.perf_counter() - t0  # `metnos init` included: said apart below
            warm = restart(inst)
            time.sleep(5)  # the runner's deployments registered, the start's work settled
            show_memory("idle right after the start", memory(inst))
            took = turns(inst, llm, args.turns)
            time.sleep(3)
            idle = show_memory(f"idle after {args.turns} turns", memory(inst))
            env = {**inst.env, "METNOS_LANG": "en"}
            helped = cli_wall(env, ["--help"])
            chatted = cli_wall(env, ["chat", "ciao"], llm)
            listed = cli_wall(env, ["approvals", "list"])
    print("\n== start and turns")
    print(f"init + first start to ready      {first:6.1f} s")
    print(f"warm start to ready              {warm:6.1f} s")
    print(f"turn over HTTP, median           {statistics.median(took) * 1000:6.0f} ms "
          f"({len(took)} turns)")
    print("\n== the CLI, wall, median of 5")
    print(f"metnos --help                    {helped:6.2f} s")
    print(f'metnos chat "ciao"               {chatted:6.2f} s')
    print(f"metnos approvals list            {listed:6.2f} s")
    print("\n== targets (issue 29)")
    for name, value, target in (("idle after the turns, PSS MiB", idle, 600.0),
                                ("warm start to ready, s", warm, 8.0),
                                ("metnos --help, s", helped, 0.3),
                                ('metnos chat "ciao", s', chatted, 0.6)):
        ratio = value / target
        print(f"{name:32} {value:8.2f}  target {target:g}  ×{ratio:.2f} of it"
              f"{'' if value <= target else '  MISSED'}")


if __name__ == "__main__":
    main()
