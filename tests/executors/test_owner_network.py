"""Issue 25, finding 5 (after signing): an executor the owner signed gets no host network.

A synt candidate, once signed, is an ordinary executor under METNOS_HOME/executors. Its
manifest may say `network = true` without an `egress`; that used to mean the host's network
(the gateway, the database, Prefect, the model provider on loopback, the home network). Only
the built-ins pinned by BUILTIN.lock keep the host's network now (web_fetch, with its own
address checks); every other executor asking for the network without an egress runs in an
empty network namespace (`egress = "none"`), as the registry hands its profile to every run.
The Laws still see it as a network tool. Real keys, real registry, real bwrap.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from metnos.ground.keys import load_private_key
from metnos.ground.settings import get_settings
from metnos.mechanisms.executors.registry import load_registry, signatures_dir
from metnos.mechanisms.executors.signing import sign_executor, signature_path
from metnos.mechanisms.sandbox import SandboxRequest, run_sandboxed
from tests.executors.conftest import REPO_EXECUTORS
from tests.synt.test_trial_network import accepted, host_addresses

NAME = "net_tool"
CODE = '''import json, os, sys
import http.client
args = json.loads(sys.stdin.read() or "{}").get("args", {})
reached = []
for host, port in args["tcp"]:
    try:
        http.client.socket.create_connection((host, port), timeout=2).close()
        reached.append("%s:%d" % (host, port))
    except OSError:
        pass
print(json.dumps({"ok": True, "result": {"reached": reached,
                  "resolver": os.path.exists("/etc/resolv.conf")}}))
'''


@pytest.fixture
def tcp_listeners() -> Iterator[list[socket.socket]]:
    servers = []
    for address in ["127.0.0.1", *host_addresses()]:
        server = socket.create_server((address, 0))
        server.setblocking(False)
        servers.append(server)
    yield servers
    for server in servers:
        server.close()


def _install(home: Path) -> Path:
    folder = home / "executors" / NAME
    shutil.copytree(REPO_EXECUTORS / "fs_read", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    manifest = folder / "manifest.toml"
    text = manifest.read_text().replace('name = "fs_read"', f'name = "{NAME}"')
    manifest.write_text(text.replace("network = false", "network = true"))
    (folder / "main.py").write_text(CODE)
    return folder


async def _run(spec_folder: Path, profile: object, tmp_path: Path,
               servers: list[socket.socket]) -> dict[str, object]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    args = {"tcp": [list(s.getsockname()) for s in servers]}
    result = await run_sandboxed(SandboxRequest(
        exec_dir=spec_folder, entry="main.py", profile=profile,  # type: ignore[arg-type]
        workspace=workspace, args=args))
    assert result.ok and result.result is not None, (result.error_key, result.stderr_tail)
    return result.result


@pytest.mark.attack
async def test_a_signed_owner_executor_asking_for_the_network_reaches_nothing(
        metnos_home: Path, tmp_path: Path, tcp_listeners: list[socket.socket]) -> None:
    settings = get_settings()
    folder = _install(metnos_home)
    sign_executor(folder, load_private_key(settings.keys_dir, "executors"),
                  signature_path(signatures_dir(settings), NAME))
    registry = load_registry(settings)
    spec = registry.get(NAME)  # admitted: signed by the owner
    assert spec.manifest.sandbox.network is True  # still a network tool for the Laws
    seen = await _run(spec.folder, spec.manifest.sandbox, tmp_path, tcp_listeners)
    assert accepted(tcp_listeners) == []
    assert seen == {"reached": [], "resolver": False}


async def test_control_the_builtin_web_fetch_keeps_the_host_network(metnos_home: Path) -> None:
    """web_fetch, pinned by BUILTIN.lock, is not confined (it checks addresses itself)."""
    from metnos.mechanisms.executors.builtin import sign_builtins

    settings = get_settings()
    sign_builtins(REPO_EXECUTORS, settings.keys_dir, metnos_home / "signatures")
    sandbox = load_registry(settings).get("web_fetch").manifest.sandbox
    assert sandbox.network is True and sandbox.egress is None
