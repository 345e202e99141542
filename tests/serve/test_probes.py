"""What `metnos serve` asks its children over HTTP never stops it (seen in a full run: the
gateway killed while the supervisor read its `/healthz` after the banner; the cut-short answer
raised `IncompleteRead`, which is no `OSError`, and the whole instance stopped).

Real sockets on loopback answer the probes badly (cut short, not HTTP); a supervisor whose
terminal is gone keeps watching."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from metnos.faces.serve.processes import Service, _answers, responds
from metnos.faces.serve.supervisor import Supervisor
from tests.cli.test_thin_commands import settings_for
from tests.support.sockets import one_answer


def cut_short(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 149\r\n\r\n{\"sandbox\":")


def not_http(conn: socket.socket) -> None:
    conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")


def closed_at_once(conn: socket.socket) -> None:
    conn.close()


def supervisor_for(base: str, tmp_path: Path) -> Supervisor:
    return Supervisor(settings_for(base, tmp_path), say=lambda line: None)


BAD = [cut_short, not_http, closed_at_once]


@pytest.mark.parametrize("answer", BAD, ids=lambda a: a.__name__)
def test_the_sandbox_look_after_the_banner_says_false(
        answer: Callable[[socket.socket], None]) -> None:
    with one_answer(answer) as base:
        assert Supervisor.sandbox_ok(base) is False


@pytest.mark.parametrize("answer", BAD, ids=lambda a: a.__name__)
def test_the_model_check_at_start_says_nothing(answer: Callable[[socket.socket], None],
                                               tmp_path: Path) -> None:
    with one_answer(answer) as base:
        assert supervisor_for(base, tmp_path).model_check_at_start(
            {"gateway": base}, "en") == []


@pytest.mark.parametrize(("answer", "answered"), [(cut_short, True), (not_http, False),
                                                  (closed_at_once, False)],
                         ids=["cut_short", "not_http", "closed_at_once"])
def test_the_liveness_look_is_true_only_for_an_http_answer(
        answer: Callable[[socket.socket], None], answered: bool) -> None:
    with one_answer(answer) as base:
        assert responds(base + "/healthz", timeout_s=2.0) is answered
    with one_answer(answer) as base:
        assert _answers(base + "/healthz") is answered  # a 200 status line came first


def test_a_terminal_that_is_gone_does_not_stop_the_supervisor(tmp_path: Path) -> None:
    """`metnos serve`'s terminal is a pipe nobody reads any more: a child dies, the line that
    says so cannot be written, and the supervisor restarts the child all the same and
    watches on until it is told to stop."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    terminal = os.fdopen(write_end, "w")

    def say(line: str) -> None:
        terminal.write(line + "\n")
        terminal.flush()  # EPIPE: nobody reads

    supervisor = supervisor_for("http://127.0.0.1:1", tmp_path)
    supervisor = replace(supervisor, say=say)
    child = Service("watchdog", [sys.executable, "-c", "import time; time.sleep(0.5)"], {},
                    tmp_path / "child.log")
    child.start()
    first = child.pid
    supervisor.services.append(child)
    codes: list[int] = []
    watcher = threading.Thread(target=lambda: codes.append(supervisor.wait()), daemon=True)
    watcher.start()
    deadline = time.monotonic() + 20
    while child.pid == first or not child.running():  # restarted, with a line nobody read
        assert watcher.is_alive() and time.monotonic() < deadline
        time.sleep(0.1)
    supervisor._stop.set()
    watcher.join(timeout=5)
    assert codes == [0]
    child.stop()
    with contextlib.suppress(OSError):
        terminal.close()
