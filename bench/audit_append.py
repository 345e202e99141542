"""Audit log figures: appends/s with fsync, and `verify` time for 100k lines (target < 2 s).

Run: `.venv/bin/python bench/audit_append.py [--appends 3000] [--lines 100000]`.
Everything happens in a temporary directory (on the same filesystem as $TMPDIR), removed at the
end. Prints medians and p95 of single appends for a checkpoint after every append (the default)
and every 100, the time to open a large log (tail read backwards), and verify medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.mechanisms.audit import AuditLog, chain, verify

FIELDS = {
    "sender": "owner",
    "channel": "web",
    "session_id": "s-0123456789",
    "turn_id": "t-0123456789",
    "action": "fs_read",
    "decision": "allow",
    "reason": "MSG_POLICY_ALLOWED",
    "outcome": "ok",
    "cost_usd": "0.000123",
}


def bench_appends(root: Path, key: Ed25519PrivateKey, n: int, every: int) -> list[float]:
    log, cp = root / f"append-{every}.jsonl", root / f"append-{every}.checkpoint"
    times: list[float] = []
    with AuditLog(log, cp, key, checkpoint_every=every) as audit:
        for i in range(n):
            start = time.perf_counter()
            audit.append(args={"path": f"notes/{i}.md"}, **FIELDS)
            times.append(time.perf_counter() - start)
    report = verify(log, cp, key.public_key())
    assert report.ok and report.lines == n, report
    return times


def build_log(root: Path, key: Ed25519PrivateKey, lines: int) -> tuple[Path, Path]:
    """A valid `lines`-long log written in one go (no fsync: this only prepares verify input)."""
    log, cp = root / "big.jsonl", root / "big.checkpoint"
    prev = chain.GENESIS
    with log.open("w", encoding="utf-8") as fh:
        for seq in range(1, lines + 1):
            record = {
                **FIELDS,
                "seq": seq,
                "ts": chain.utc_now(),
                "prev": prev,
                "args_digest": chain.digest_args({"path": f"notes/{seq}.md"}),
            }
            record["hash"] = prev = chain.record_hash(record)
            fh.write(chain.canonical_json(record) + "\n")
    chain.write_checkpoint(cp, chain.sign_checkpoint(lines, prev, key))
    return log, cp


def _summary(label: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    p95 = ms[int(len(ms) * 0.95) - 1]
    total_s = sum(ms) / 1000
    print(
        f"{label}: {len(ms)} appends in {total_s:.2f} s = {len(ms) / total_s:.0f}/s;"
        f" per append median {statistics.median(ms):.3f} ms, p95 {p95:.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--appends", type=int, default=3000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    key = Ed25519PrivateKey.generate()
    with tempfile.TemporaryDirectory(prefix="metnos-bench-audit-") as tmp:
        root = Path(tmp)
        print(f"# audit bench in {root}")
        _summary("append, fsync, checkpoint every 1  ", bench_appends(root, key, opts.appends, 1))
        _summary("append, fsync, checkpoint every 100", bench_appends(root, key, opts.appends, 100))
        log, cp = build_log(root, key, opts.lines)
        size_mb = log.stat().st_size / 1e6
        start = time.perf_counter()
        AuditLog(log, cp, key).close()
        opened = (time.perf_counter() - start) * 1000
        print(f"open {opts.lines} lines ({size_mb:.1f} MB), tail read backwards: {opened:.1f} ms")
        runs = []
        for _ in range(opts.runs):
            start = time.perf_counter()
            report = verify(log, cp, key.public_key())
            runs.append(time.perf_counter() - start)
            assert report.ok and report.lines == opts.lines, report
        print(
            f"verify {opts.lines} lines: median {statistics.median(runs):.2f} s "
            f"(runs: {', '.join(f'{r:.2f}' for r in runs)}; target < 2 s)"
        )


if __name__ == "__main__":
    main()
