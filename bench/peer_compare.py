"""Metnos against a peer, nanobot, both served on the same scripted model: turn latency.

    python bench/peer_compare.py [--turns 20] [--real-turns 8] [--work DIR]

`nanobot-ai[api]==0.3.5` goes into a venv of its own under the work folder (a fresh temp
folder, removed after; with `--work DIR` the venv stays there and later runs reuse it). Then
on loopback, in one run: the scripted OpenAI-compatible model, `nanobot serve` (its
`/v1/chat/completions`, streamed, a session per turn) and a whole Metnos instance (`metnos
init` + `metnos serve`, like bench/footprint.py; its web chat socket `/api/chat`, a session per
turn). Both read the same small notes in their own workspaces with their own file tool
(Metnos `fs_read`, nanobot `read_file`). Three cases: a text turn (one model call), a one-tool
turn (a read, then the answer) and a three-tool turn (three reads one after the other, then
the answer). A third agent, `model`, is the bench itself talking to the scripted model with
the same calls and no work of its own: the model's own time. Turns are interleaved (each round:
every case, every agent, in an order that rotates), after `--warmup` rounds not counted. The
scripted model answers from the request alone (a token in the person's message, the tool
rounds since it), so interleaved turns never get each other's replies; a turn that did not
make exactly its scripted model calls stops the bench.

Printed, for two model profiles: instant (answers at once), p50/p95 of the whole turn (to the
end of the reply) per case and agent, the ratio Metnos/nanobot, each agent's own time (its turn
minus the model's, paired round by round) and each further tool step's (three-tool minus
one-tool, halved); realistic (`--ttft-ms` 300 to the first token, then `--tokens-per-s` 40),
the same for the time to the final answer's first token. nanobot counts tokens with tiktoken's
`cl100k_base`: its TIKTOKEN_CACHE_DIR holds the copy litellm ships (no download, no internet).
Targets (issue 29): one-tool turn p50 ≤ 1.5× nanobot's in the same run; text turn ≤ 1.5×;
each further tool step ≤ 40 ms of Metnos's own time; realistic profile: time to the final
answer's first token ≤ the model's own time + 80 ms. A missed one is printed MISSED (the exit
code stays 0, so `make bench` goes on). Needs no PostgreSQL or Prefect of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import websockets  # noqa: E402

from bench._home import pct  # noqa: E402
from metnos.testing.llm_server import ScriptedLLM, ToolCall  # noqa: E402
from tests.support.pg import free_port  # noqa: E402
from tests.support.serve_process import ServedInstance, served_instance  # noqa: E402

NANOBOT = "nanobot-ai[api]==0.3.5"
CL100K = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
NOTES = {"milk.md": "buy milk\n", "plumber.md": "call the plumber\n",
         "plants.md": "water the plants\n"}
CASES = {"text": [], "one-tool": ["milk.md"], "three-tool": ["milk.md", "plumber.md", "plants.md"]}
ASKED = {"text": "tell me something nice", "one-tool": "what does milk.md say?",
         "three-tool": "what do my three notes say?"}
ANSWER = {"text": "You are doing great, and the plants look happy today.",
          "one-tool": "Your note says: buy milk.",
          "three-tool": "Your notes say: buy milk, call the plumber and water the plants."}
AGENTS = ("metnos", "nanobot", "model")
TOOL = {"metnos": "fs_read", "nanobot": "read_file", "model": "read_file"}
TIMEOUT_S = 120.0
START = time.monotonic()
Sample = tuple[float, float]  # ms: (the final answer's first token, the whole turn)
Res = dict[str, dict[str, list[Sample]]]  # agent -> case -> samples


def token(case: str, agent: str) -> str:
    return f"[{case}@{agent}]"


def said(body: dict[str, Any]) -> str:
    """The last message of the person in a model request (where the case's token is)."""
    users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    return str(users[-1].get("content")) if users else ""


def script(llm: ScriptedLLM) -> None:
    """Every (case, agent) its own route: the model answers from the request alone."""
    for agent in AGENTS:
        for case, files in CASES.items():
            if files:
                calls = [ToolCall(TOOL[agent], {"path": name}) for name in files]
                llm.route(token(case, agent), calls[0], final_text=ANSWER[case], then=calls[1:])
    llm.respond_with(lambda body: ANSWER["text"] if "[text@" in said(body) else None)


# -- nanobot ----------------------------------------------------------------------------------
def install_nanobot(venv: Path) -> Path:
    """nanobot's own venv, made once per work folder (a marker says what it holds)."""
    marker = venv / "bench-installed"
    if not (marker.is_file() and marker.read_text() == NANOBOT):
        print(f"installing {NANOBOT} into {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                               NANOBOT], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            sys.exit(f"pip install {NANOBOT} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        marker.write_text(NANOBOT)
    return venv / "bin" / "nanobot"


def tiktoken_cache(folder: Path) -> Path:
    """A TIKTOKEN_CACHE_DIR with cl100k_base: the file litellm ships, under the name tiktoken
    looks for (the sha1 of its URL, tiktoken/load.py), so nanobot never tries a download."""
    name = hashlib.sha1(CL100K.encode(), usedforsecurity=False).hexdigest()
    spec = importlib.util.find_spec("litellm")  # found, not imported
    assert spec is not None and spec.origin is not None, "litellm is not installed"
    shipped = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers" / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shipped, folder / name)
    return folder


@contextmanager
def nanobot_served(work: Path, llm: ScriptedLLM, binary: Path) -> Iterator[str]:
    """`nanobot serve` on a free loopback port, its model the scripted one (the `custom`
    provider: any OpenAI-compatible base URL), HOME and workspace under `work`."""
    home = work / "nanobot-home"
    shutil.rmtree(home, ignore_errors=True)
    (home / "workspace").mkdir(parents=True)
    for name, line in NOTES.items():
        (home / "workspace" / name).write_text(line)
    port = free_port()
    config = {"agents": {"defaults": {"workspace": str(home / "workspace"), "model": "scripted",
                                      "provider": "custom", "timezone": "UTC"}},
              "providers": {"custom": {"apiKey": "sk-bench", "apiBase": llm.api_base}},
              "api": {"host": "127.0.0.1", "port": port}}
    (home / "config.json").write_text(json.dumps(config, indent=2))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("METNOS_", "PREFECT_")) and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"HOME": str(home), "TIKTOKEN_CACHE_DIR": str(tiktoken_cache(work / "tiktoken"))}
    with (home / "serve.log").open("w") as log:
        proc = subprocess.Popen([str(binary), "serve", "--config", str(home / "config.json")],
                                env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    "nanobot serve did not start:\n" + (home / "serve.log").read_text()[-3000:])
                try:
                    if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)  # not ready yet: refused, or any other answer than 200
            yield url
        finally:
            stop_group(proc)


def stop_group(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM to the process group we started, SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


# -- turns ------------------------------------------------------------------------------------
async def read_stream(resp: httpx.Response) -> tuple[float | None, float, str]:
    """(when the first text came, when `[DONE]` came, the text) of an OpenAI chunk stream,
    read to its end (a connection closed with a chunk unread is reset, not reused)."""
    first, done, text = None, 0.0, []
    async for line in resp.aiter_lines():
        if line == "data: [DONE]":
            done = time.perf_counter()
        elif line.startswith("data: "):
            for choice in json.loads(line[6:]).get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    first = first or time.perf_counter()
                    text.append(piece)
    return first, done, "".join(text)


class Agents:
    """One client per agent, kept open for the whole run, as a chat client would."""

    def __init__(self, llm: ScriptedLLM, inst: ServedInstance, nanobot: str) -> None:
        self.llm, self.inst, self.nanobot_url = llm, inst, nanobot
        self.http = httpx.AsyncClient(timeout=TIMEOUT_S)
        self.socket: Any = None
        self.count = 0
        self.other_calls = 0  # model calls none of the turns scripted (none expected)

    async def __aenter__(self) -> Agents:
        url = self.inst.gateway.replace("http://", "ws://") + "/api/chat"
        self.socket = await websockets.connect(url, additional_headers=self.inst.owner_headers(),
                                               max_size=None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.socket.close()
        await self.http.aclose()

    async def turn(self, agent: str, case: str) -> Sample:
        self.count += 1
        text = f"{ASKED[case]} {token(case, agent)}"
        before = len(self.llm.requests)
        t0 = time.perf_counter()
        first, done, reply = await getattr(self, agent)(text, case)
        calls = [b for b in self.llm.requests[before:] if token(case, agent) in said(b)]
        assert len(calls) == len(CASES[case]) + 1, (
            f"{agent} {case}: {len(calls)} model calls, {len(CASES[case]) + 1} scripted")
        results = " ".join(str(m.get("content")) for m in calls[-1]["messages"]
                           if isinstance(m, dict) and m.get("role") == "tool")
        assert all(NOTES[name].strip() in results for name in CASES[case]), (
            f"{agent} {case}: the notes are not in the tool results: {results[:500]}")
        assert reply == ANSWER[case] and first is not None, f"{agent} {case}: {reply[:300]!r}"
        self.other_calls += len(self.llm.requests) - before - len(calls)
        return (first - t0) * 1000, (done - t0) * 1000

    async def metnos(self, text: str, case: str) -> tuple[float | None, float, str]:
        """The web chat's socket: `delta`s of the final model call, `reply`, `end`."""
        final = len(CASES[case]) + 1  # the model call that writes the answer
        await self.socket.send(json.dumps({"type": "message", "text": text, "lang": "en"}))
        first, done, reply = None, 0.0, ""
        while True:
            event = json.loads(await asyncio.wait_for(self.socket.recv(), TIMEOUT_S))
            kind = event.get("type")
            assert kind != "error", event
            if kind == "delta" and event.get("think") == final and first is None:
                first = time.perf_counter()
            elif kind == "reply":
                assert event.get("status") == "completed", event
                done, reply = time.perf_counter(), event["text"]
            elif kind == "end":
                return first, done, reply

    async def nanobot(self, text: str, case: str) -> tuple[float | None, float, str]:
        body = {"messages": [{"role": "user", "content": text}], "stream": True,
                "session_id": f"bench-{self.count}"}
        async with self.http.stream("POST", f"{self.nanobot_url}/v1/chat/completions",
                                    json=body) as resp:
            assert resp.status_code == 200, (await resp.aread())[:500]
            return await read_stream(resp)

    async def model(self, text: str, case: str) -> tuple[float | None, float, str]:
        """The model's own time: its calls made by a loop that does nothing else."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
        for step, name in enumerate([*CASES[case], None]):
            body = {"model": "scripted", "messages": messages, "stream": True}
            async with self.http.stream("POST", f"{self.llm.api_base}/chat/completions",
                                        json=body) as resp:
                answer = await read_stream(resp)
            if name is None:
                return answer
            call = {"id": f"call_{step}", "type": "function",
                    "function": {"name": TOOL["model"], "arguments": json.dumps({"path": name})}}
            messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": f"call_{step}", "content": NOTES[name]}]
        raise AssertionError("unreachable")


async def rounds(agents: Agents, count: int, label: str) -> Res:
    """`count` rounds: every case, every agent, the order of the agents rotating."""
    found: Res = {a: {c: [] for c in CASES} for a in AGENTS}
    for i in range(count):
        for case in CASES:
            for agent in AGENTS[i % 3:] + AGENTS[:i % 3]:
                found[agent][case].append(await agents.turn(agent, case))
        if (i + 1) % 5 == 0 or i + 1 == count:
            print(f"  {label}: {i + 1}/{count} rounds ({time.monotonic() - START:.0f} s)",
                  flush=True)
    return found


async def run(llm: ScriptedLLM, inst: ServedInstance, nanobot: str, args: argparse.Namespace
              ) -> dict[str, Any]:
    async with Agents(llm, inst, nanobot) as agents:
        await rounds(agents, args.warmup, "warm-up")
        instant = await rounds(agents, args.turns, "instant model")
        llm.first_token_s, llm.tokens_per_s = args.ttft_ms / 1000, args.tokens_per_s
        realistic = await rounds(agents, args.real_turns, "realistic model")
        return {"instant": instant, "realistic": realistic, "other": agents.other_calls,
                "load": os.getloadavg()[1]}  # the machine's, over the last 5 minutes


# -- report -----------------------------------------------------------------------------------
def p50(values: list[float]) -> float:
    return statistics.median(values)


def paired(res: Res, agent: str, case: str, which: int) -> list[float]:
    """The agent's own time, round by round: its figure minus the model's in that round."""
    return [a[which] - m[which] for a, m in zip(res[agent][case], res["model"][case], strict=True)]


def table(res: Res, which: int) -> dict[str, float]:
    """p50/p95 per case and agent; the ratios Metnos/nanobot of the p50s, returned."""
    ratios = {}
    print(f"{'case':12}" + "".join(f"{a + ' p50':>13}{'p95':>8}" for a in AGENTS)
          + f"{'metnos/nanobot':>16}")
    for case in CASES:
        row = "".join(f"{p50([s[which] for s in res[a][case]]):13.1f}"
                      f"{pct([s[which] for s in res[a][case]], 0.95):8.1f}" for a in AGENTS)
        ratios[case] = p50([s[which] for s in res["metnos"][case]]) / p50(
            [s[which] for s in res["nanobot"][case]])
        print(f"{case:12}{row}{ratios[case]:15.2f}×")
    return ratios


def own(res: Res, which: int, title: str) -> dict[str, float]:
    """Each agent's own time per case (p50 of the paired differences) and per further step."""
    print(f"\n{title} (p50 of the agent minus the model, round by round), ms")
    print(f"{'agent':10}" + "".join(f"{c:>12}" for c in CASES) + f"{'per further step':>18}")
    found = {}
    for agent in ("metnos", "nanobot"):
        mine = {case: p50(paired(res, agent, case, which)) for case in CASES}
        step = (mine["three-tool"] - mine["one-tool"]) / (len(CASES["three-tool"]) - 1)
        print(f"{agent:10}" + "".join(f"{mine[c]:12.1f}" for c in CASES) + f"{step:18.1f}")
        found |= {f"{agent} {case}": v for case, v in mine.items()} | {f"{agent} step": step}
    return found


def report(found: dict[str, Any], args: argparse.Namespace) -> None:
    instant, realistic = found["instant"], found["realistic"]
    print(f"\n== instant model: the whole turn, ms ({args.turns} turns per case and agent, "
          "interleaved)")
    ratio = table(instant, 1)
    whole = own(instant, 1, "own time, whole turn")
    print(f"\n== realistic model ({args.ttft_ms:g} ms to the first token, {args.tokens_per_s:g} "
          f"tokens/s): time to the final answer's first token, ms ({args.real_turns} turns each)")
    table(realistic, 0)
    added = own(realistic, 0, "added to the model's own time to the first token")
    if found["other"]:
        print(f"\nmodel calls no turn scripted: {found['other']}")

    print(f"\n== targets (issue 29); the bench took {time.monotonic() - START:.0f} s, load "
          f"average {found['load']:.1f} on {os.cpu_count()} cores")
    lines = [("one-tool turn p50, × nanobot's", ratio["one-tool"], 1.5, "×"),
             ("text turn p50, × nanobot's", ratio["text"], 1.5, "×"),
             ("Metnos's own time per further tool step", whole["metnos step"], 40.0, " ms")]
    lines += [(f"realistic {case}: TTFT − the model's own", added[f"metnos {case}"], 80.0, " ms")
              for case in CASES]
    for name, value, target, unit in lines:
        print(f"{name:46} {value:8.2f}{unit}  target ≤ {target:g}{unit}"
              f"{'' if value <= target else '  MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=20, help="rounds with the instant model")
    parser.add_argument("--real-turns", type=int, default=8,
                        help="rounds with the realistic model")
    parser.add_argument("--warmup", type=int, default=2, help="rounds not counted, first")
    parser.add_argument("--ttft-ms", type=float, default=300.0)
    parser.add_argument("--tokens-per-s", type=float, default=40.0)
    parser.add_argument("--work", type=Path, help="keep nanobot's venv here between runs")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop what we started, then exit
    work = args.work.resolve() if args.work else Path(tempfile.mkdtemp(prefix="metnos-peer-"))
    try:
        binary = install_nanobot(work / "nanobot-venv")
        with ScriptedLLM() as llm, nanobot_served(work, llm, binary) as nanobot:
            script(llm)
            print(f"starting Metnos, init + serve ({time.monotonic() - START:.0f} s)", flush=True)
            with served_instance(METNOS_LANG="en", METNOS_LLM_MODEL="openai/scripted",
                                 METNOS_LLM_API_BASE=llm.api_base, METNOS_LLM_API_KEY="sk-bench",
                                 METNOS_POLICY_MAX_ACTIONS_PER_HOUR="1000000") as inst:
                for name, line in NOTES.items():
                    (inst.home / "workspace" / name).write_text(line)
                found = asyncio.run(run(llm, inst, nanobot, args))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    report(found, args)


if __name__ == "__main__":
    main()
