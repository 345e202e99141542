"""Where the family's devices reach the gateway (issue 30): `[gateway] expose` resolved into
the one overlay address it also listens on, and the host names a device may use there.

Here, not in the gateway, because `metnos doctor` reads it too (it says where devices reach
Metnos, or why they cannot).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

import psutil

from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings
from metnos.ground.settings.gateway import expose_refusal, in_overlay


class ExposeUnavailable(MetnosError):
    key = "ERR_GATEWAY_EXPOSE_UNAVAILABLE"


@dataclass(frozen=True)
class Exposed:
    address: str  # as the sockets report it: `100.64.0.7`, `fd7a:115c:a1e0::7`
    names: frozenset[str]  # Host names accepted there (lower case; v6 in brackets)
    overlay: bool  # in Tailscale's or Headscale's ranges; else the owner named a LAN address

    def serves(self, scope: Any) -> bool:
        """True for an ASGI scope (a connection) that arrived at this address."""
        server = scope.get("server")
        return server is not None and str(server[0]) == self.address


def exposed(settings: Settings) -> Exposed | None:
    """The exposed listener of `settings`, or None (loopback only). Raises ExposeUnavailable
    when the interface is missing or has no usable address."""
    value = settings.gateway.expose
    if not value:
        return None
    address = _address_of(value)
    refusal = expose_refusal(address)
    if refusal is not None:
        raise ExposeUnavailable(value=value, reason=refusal)
    bracketed = f"[{address}]" if ":" in address else address
    names = {bracketed, settings.gateway.expose_name} - {""}
    return Exposed(address, frozenset(n.lower() for n in names), in_overlay(address))


def _address_of(value: str) -> str:
    """`value` itself when it is an address, else the address of the interface it names
    (its first IPv4 one, else its first global IPv6 one)."""
    try:
        return str(ipaddress.ip_address(value.strip("[]")))
    except ValueError:
        pass
    found = psutil.net_if_addrs().get(value)
    if not found:
        raise ExposeUnavailable(value=value, reason="no such network interface")
    for family in (socket.AF_INET, socket.AF_INET6):
        for entry in found:
            if entry.family == family and "%" not in entry.address:
                return str(ipaddress.ip_address(entry.address))
    raise ExposeUnavailable(value=value, reason="the interface has no address")
