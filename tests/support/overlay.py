"""A stand-in for the overlay (Tailscale, Headscale) made by the tests (issue 30).

- `addresses()`: an interface on this machine with three overlay addresses, the
  server's and two devices': a client bound to a device's address reaches the gateway's
  exposed address as that device would (its source address is the device's).
- `phone()`: a network namespace, the "phone", joined to this machine by a veth pair, with an
  overlay address on each end, and a Chromium that runs inside it: the browser sees the
  server only through the veth, as a phone sees it through the overlay.
- `listening(pid)`: the TCP addresses a process listens on, read with `ss`.

Both need root (network namespaces, interfaces): without it the tests are skipped, except
in CI, where that is a failure. Every name is made unique and removed afterwards.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True,  # noqa: S603, S607 - fixed argv
                          timeout=30)


def need_root() -> None:
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("ss") is None:
        reason = "the overlay tests need root, `ip` and `ss` (network namespaces, interfaces)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _subnet() -> int:
    return 64 + secrets.randbelow(60)  # 100.<64..123>.<n>.x: inside 100.64.0.0/10


@dataclass(frozen=True)
class Addresses:
    server: str
    devices: tuple[str, str]
    interface: str  # holds them all (the server's first)


@contextmanager
def addresses() -> Iterator[Addresses]:
    """An interface holding the server's and two devices' overlay addresses."""
    need_root()
    tag = secrets.token_hex(3)
    name, peer = f"mtoa{tag}", f"mtob{tag}"  # a veth pair: no dummy module needed
    prefix = f"100.{_subnet()}.{secrets.randbelow(250) + 1}"
    _ip("link", "add", name, "type", "veth", "peer", "name", peer)
    try:
        for last in (1, 2, 3):
            _ip("addr", "add", f"{prefix}.{last}/32", "dev", name)
        _ip("link", "set", peer, "up")
        _ip("link", "set", name, "up")
        yield Addresses(f"{prefix}.1", (f"{prefix}.2", f"{prefix}.3"), name)
    finally:
        _ip("link", "del", name, check=False)


@dataclass(frozen=True)
class Phone:
    namespace: str
    server: str  # this machine's end of the veth
    address: str  # the phone's end
    chromium: Path  # runs Chromium inside the namespace


@contextmanager
def phone(tmp_path: Path) -> Iterator[Phone]:
    """A network namespace joined to this machine by a veth pair (see the module)."""
    need_root()
    tag = secrets.token_hex(3)
    namespace, here, there = f"mtph{tag}", f"mtva{tag}", f"mtvb{tag}"
    prefix = f"100.{_subnet()}.{secrets.randbelow(250) + 1}"
    _ip("netns", "add", namespace)
    try:
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        _ip("link", "set", there, "netns", namespace)
        _ip("addr", "add", f"{prefix}.1/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("-n", namespace, "addr", "add", f"{prefix}.2/30", "dev", there)
        _ip("-n", namespace, "link", "set", there, "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
        wrapper = tmp_path / "chromium-in-phone"
        wrapper.write_text(f'#!/bin/sh\nexec ip netns exec {namespace} {CHROMIUM} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        yield Phone(namespace, f"{prefix}.1", f"{prefix}.2", wrapper)
    finally:
        _ip("link", "del", here, check=False)
        _ip("netns", "del", namespace, check=False)


def listening(pid: int) -> set[str]:
    """`address:port` of every TCP socket `pid` listens on (IPv6 in brackets), from `ss`."""
    out = subprocess.run(["ss", "-Hltnp"], check=True, capture_output=True, text=True,  # noqa: S603, S607 - fixed argv
                         timeout=30).stdout
    found = set()
    for line in out.splitlines():
        if f"pid={pid}," in line:
            found.add(line.split()[3])
    return found
