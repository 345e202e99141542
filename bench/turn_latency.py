"""Turn latency of the agent loop: one-tool and three-tool turns, with and without Prefect.

    make bench                       # starts PostgreSQL and a Prefect server, then runs this
    python -m tests.support.services -- python bench/turn_latency.py --turns 100

The scripted LLM (loopback, instant) answers a one-tool turn with an `fs_read` call, then the
answer (two model calls); a three-tool turn with three `fs_read` calls one after the other,
then the answer (four model calls). Every model call streams (the answer arrives as `delta`
events on `service.events`). Each call passes the policy, runs in the bubblewrap sandbox, is
audited, and its result goes back to the model. Three pipelines run interleaved in one process:

- `prefect`: HTTP → gateway → Prefect `turn` flow (in-process) → executor tasks (model calls plain);
- `plain`:   HTTP → gateway → `run_pipeline` as plain function calls;
- `direct`:  `run_pipeline` called as functions, no HTTP.

Time to first token (TTFT) = from the request to the first `delta` of the FINAL model call.
Prefect's share = prefect − plain, paired turn by turn; the gateway's = plain − direct. The
Prefect API requests of each turn are counted and timed at the Prefect client's transport
(`bench/_probes.py`); "before the first token" are those that started before it. Sandbox
start is measured apart: our bwrap argv running `true` against a bare bwrap `true`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import uvicorn  # noqa: E402

from bench._home import bench_home, llm_env, pct  # noqa: E402
from bench._probes import DeltaClock, PrefectCalls, busy_ms, endpoint_table  # noqa: E402
from bench._targets import report as report_targets  # noqa: E402
from metnos.mechanisms.sandbox import (  # noqa: E402
    SandboxRequest,
    _process,  # noqa: E402
    build_argv,
    find_bwrap,
    find_python_runtime,
)
from metnos.mechanisms.sandbox._pins import pin  # noqa: E402
from metnos.testing.llm_server import ScriptedLLM  # noqa: E402
from tests.support.pg import free_port  # noqa: E402

NOTES = {"milk.md": "buy milk\n", "plumber.md": "call the plumber\n",
         "plants.md": "water the plants\n"}
CASES = {"one-tool": ["milk.md"], "three-tool": ["milk.md", "plumber.md", "plants.md"]}
ANSWER = "Your notes say: buy milk, call the plumber and water the plants."
PIPELINES = ("prefect", "plain", "direct")
Sample = dict[str, float]


def row(name: str, values: list[float]) -> str:
    return (f"  {name:<44} p50 {statistics.median(values):7.1f} ms"
            f"   p90 {pct(values, 0.9):7.1f} ms")


def setup_home(root: Path, llm: ScriptedLLM) -> Any:
    settings = bench_home(root, "bench_turns", **llm_env(llm.api_base, "Supervised"))
    for name, line in NOTES.items():
        (settings.workspace / name).write_text(line * 20)
    return settings


class Probes:
    """The bench's instruments: when each turn's runner finished, its Prefect requests, the
    first text of each model call."""

    def __init__(self) -> None:
        self.done: dict[str, float] = {}
        self.began: dict[str, float] = {}  # when the turn's runner started
        self.calls = PrefectCalls()
        self.deltas = DeltaClock()
        self.last = ""  # the turn of the latest sample
        self.turn_ids: dict[str, list[str]] = {case: [] for case in CASES}  # prefect turns

    def wrap(self, runner: Any) -> Any:
        async def timed(service: Any, ctx: Any) -> None:
            self.began[ctx.turn_id] = time.perf_counter()
            try:
                with self.calls.turn(ctx.turn_id):
                    await runner(service, ctx)
            finally:
                self.done[ctx.turn_id] = time.perf_counter()
        return timed

    def sample(self, turn_id: str, t0: float, t_reply: float, timings: dict[str, float]
               ) -> Sample:
        self.last = turn_id
        first = self.deltas.final(turn_id)
        before = self.calls.of(turn_id, before=first)
        every = self.calls.of(turn_id)
        # the flow run's start: from the runner's start to the run's first state (Running)
        running = next((c.end for c in every if c.path.endswith("/set_state")), None)
        start = [c for c in every if running is not None and c.end <= running]
        return {"ttft": (first - t0) * 1000, "reply": (t_reply - t0) * 1000,
                "whole": (self.done[turn_id] - t0) * 1000, **timings,
                "flow_start": (running - self.began[turn_id]) * 1000 if running else 0.0,
                "api_n_start": len(start), "api_ms_start": busy_ms(start),
                "api_n_ttft": len(before), "api_ms_ttft": busy_ms(before, until=first),
                "api_n": len(every), "api_ms": busy_ms(every)}


def script(llm: ScriptedLLM, case: str) -> None:
    for path in CASES[case]:
        llm.enqueue_tool_call("fs_read", {"path": path})
    llm.enqueue_text(ANSWER)


async def http_turn(client: httpx.AsyncClient, probes: Probes) -> Sample:
    t0 = time.perf_counter()
    resp = await client.post("/api/turns", json={"text": "what do my notes say?", "lang": "en"})
    t_reply = time.perf_counter()
    body = resp.json()
    assert resp.status_code == 200 and body["status"] == "completed", body
    assert body["reply"] == ANSWER, body["reply"][:300]
    while body["turn_id"] not in probes.done:
        await asyncio.sleep(0.001)
    return probes.sample(body["turn_id"], t0, t_reply, body["timings_ms"])


async def direct_turn(service: Any, probes: Probes) -> Sample:
    from metnos.turns.pipeline import run_pipeline

    t0 = time.perf_counter()
    ctx = await service.open_turn("what do my notes say?", session_id=None, lang="en",
                                  channel="bench", sender="owner")
    reply = await run_pipeline(service, ctx)
    t_reply = time.perf_counter()
    assert reply == ANSWER, reply[:300]
    await service.close_turn(ctx, reply, "completed")
    probes.done[ctx.turn_id] = time.perf_counter()
    return probes.sample(ctx.turn_id, t0, t_reply, ctx.timings)


async def serve(app: Any, port: int) -> uvicorn.Server:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    return server


async def sandbox_start(settings: Any, runs: int) -> tuple[list[float], list[float]]:
    """Median start of our full sandbox argv running `true`, against a bare bwrap `true`."""
    from metnos.mechanisms.sandbox.profile import SandboxProfile

    bwrap = find_bwrap()
    runtime = await find_python_runtime(bwrap)
    request = SandboxRequest(exec_dir=Path(__file__).parent, entry="turn_latency.py",
                             profile=SandboxProfile(), workspace=settings.workspace)
    # the reference command of notes/security.md §1 ("the brief's command")
    bare = [str(bwrap), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-all", "--die-with-parent", "--", "/usr/bin/true"]
    ours: list[float] = []
    base: list[float] = []
    with pin(request) as pinned:
        argv = build_argv(request.profile, bwrap=bwrap, exec_dir_fd=pinned.exec_dir_fd,
                          workspace_fd=pinned.workspace_fd, python=runtime, entry=request.entry,
                          extra_mounts=pinned.extra_mounts, hidden_dirs=pinned.hidden_dirs,
                          hidden_files=pinned.hidden_files)
        argv = [*argv[: len(argv) - argv[::-1].index("--")], "/usr/bin/true"]
        full = [*_process.limit_prefix(request), *argv]
        for i in range(runs * 2):
            which, target, fds = (full, ours, pinned.fds) if i % 2 else (bare, base, ())
            t0 = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                *which, pass_fds=fds, start_new_session=True, env={"PATH": "/usr/bin:/bin"},
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL)
            assert await proc.wait() == 0, which
            target.append((time.perf_counter() - t0) * 1000)
    return ours, base


def paired(a: list[Sample], b: list[Sample], key: str) -> list[float]:
    return [x[key] - y[key] for x, y in zip(a, b, strict=True)]


def med(rows: list[Sample], key: str) -> float:
    return statistics.median([r.get(key, 0.0) for r in rows])


def report_case(case: str, res: dict[str, list[Sample]], probes: Probes) -> dict[str, float]:
    thinks = len(CASES[case]) + 1
    p, pl, d = res["prefect"], res["plain"], res["direct"]
    print(f"\n== {case} turn: {len(CASES[case])} fs_read, {thinks} model calls, "
          f"{len(p)} turns per pipeline ==")
    for mode in PIPELINES:
        print(f"[{mode}]")
        for key, label in (("ttft", "time to first token (final call)"),
                           ("reply", "time to reply (HTTP answer)"), ("whole", "whole turn")):
            print(row(label, [r[key] for r in res[mode]]))
    share_ttft, share_whole = paired(p, pl, "ttft"), paired(p, pl, "whole")
    print("[shares, paired turn by turn]")
    print(row("prefect share of TTFT (prefect - plain)", share_ttft))
    print(row("prefect share of whole turn", share_whole))
    print(row("gateway share of TTFT (plain - direct)", paired(pl, d, "ttft")))
    print(f"[split, medians: {'prefect':>9} {'plain':>9}]")

    def split(label: str, key: str) -> None:
        print(f"  {label:<44} {med(p, key):7.1f} ms {med(pl, key):7.1f} ms")

    split("history window + conversation", "history")
    for i in range(1, thinks + 1):
        split(f"model call {i} (think_{i}, scripted LLM)", f"think_{i}")
    split("policy (all steps)", "policy")
    split("sandbox spawn (all steps)", "sandbox_spawn")
    for rows in (p, pl):
        for r in rows:
            r["executor"] = r.get("sandbox_total", 0) - r.get("sandbox_spawn", 0)
    split("executor (sandbox total - spawn, all steps)", "executor")
    print(f"  {'flow run start (runner start -> Running)':<44} {med(p, 'flow_start'):7.1f} ms"
          f"  ({med(p, 'api_n_start'):.0f} requests, {med(p, 'api_ms_start'):.1f} ms)")
    print(f"  {'Prefect requests started before 1st token':<44} {med(p, 'api_ms_ttft'):7.1f} ms"
          f"  ({med(p, 'api_n_ttft'):.0f} requests, some beside the pipeline)")
    print(f"  {'Prefect requests, whole turn':<44} {med(p, 'api_ms'):7.1f} ms"
          f"  ({med(p, 'api_n'):.0f} requests)")
    print("  Prefect API requests per turn (requests/turn, median ms each):")
    turns = [probes.calls.of(tid) for tid in probes.turn_ids[case]]
    for name, per_turn, ms in endpoint_table(turns):
        print(f"    {name:<50} {per_turn:4.1f} x {ms:6.1f} ms")
    return {"share_ttft": statistics.median(share_ttft), "ttft": med(p, "ttft"),
            "whole": med(p, "whole")}


async def main(turns: int, warmup: int) -> int:
    if not os.environ.get("PREFECT_API_URL") or not os.environ.get("METNOS_TEST_PG_DATA"):
        sys.exit("run through `make bench` (it starts PostgreSQL and a Prefect server)")
    from flows.turn import run_turn
    from metnos.faces.gateway.app import create_app
    from metnos.turns.handle import plain_runner

    root = Path(tempfile.mkdtemp(prefix="metnos-bench-"))
    probes = Probes()
    probes.calls.install()
    with ScriptedLLM() as llm:
        settings = setup_home(root, llm)
        apps = {"prefect": create_app(settings, runner=probes.wrap(run_turn)),
                "plain": create_app(settings, runner=probes.wrap(plain_runner))}
        servers, clients = [], {}
        for mode, app in apps.items():
            port = free_port()
            servers.append(await serve(app, port))
            probes.deltas.attach(app.state.gateway.service)
            clients[mode] = httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", timeout=60,
                headers={"Authorization": f"Bearer {settings.owner_token()}"})
        service = apps["plain"].state.gateway.service
        results: dict[str, dict[str, list[Sample]]] = {
            case: {mode: [] for mode in PIPELINES} for case in CASES}
        for i in range(warmup + turns):
            for case in CASES:
                samples: dict[str, Sample] = {}
                for mode in PIPELINES:
                    script(llm, case)
                    samples[mode] = (await direct_turn(service, probes) if mode == "direct"
                                     else await http_turn(clients[mode], probes))
                    if mode == "prefect" and i >= warmup:
                        probes.turn_ids[case].append(probes.last)
                if i >= warmup:
                    for mode, sample in samples.items():
                        results[case][mode].append(sample)
            if (i + 1) % 25 == 0:
                print(f"  {max(0, i + 1 - warmup)}/{turns} rounds", flush=True)
        ours, base = await sandbox_start(settings, 50)
        for client in clients.values():
            await client.aclose()
        for server in servers:
            server.should_exit = True
        await asyncio.sleep(0.5)
    figures = {case: report_case(case, results[case], probes) for case in CASES}
    ratio = statistics.median(ours) / statistics.median(base)
    print(f"\nsandbox start, {len(ours)} interleaved runs each")
    print(row("bare bwrap (ro /, dev, proc, unshare-all)", base))
    print(row("metnos sandbox argv, true", ours))
    print(f"  ratio (target <= 1.3)                        {ratio:7.2f}")
    one, three = figures["one-tool"], figures["three-tool"]
    per_step = (three["share_ttft"] - one["share_ttft"]) / (len(CASES["three-tool"]) - 1)
    print("\ntargets")
    return report_targets([
        ("one-tool turn, Prefect's share of TTFT", one["share_ttft"] / 1000, 0.060),
        ("Prefect's share of TTFT per further step", per_step / 1000, 0.010),
        ("one-tool turn, time to first token", one["ttft"] / 1000, 0.110),
        ("one-tool turn, whole turn", one["whole"] / 1000, 0.400),
    ], prefix="  ") | report_targets([("sandbox start / bare bwrap", ratio, 1.3)], unit="x",
                                     prefix="  ")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=100, help="rounds (each: every case, "
                        "every pipeline)")
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.turns, args.warmup)))
