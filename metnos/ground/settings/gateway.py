"""The `[gateway]` settings group (`METNOS_GATEWAY_*`): where it listens, and how it stops."""

from __future__ import annotations

import ipaddress
import re

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class GatewaySettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_GATEWAY_")

    host: str = Field("127.0.0.1", description="Address the gateway binds to (loopback only).")
    port: int = Field(42618, ge=1, le=65535, description="Port of the gateway.")
    expose: str = Field(
        "", max_length=64,
        description="An overlay address (Tailscale, Headscale) or network interface the "
        "gateway also listens on, on the same port, for the family's devices; empty: loopback "
        "only. Never 0.0.0.0, a loopback, multicast or link-local address.",
    )
    expose_name: str = Field(
        "", max_length=253,
        description="The host name devices use on the overlay (e.g. a MagicDNS name); the "
        "exposed address is accepted as a name too.",
    )
    expose_tls_cert: str = Field(
        "", max_length=4096,
        description="A certificate (PEM) for the exposed address, such as `tailscale cert` "
        "makes: the devices then use https there; loopback stays plain http.",
    )
    expose_tls_key: str = Field(
        "", max_length=4096, description="The private key (PEM) of `expose_tls_cert`.")
    max_message_chars: int = Field(
        8000, ge=1, description="Longest message a channel may send; longer ones get a 413."
    )
    allowed_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1", "localhost", "[::1]", "::1"],
        description="Host header values accepted (DNS-rebinding guard).",
    )
    drain_s: float = Field(
        30.0, ge=0, le=600,
        description="On a stop, how long running turns may go on finishing (new ones get "
        "503); those still running then are recorded as interrupted.",
    )
    hung_after_s: float = Field(
        60.0, ge=5, le=3600,
        description="A gateway (or Prefect server) that answers no health check for this "
        "long is hung: `metnos serve` stops it and starts it again.",
    )

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        if value not in {"127.0.0.1", "localhost", "::1"}:
            raise ValueError("the gateway binds to loopback only (127.0.0.1, localhost or ::1)")
        return value

    @field_validator("expose")
    @classmethod
    def _exposable(cls, value: str) -> str:
        value = value.strip()
        refusal = expose_refusal(value) if value else None
        if refusal is not None:
            raise ValueError(refusal)
        return value

    @model_validator(mode="after")
    def _tls_whole(self) -> GatewaySettings:
        if bool(self.expose_tls_cert) != bool(self.expose_tls_key):
            raise ValueError("expose_tls_cert and expose_tls_key go together: set both or none")
        return self

    @field_validator("expose_name")
    @classmethod
    def _a_host_name(cls, value: str) -> str:
        value = value.strip().lower().rstrip(".")
        if value and not _HOST_NAME.fullmatch(value):
            raise ValueError("expose_name must be a host name such as metnos.tail1234.ts.net")
        if value in LOOPBACK_NAMES:
            raise ValueError("expose_name must not be a loopback name")
        return value


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
_HOST_NAME = re.compile(r"(?=.{1,253}\Z)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)"
                        r"(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*")
_INTERFACE = re.compile(r"[A-Za-z0-9_.:-]{1,15}")
# the ranges Tailscale and Headscale give out by default: an address in them is an overlay's
OVERLAY_NETWORKS = (ipaddress.ip_network("100.64.0.0/10"),
                    ipaddress.ip_network("fd7a:115c:a1e0::/48"))


def expose_refusal(value: str) -> str | None:
    """Why `value` may not be exposed (an English sentence for the settings error), or None.
    An interface name is checked when the gateway starts (it may come up later)."""
    try:
        address = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return None if _INTERFACE.fullmatch(value) else (
            "expose must be an IP address or a network interface name")
    if address.is_unspecified:
        return "expose may never be 0.0.0.0 or :: (every address): name one overlay address"
    if address.is_loopback:
        return "expose is for a non-loopback address: the gateway is on loopback already"
    if address.is_multicast or address.is_link_local or address.is_reserved:
        return f"expose cannot be {address}: not an address a device can reach"
    return None


def in_overlay(address: str) -> bool:
    """True for an address in Tailscale's and Headscale's default ranges."""
    try:
        found = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    return any(found in network for network in OVERLAY_NETWORKS)
