"""Mnestoma at scale, and routing by traces on the scripted month (issue 13, Acceptance).

    .venv/bin/python -m tests.support.services -- .venv/bin/python bench/mnestoma_scale.py
    (add --quick for smaller sizes)

1. A synthetic mnestoma in the real embedded PostgreSQL (bulk `INSERT ... SELECT` from
   `generate_series`): 10k executors in 250 habits of 40, and 1k, 10k, 100k, 200k mnests
   (9 in 10 inside a habit, 1 in 10 to the next one; use clocks spread over the last 1000
   invocations, so an ager cycle decays about 95 % of them). For each size it times one ager
   cycle (`metnos.features.mnestoma.ager.cycle`) and one trace detection
   (`metnos.features.mnestoma.traces.detect`), and prints the time per mnest between sizes (the
   slope); the ager must grow linearly: the ratio of the last slope to the first is printed.
2. The scripted month (`metnos.testing.month`): its hand-offs (a call after the model saw
   the previous round's calls, self hand-offs left out) make its mnestoma, whose traces are
   detected; then for every turn the prompt tokens of the tool list (each model call sends
   it once: rounds + 1 calls) with and without routing (`metnos.mechanisms.llm.tokens`, cl100k), and
   the tool-choice accuracy: the share of turns whose expected executors were all offered.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from bench._home import bench_home  # noqa: E402
from metnos.features.mnestoma import traces, wish  # noqa: E402
from metnos.features.mnestoma.routing import route  # noqa: E402
from metnos.ground.db.engine import database_url, make_engine  # noqa: E402
from metnos.ground.settings import Settings  # noqa: E402
from metnos.mechanisms.audit import AuditLog, open_audit_log  # noqa: E402
from metnos.mechanisms.llm.tokens import count_text  # noqa: E402

EXECUTORS, HABIT = 10_000, 40
SIZES, QUICK = (1_000, 10_000, 100_000, 200_000), (1_000, 5_000, 20_000)
_TABLES = "mnest, executor_use, use_clock, evolution_move, trace, proposal"
_MNESTS = """
INSERT INTO mnest (src, dst, weight, clock, created_at, updated_at)
SELECT 'e' || ((i % 250) * 40 + (i / 250) % 40),
       'e' || ((CASE WHEN i % 10 = 9 THEN (i % 250 + 1) % 250 ELSE i % 250 END) * 40
               + ((i / 250) % 40 + (i / 250) / 40 + 1) % 40),
       1 + i % 7, i % 1000, now(), now()
FROM generate_series(0, :n - 1) AS i
"""
_USES = """
INSERT INTO executor_use (name, invocations, window_uses, last_clock, state, state_clock,
                          updated_at)
SELECT 'e' || i, 1 + i % 50, 0, 600 + i % 400, 'active', 0, now()
FROM generate_series(0, :n - 1) AS i
"""


def setup(root: Path) -> Settings:
    return bench_home(root, "bench_mnestoma")


def plant(engine: Engine, mnests: int) -> None:
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {_TABLES}"))
        conn.execute(text(_USES), {"n": EXECUTORS})
        conn.execute(text(_MNESTS), {"n": mnests})
        conn.execute(text("INSERT INTO use_clock (id, clock, ager_clock, ager_cycles) "
                          "VALUES (1, 1000, 0, 0)"))
        conn.execute(text("ANALYZE mnest"))


def scale(engine: Engine, settings: Settings, audit: AuditLog,
          sizes: tuple[int, ...]) -> None:
    from metnos.features.mnestoma import ager

    names = [f"e{i}" for i in range(EXECUTORS)]
    rows: list[tuple[int, float, float, int, int]] = []
    print(f"mnestoma scale: {EXECUTORS} executors")
    print(f"  {'mnests':>8} {'ager s':>8} {'decayed':>8} {'traces s':>9} {'traces':>7} {'Q':>6}")
    for size in sizes:
        plant(engine, size)
        started = time.perf_counter()
        report = ager.cycle(engine, settings, audit, executors=names)
        ager_s = time.perf_counter() - started
        assert report.ran, "the planted clock makes a cycle due"
        started = time.perf_counter()
        found = traces.detect(engine, settings, seed=0, audit=audit)
        detect_s = time.perf_counter() - started
        multi = sum(len(t.members) > 1 for t in found)
        rows.append((size, ager_s, detect_s, report.decayed, multi))
        print(f"  {size:>8} {ager_s:>8.3f} {report.decayed:>8} {detect_s:>9.3f} "
              f"{multi:>7} {found[0].modularity if found else 0:>6.3f}")
    print("  slope between sizes (µs per mnest): ager | traces")
    slopes = []
    for (m1, a1, t1, _, _), (m2, a2, t2, _, _) in zip(rows, rows[1:], strict=False):
        slope = (a2 - a1) / (m2 - m1) * 1e6
        slopes.append(slope)
        print(f"    {m1:>7} → {m2:<7} {slope:8.2f} | {(t2 - t1) / (m2 - m1) * 1e6:8.2f}")
    if len(slopes) >= 2 and slopes[0] > 0:
        print(f"  ager linearity: last slope / first slope = {slopes[-1] / slopes[0]:.2f} "
              f"(1 is linear); t({rows[-1][0]}) / t({rows[-2][0]}) = "
              f"{rows[-1][1] / rows[-2][1]:.2f} for {rows[-1][0] / rows[-2][0]:.1f}× the mnests")


def month_mnestoma(engine: Engine, turns: list[Any]) -> Counter[tuple[str, str]]:
    pairs: Counter[tuple[str, str]] = Counter()
    used: Counter[str] = Counter()
    for turn in turns:
        rounds = [[c.executor for c in one if c.executor != wish.TOOL] for one in turn.rounds]
        rounds = [one for one in rounds if one]
        for one in rounds:
            used.update(one)
        for before, after in zip(rounds, rounds[1:], strict=False):
            pairs.update((a, b) for b in after for a in dict.fromkeys(before) if a != b)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {_TABLES}"))
        for (src, dst), weight in pairs.items():
            conn.execute(text("INSERT INTO mnest (src, dst, weight, clock, created_at, "
                              "updated_at) VALUES (:s, :d, :w, 0, now(), now())"),
                         {"s": src, "d": dst, "w": weight})
        for name, count in used.items():
            conn.execute(text("INSERT INTO executor_use (name, invocations, window_uses, "
                              "last_clock, state, state_clock, updated_at) "
                              "VALUES (:n, :c, 0, 0, 'active', 0, now())"),
                         {"n": name, "c": count})
    return pairs


def routing(engine: Engine, settings: Settings, audit: AuditLog) -> None:
    from metnos.mechanisms.executors.registry import load_registry
    from metnos.testing.month import month

    turns = month(seed=0)
    pairs = month_mnestoma(engine, turns)
    found = traces.detect(engine, settings, seed=0, audit=audit)
    registry = load_registry(settings)
    pools = {lang: [*registry.tool_specs(lang), wish.tool_spec(registry, lang)]
             for lang in {t.lang for t in turns}}
    print(f"\nrouting on the scripted month: {len(turns)} turns, {len(pairs)} mnests, "
          f"{len(found)} traces (modularity {found[0].modularity:.3f}); pool "
          f"{len(pools['en']) - 1} executors + wish, route_above "
          f"{settings.evolution.route_above}")
    for trace in found:
        print(f"  trace {trace.label}: {', '.join(trace.members)} (weight {trace.weight:g})")
    cost = {lang: count_text(json.dumps([t.openai_tool() for t in pool], ensure_ascii=False))
            for lang, pool in pools.items()}
    full = routed = hits = calls = 0
    started = time.perf_counter()
    misses: Counter[str] = Counter()
    for turn in turns:
        offered = route(pools[turn.lang], turn.text, turn.lang, traces=found, states={},
                        settings=settings.evolution)
        names = {t.name for t in offered}
        n = len(turn.rounds) + 1
        calls += n
        full += n * cost[turn.lang]
        routed += n * count_text(json.dumps([t.openai_tool() for t in offered],
                                            ensure_ascii=False))
        if set(turn.expected) <= names:
            hits += 1
        else:
            misses[turn.habit] += 1
    per_turn = (time.perf_counter() - started) / len(turns) * 1000
    print(f"  tool-list tokens over {calls} model calls: without routing {full}, with "
          f"{routed} ({100 * (1 - routed / full):.1f} % fewer; per call {full / calls:.0f} → "
          f"{routed / calls:.0f})")
    print(f"  tool-choice accuracy: {hits}/{len(turns)} = {100 * hits / len(turns):.1f} % of "
          f"turns had every expected executor offered (misses by habit: {dict(misses)})")
    print(f"  routing time per turn (scoring + hassil match): {per_turn:.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="sizes 1k, 5k, 20k mnests")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="metnos-bench-mnestoma-") as tmp:
        settings = setup(Path(tmp))
        engine = make_engine(database_url(settings))
        audit = open_audit_log(settings, checkpoint_every=1000)
        try:
            scale(engine, settings, audit, QUICK if args.quick else SIZES)
            routing(engine, settings, audit)
        finally:
            audit.close()
            engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
