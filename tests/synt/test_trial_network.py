"""Issue 25, finding 5: a candidate's trial (stage 6) reaches no network, whatever its spec says.

The model wrote the spec, the profile and the code, and nobody has signed any of it: when its
spec asked for the network, the trial used to run the code on the host's network (the gateway's
/healthz, the Prefect API, the model provider's request log). Here a generation whose spec and
profile say `network = true` ships code that passes the synt's code checks (`http.client`
carries the `socket` module) and tries every way out: TCP and UDP to listeners this test starts
on 127.0.0.1 and on each of the host's other addresses, a DNS lookup, HTTP. The listeners must
see nothing, and inside the trial there is no resolver. Real generation, real bwrap.
"""

from __future__ import annotations

import array
import fcntl
import json
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from metnos.features.synt import generate
from metnos.mechanisms.executors.registry import load_registry
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome
from tests.synt.support import (
    COUNTER_MANIFEST,
    add_proto,
    engine_of,
    job_for,
    script_generation,
)

PROBE = '''import json, os, sys
import http.client
import urllib.request
args = json.loads(sys.stdin.read() or "{}").get("args", {})
net = http.client.socket
reached = []
for host, port in args["tcp"]:
    try:
        net.create_connection((host, port), timeout=2).close()
        reached.append("tcp %s:%d" % (host, port))
    except OSError:
        pass
    try:
        urllib.request.urlopen("http://%s:%d/healthz" % (host, port), timeout=2)
        reached.append("http %s:%d" % (host, port))
    except Exception:
        pass
query = bytes.fromhex("abcd01000001000000000000") + b"\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01"
for host, port in args["udp"]:
    try:
        udp = net.socket(net.AF_INET, net.SOCK_DGRAM)
        udp.sendto(query, (host, port))
        udp.close()
    except OSError:
        pass
try:
    net.getaddrinfo("metnos-trial-probe.example.com", 80)
    resolved = True
except OSError:
    resolved = False
print(json.dumps({"ok": True, "result": {"reached": reached, "resolved": resolved,
                  "resolver": os.path.exists("/etc/resolv.conf")}}))
'''
SIOCGIFADDR = 0x8915


def host_addresses() -> list[str]:
    """This host's IPv4 addresses other than loopback (a veth, eth0...), read from the kernel."""
    found = []
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _index, name in socket.if_nameindex():
            request = array.array("B", struct.pack("256s", name.encode()[:15]))
            try:
                fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)
            except OSError:  # no IPv4 address on this interface
                continue
            address = socket.inet_ntoa(request.tobytes()[20:24])
            if not address.startswith("127."):
                found.append(address)
    finally:
        probe.close()
    return found


@pytest.fixture
def listeners() -> Iterator[tuple[list[socket.socket], list[socket.socket]]]:
    """A TCP and a UDP listener on loopback and on each other address of this host."""
    tcp, udp = [], []
    for address in ["127.0.0.1", *host_addresses()]:
        server = socket.create_server((address, 0))
        server.setblocking(False)
        tcp.append(server)
        datagram = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        datagram.bind((address, 0))
        datagram.setblocking(False)
        udp.append(datagram)
    yield tcp, udp
    for sock in tcp + udp:
        sock.close()


def accepted(servers: list[socket.socket]) -> list[str]:
    """The address of each listening socket that a connection reached."""
    heard = []
    for server in servers:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            continue
        conn.close()
        heard.append(str(server.getsockname()))
    return heard


def _heard(tcp: list[socket.socket], udp: list[socket.socket]) -> list[str]:
    heard = [f"tcp {address}" for address in accepted(tcp)]
    for datagram in udp:
        try:
            datagram.recv(512)
        except BlockingIOError:
            continue
        heard.append(f"udp {datagram.getsockname()}")
    return heard


@pytest.mark.attack
async def test_a_network_candidate_trial_reaches_nothing(
        make_home: MakeHome, scripted_llm: ScriptedLLM,
        listeners: tuple[list[socket.socket], list[socket.socket]]) -> None:
    tcp, udp = listeners
    args: dict[str, Any] = {"path": "a.txt",
                            "tcp": [list(s.getsockname()) for s in tcp],
                            "udp": [list(s.getsockname()) for s in udp]}
    cases = [{"args": args, "expect": {"reached": [], "resolved": False, "resolver": False},
              "files": {"a.txt": "one"}}]
    home = make_home(llm=scripted_llm, lang="en")
    settings, engine = home.settings, engine_of(home.settings)
    proto_id = add_proto(engine, want="count_words", have_kind="tst_note",
                         want_kind="tst_count")
    script_generation(scripted_llm, network=True, code=PROBE, cases=cases)
    outcome = await generate.generate(settings, engine, load_registry(settings),
                                      job_for(engine, proto_id))
    assert _heard(tcp, udp) == []
    assert outcome.ok, outcome  # the candidate's own view: nothing reached, no resolver
    record = json.loads((settings.home / "executors" / "word_counter" /
                         "CANDIDATE.json").read_text())
    assert record["tests"]["profile"]["network"] is False  # where it ran: no network at all
    assert record["profile"]["network"] is True  # what it asked for (the owner sees it)
    engine.dispose()


@pytest.mark.attack
@pytest.mark.parametrize("line", ['account = "imap"', 'runs_on = "laptop"'])
async def test_a_candidate_asking_for_the_mail_account_is_never_proposed(
        make_home: MakeHome, scripted_llm: ScriptedLLM, line: str) -> None:
    """Once signed, an executor with `account = "imap"` gets the mail password in its stdin:
    a generated one may not declare it (nor another place to run)."""
    home = make_home(llm=scripted_llm, lang="en")
    settings, engine = home.settings, engine_of(home.settings)
    proto_id = add_proto(engine, want="count_words", have_kind="tst_note",
                         want_kind="tst_count")
    manifest = COUNTER_MANIFEST.replace('entry = "main.py"', f'entry = "main.py"\n{line}')
    script_generation(scripted_llm, manifest=manifest)
    outcome = await generate.generate(settings, engine, load_registry(settings),
                                      job_for(engine, proto_id))
    assert not outcome.ok and outcome.stage == "manifest", outcome
    assert not (settings.home / "executors" / "word_counter").exists()
    engine.dispose()
