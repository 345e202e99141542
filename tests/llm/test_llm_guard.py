"""The network guard (tests/llm_guard.py) blocks real providers and leaves loopback alone."""

from __future__ import annotations

import socket

import httpx
import pytest

from metnos.ground.settings import LLMSettings
from metnos.mechanisms.llm.port import LLMPort
from metnos.testing import ScriptedLLM
from tests.llm_guard import NetworkGuard, RealNetworkBlocked


def test_blocks_a_non_loopback_connect_at_once(network_guard: NetworkGuard) -> None:
    """Refused before any packet: a real connect would end in a timeout error, not this one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(5)  # a broken guard fails the test quickly instead of hanging it
    try:
        with pytest.raises(RealNetworkBlocked, match="llm_guard: tests must not reach the network"):
            sock.connect(("203.0.113.1", 443))
    finally:
        sock.close()
    assert len(network_guard.clear()) == 1


def test_blocks_resolving_a_provider(network_guard: NetworkGuard) -> None:
    with pytest.raises(RealNetworkBlocked, match="api.openai.com"):
        socket.getaddrinfo("api.openai.com", 443)
    network_guard.clear()


async def test_blocks_litellm_reaching_a_real_provider(network_guard: NetworkGuard) -> None:
    port = LLMPort(LLMSettings(model="openai/gpt-4o-mini", api_key="sk-x", max_attempts=1))
    with pytest.raises(Exception):  # noqa: B017 - LLMError wrapping the guard's refusal
        await port.complete([{"role": "user", "content": "hi"}])
    assert (
        network_guard.clear()
    )  # even when caught, the guard recorded it (and would fail the test)


def test_allows_loopback(scripted_llm: ScriptedLLM, network_guard: NetworkGuard) -> None:
    assert httpx.get(scripted_llm.api_base + "/models").status_code == 200
    assert (
        httpx.get(scripted_llm.api_base.replace("127.0.0.1", "localhost") + "/models").status_code
        == 200
    )
    assert network_guard.violations == []


def test_a_caught_attempt_still_fails_the_test(tmp_path: pytest.TempPathFactory) -> None:
    """Code that swallows the refusal (e.g. a polite LLMError reply) cannot hide it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    test_file = Path(str(tmp_path)) / "test_sneaky.py"
    test_file.write_text(
        "import socket\n"
        "def test_sneaky():\n"
        "    try:\n"
        "        socket.create_connection(('198.51.100.7', 443), timeout=1)\n"
        "    except OSError:\n"
        "        pass\n"
        "def test_honest():\n"
        "    assert True\n"
    )
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.llm_guard",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            "-p",
            "no:cacheprovider",
            str(test_file),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=60,
    )
    # test_sneaky passes its call phase, then the guard fails it at teardown
    assert "ERROR test_sneaky.py::test_sneaky - Failed: llm_guard" in out.stdout, out.stdout
    assert "2 passed, 1 error" in out.stdout
    assert "llm_guard: tests must not reach the network" in out.stdout
