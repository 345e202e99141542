"""Token counts never touch the network, whatever the model string, and match tiktoken's.

Each count runs in a fresh interpreter with no network: proxies pointing at a dead port, an
empty tiktoken cache (tiktoken downloads into it when it has to), Hugging Face's offline
switch unset, and inside a network namespace of its own when `unshare` can make one. The
child records every attempt to resolve a name or open an internet socket: there must be none.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from metnos.mechanisms.llm import tokens

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("ollama/llama3.1:8b", "huggingface/meta-llama/Llama-3-8B", "openai/gpt-4o",
          "openai/scripted", "anthropic/claude-3-5-sonnet-20240620", "cohere/command-r",
          "replicate/meta/llama-2-70b-chat", "deepseek/deepseek-chat", "")
MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "La lista della spesa: latte, pane, uova. What is left?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "fs_read", "arguments": '{"path": "notes/spesa.md"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "fs_read", "content": "latte\npane\n" * 50},
]

CHILD = r"""
import json, os, socket, sys, time
attempts = []
real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo
def connect(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        attempts.append(f"connect {address!r}")
    return real_connect(sock, address)
def getaddrinfo(host, *args, **kwargs):
    attempts.append(f"resolve {host!r}")
    return real_getaddrinfo(host, *args, **kwargs)
socket.socket.connect = connect
socket.getaddrinfo = getaddrinfo
if sys.argv[1] == "control":  # the harness sees an attempt when one is made
    try:
        socket.create_connection(("example.com", 443), timeout=2)
    except OSError:
        pass
    print(json.dumps({"attempts": attempts}))
    sys.exit(0)
from metnos.mechanisms.llm import tokens
messages = json.loads(sys.argv[2])
out = {}
for model in json.loads(sys.argv[1]):
    started = time.perf_counter()
    out[model] = {"count": tokens.count_messages(messages, model),
                  "encoding": tokens.encoding_for(model),
                  "seconds": time.perf_counter() - started}
print(json.dumps({"models": out, "attempts": attempts,
                  "litellm": "litellm" in sys.modules, "tiktoken_cache": os.listdir(
                      os.environ["TIKTOKEN_CACHE_DIR"])}))
"""


def run_offline(*args: str) -> dict[str, Any]:
    cache = tempfile.mkdtemp(prefix="metnos-tiktoken-")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE",
                                                            "TRANSFORMERS_OFFLINE")}
    env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
               https_proxy="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9",
               NO_PROXY="", no_proxy="", TIKTOKEN_CACHE_DIR=cache,
               PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", CHILD, *args]
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"],
                                                  capture_output=True).returncode == 0:
        command = ["unshare", "-rn", *command]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60,
                              cwd=ROOT)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_counting_never_reaches_the_network_whatever_the_model() -> None:
    result = run_offline(json.dumps(MODELS), json.dumps(MESSAGES))
    assert result["attempts"] == []
    assert result["litellm"] is False  # seconds to import, and it may fetch its cost map
    assert result["tiktoken_cache"] == []  # nothing fetched into tiktoken's cache either
    counts = result["models"]
    assert set(counts) == set(MODELS)
    for model, found in counts.items():
        assert found["count"] > 20, model
        assert found["seconds"] < 3.0, (model, found)  # the first one loads the encoding
    assert counts["openai/gpt-4o"]["encoding"] == "o200k_base"
    assert {found["encoding"] for model, found in counts.items()
            if model != "openai/gpt-4o"} == {"cl100k_base"}


def test_the_harness_sees_an_attempt() -> None:
    assert run_offline("control")["attempts"] != []


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_counts_equal_tiktokens_own_encoding(encoding: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tokens.encoding_path(encoding)
    assert path is not None
    import tiktoken

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(path.parent))  # litellm's copies: offline
    reference = tiktoken.get_encoding(encoding)
    model = "openai/gpt-4o" if encoding == "o200k_base" else "ollama/qwen3:8b"
    text = ("Città, perché? C'è l'uovo — 1234567 € <|endoftext|> naïve 日本語\n\n  done's "
            * 20)
    assert tokens.count_text(text, model) == len(reference.encode_ordinary(text))


def test_a_message_list_counts_contents_calls_and_overhead() -> None:
    alone = sum(tokens.count_text(str(m.get("content") or "")) for m in MESSAGES)
    total = tokens.count_messages(MESSAGES)
    assert total > alone + len(MESSAGES) * tokens.PER_MESSAGE  # the tool call counts too
    assert tokens.count_messages([]) == 0 and tokens.count_text("") == 0


def test_a_litellm_without_its_encoding_files_gets_a_character_estimate(
        tmp_path: Path) -> None:
    (tmp_path / "litellm").mkdir()
    (tmp_path / "litellm" / "__init__.py").write_text("")  # found first, has no tokenizers
    script = ("from metnos.mechanisms.llm import tokens; "
              "print(tokens.encoding_path(), tokens.count_text('x' * 30))")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "10"]  # 3 characters a token, rounded up
    assert "tokens.estimate" in done.stderr
