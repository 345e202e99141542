"""Concurrent appenders (threads and processes) never interleave lines or fork the chain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from metnos.ground import keys
from metnos.mechanisms.audit import AuditLog, verify

THREADS = 4
PER_THREAD = 40

_CHILD = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from metnos.ground import keys
    from metnos.mechanisms.audit import AuditLog

    log, cp, keys_dir, name, threads, per = sys.argv[1:7]
    audit = AuditLog(Path(log), Path(cp), keys.load_private_key(Path(keys_dir), "audit"))
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()  # the parent's start signal, so both processes overlap

    def work(t):
        for i in range(int(per)):
            audit.append(action="fs_read", decision="allow", sender=f"{name}-{t}", outcome=str(i))

    ts = [threading.Thread(target=work, args=(t,)) for t in range(int(threads))]
    for t in ts: t.start()
    for t in ts: t.join()
    audit.close()
    """
)


def _hammer(audit: AuditLog, name: str) -> None:
    def work(t: int) -> None:
        for i in range(PER_THREAD):
            audit.append(action="fs_read", decision="allow", sender=f"{name}-{t}", outcome=str(i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_threads_and_processes_keep_one_chain(tmp_path: Path) -> None:
    keys_dir = tmp_path / "keys"
    keys.ensure_keypair(keys_dir, "audit")
    log, cp = tmp_path / "ws" / ".audit" / "audit.jsonl", tmp_path / "state" / "audit.checkpoint"
    log.parent.mkdir(parents=True)
    argv = [str(log), str(cp), str(keys_dir)]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, *argv, f"p{n}", str(THREADS), str(PER_THREAD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    audit = AuditLog(log, cp, keys.load_private_key(keys_dir, "audit"))
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    _hammer(audit, "main")
    for child in children:
        assert child.wait(timeout=60) == 0
    audit.close()

    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    total = 3 * THREADS * PER_THREAD
    assert [r["seq"] for r in records] == list(range(1, total + 1))
    seen = {(r["sender"], r["outcome"]) for r in records}
    assert len(seen) == total  # every append landed exactly once
    assert {s.split("-")[0] for s, _ in seen} == {"main", "p0", "p1"}
    report = verify(log, cp, keys.load_public_key(keys_dir, "audit"))
    assert report.ok, report
    assert report.lines == total


def test_a_forked_child_does_not_share_the_parents_lock(tmp_path: Path) -> None:
    keys_dir = tmp_path / "keys"
    keys.ensure_keypair(keys_dir, "audit")
    log, cp = tmp_path / "audit.jsonl", tmp_path / "audit.checkpoint"
    audit = AuditLog(log, cp, keys.load_private_key(keys_dir, "audit"))
    audit.append(action="start", decision="info")
    pid = os.fork()
    if pid == 0:  # the child appends through the object it inherited
        code = 0
        try:
            for i in range(150):
                audit.append(action="child", decision="info", outcome=str(i))
            audit.close()
        except BaseException:
            code = 1
        os._exit(code)
    for i in range(150):
        audit.append(action="parent", decision="info", outcome=str(i))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    audit.close()
    report = verify(log, cp, keys.load_public_key(keys_dir, "audit"))
    assert report.ok, report
    assert report.lines == 301
