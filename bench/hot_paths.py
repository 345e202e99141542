"""Speed of the in-process hot paths whose targets used to be asserted in unit tests.

    make bench        # or: .venv/bin/python bench/hot_paths.py [--runs 5]

Each figure is a median over `--runs` runs, printed with its target; the script exits 1 when a
median misses its target (a bench on a quiet machine, not a unit test on a loaded one):
- the secret scanner (Law 2) on 1 MB of clean prose, and redacting a token hidden in it;
- Law 2 on the model's traffic (`metnos.mechanisms.llm.outbound`): one request as a turn sends it (a
  12 KB system prompt and 20 messages of history), and a 2 KB reply streamed in 4-character
  deltas through the held stream;
- the embedded planner (hassil intents, compiled once) per utterance;
- the i18n language lint per text, once warm;
- one `LLMPort.complete()` round trip to the scripted LLM on loopback (litellm included);
- the network guard refusing a non-loopback connect;
- restarting an initialised embedded PostgreSQL cluster (what `metnos serve` waits for).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _targets import report  # noqa: E402  (bench/ is the script's folder)

from metnos.ground.db.embedded import EmbeddedPostgres  # noqa: E402
from metnos.ground.i18n import lint  # noqa: E402
from metnos.mechanisms.llm import plan_embedded  # noqa: E402
from metnos.mechanisms.llm.port import LLMPort  # noqa: E402
from metnos.testing import ScriptedLLM  # noqa: E402
from tests.i18n.test_lint import MIXED  # noqa: E402
from tests.llm.conftest import llm_settings  # noqa: E402
from tests.llm.tools_fixture import tools_it  # noqa: E402
from tests.llm_guard import NetworkGuard, RealNetworkBlocked  # noqa: E402
from tests.policy.secrets_fixture import make_instance  # noqa: E402
from tests.support.pg import free_port  # noqa: E402

PROSE = ("The quick brown fox jumps over the lazy dog 42%. " * 21000)[:1_000_000]


def timed(fn: Callable[[], object], runs: int) -> float:
    """Median seconds of `fn()` over `runs` calls."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def scanner_figures(runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="metnos-bench-scan-") as tmp:
        inst = make_instance(Path(tmp))
        clean = timed(lambda: inst.scanner.find({"content": PROSE}), runs)
        hidden = {"content": PROSE + inst.owner_token}
        redact = timed(lambda: inst.scanner.redact(hidden), runs)
    return {"scanner find, 1 MB clean": clean, "scanner redact, 1 MB + a token": redact}


def outbound_figures(runs: int) -> dict[str, float]:
    from metnos.mechanisms.llm.outbound import Outbound

    with tempfile.TemporaryDirectory(prefix="metnos-bench-outbound-") as tmp:
        inst = make_instance(Path(tmp))
        outbound = Outbound(inst.scanner)
        system = {"role": "system", "content": PROSE[:12_000]}
        history = [{"role": "user" if i % 2 else "assistant", "content": PROSE[i:i + 400]}
                   for i in range(20)]
        request = timed(lambda: outbound.request([system, *history]), runs * 4)
        reply = PROSE[:2_000]

        def streamed() -> None:
            sink: list[str] = []
            held = outbound.stream(sink.append)
            for i in range(0, len(reply), 4):
                held(reply[i:i + 4])
            held.flush()
            assert "".join(sink) == reply

        stream = timed(streamed, runs * 4)
    return {"Law 2 on a model request (12 KB prompt + 20 messages)": request,
            "Law 2 on a 2 KB reply streamed in 4-char deltas": stream}


def planner_per_call(runs: int) -> float:
    tools = tools_it()
    plan_embedded("leggi note.md", "it", tools)
    return timed(lambda: plan_embedded("leggi il file appunti/lista spesa.md", "it", tools_it()),
                 runs * 20)


def lint_per_call(runs: int) -> float:
    lint.warm_up()
    return timed(lambda: lint.i18n_lint_text(MIXED, "it"), runs * 2)


def llm_round_trip(runs: int) -> float:
    hello = [{"role": "user", "content": "ciao"}]

    async def medians(server: ScriptedLLM) -> float:
        port = LLMPort(llm_settings(server), wait_initial_s=0.01, wait_max_s=0.05)
        times = []
        for _ in range(runs * 3 + 1):  # the first is a warm-up: litellm builds a lot once
            server.enqueue_text("x")
            started = time.perf_counter()
            await port.complete(hello)
            times.append(time.perf_counter() - started)
        return statistics.median(times[1:])

    with ScriptedLLM() as server:
        return asyncio.run(medians(server))


def guard_refusal(runs: int) -> float:
    guard = NetworkGuard()

    def refused() -> None:
        with socket.socket() as sock:
            try:
                sock.connect(("203.0.113.1", 443))  # TEST-NET-3: the guard refuses it first
            except RealNetworkBlocked:
                return
        raise AssertionError("the guard let a non-loopback connect through")

    guard.install()
    try:
        return timed(refused, runs)
    finally:
        guard.uninstall()


def pg_restart(runs: int) -> float:
    with tempfile.TemporaryDirectory(prefix="metnos-bench-pg-") as tmp:
        root = Path(tmp)
        pg = EmbeddedPostgres(root / "pg", free_port(), root / "pg.password")
        pg.initialise()
        times = []
        try:
            for _ in range(max(3, runs // 2)):
                pg.start()
                assert pg.last_start_s is not None
                times.append(pg.last_start_s)
                pg.stop()
        finally:
            pg.stop()
        return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    figures = [(name, s, target) for (name, s), target in
               zip(scanner_figures(runs).items(), (0.5, 1.0), strict=True)]
    figures += [(name, s, target) for (name, s), target in
                zip(outbound_figures(runs).items(), (0.010, 0.100), strict=True)]
    figures += [
        ("embedded planner, per utterance", planner_per_call(runs), 0.020),
        ("i18n lint, per text (warm)", lint_per_call(runs), 0.2),
        ("LLMPort.complete() round trip, loopback", llm_round_trip(runs), 0.5),
        ("network guard refusal", guard_refusal(runs), 0.1),
        ("embedded PostgreSQL start, initialised cluster", pg_restart(runs), 10.0),
    ]
    return report(figures, unit="ms")


if __name__ == "__main__":
    sys.exit(main())
