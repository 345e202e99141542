"""The acceptance line of issue 26 §3 on the whole topology: SIGTERM to `metnos serve` while 5
sessions send turns. It exits within the drain window plus a few seconds (the supervisor
stops the gateway, which drains, then stops its runner); every turn that got HTTP 200
completed or says it was interrupted; the rest got 503 (or, once the window was over and
the gateway closed, a refused connection). The database side (no turn row without an
answer, the interrupted run Crashed) is checked on the gateway process alone:
tests/crash/test_drain.py."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from metnos.testing.llm_server import ScriptedLLM
from tests.support.serve_process import served_instance
from tests.support.turn_load import Sent, check_answers, client_loop, send, slow_model

DRAIN_S = 5.0
STOP_S = 30.0  # the watchdog's stop, the gateway's window, its runner and close, the rest


def test_sigterm_to_serve_with_5_sessions_sending_turns(compiled_catalog: Path) -> None:
    with ScriptedLLM() as llm:
        llm.respond_with(slow_model(1.0, 60.0))
        with served_instance(compiled_catalog, METNOS_LLM_MODEL="openai/scripted",
                             METNOS_LLM_API_BASE=llm.api_base,
                             METNOS_LLM_API_KEY="sk-test", METNOS_LANG="en",
                             METNOS_GATEWAY_DRAIN_S=str(DRAIN_S)) as served:
            proc = served.process
            base, headers = served.gateway, served.owner_headers()
            stop = threading.Event()
            sent: list[list[Sent]] = [[] for _ in range(5)]
            saga: list[Sent] = []
            threads = [threading.Thread(target=lambda: saga.append(
                send(base, headers, "tell me the whole saga", None)))]
            threads += [threading.Thread(target=client_loop, args=(
                base, headers, n, sent[n], stop, lambda: proc.poll() is not None))
                for n in range(5)]
            for thread in threads:
                thread.start()
            try:
                deadline = time.monotonic() + 120
                while sum(s.status == 200 for ss in sent for s in ss) < 5:
                    assert time.monotonic() < deadline, "no turns completed"
                    time.sleep(0.1)
                signalled = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(STOP_S)
                except subprocess.TimeoutExpired:
                    pytest.fail("metnos serve did not stop in time")
                took = time.monotonic() - signalled
            finally:
                stop.set()
                for thread in threads:
                    thread.join(120)
            assert proc.returncode == 0 and took <= STOP_S
            # until the gateway drains, turns are still taken, and it listens until its
            # window is over
            check_answers([s for ss in [*sent, saga] for s in ss], signalled, DRAIN_S, lambda: "")
            [long] = saga
            assert long.status == 200 and long.body["status"] == "failed", long.body
