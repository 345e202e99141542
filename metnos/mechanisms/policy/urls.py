"""Host-side check of a `web_fetch` URL (SPEC §4, §5; notes/security.md §7: no SSRF).

`check_url(url, allow_private=...)` returns the URL normalised (scheme and host lower-case,
IDNA host, no fragment) or raises `PolicyDenied` with an i18n key and a `reason` code:

- `ERR_URL_INVALID`, `ERR_URL_TOO_LONG`: not a URL we can fetch (no host, spaces, bad port);
- `ERR_URL_SCHEME`: only `http` and `https` (no `file:`, `ftp:`, `data:`, `gopher:`...);
- `ERR_URL_USERINFO`: `user:password@host` is refused (a credential leak and a spoofing trick);
- `ERR_URL_UNRESOLVABLE`: the host name does not resolve;
- `ERR_URL_PRIVATE`: the host resolves to a loopback, private, link-local, shared, multicast,
  reserved or unspecified address (IPv4 embedded in IPv6 included) and `allow_private` is off
  (`settings.sandbox.web_allow_private`): the gateway, Prefect and the database on 127.0.0.1,
  the LAN and the cloud metadata service stay out of reach.

DNS can change between this check and the fetch, so the `web_fetch` executor repeats the
address check on every connection it opens, redirects included.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit, urlunsplit

from metnos.ground.errors import PolicyDenied
from metnos.mechanisms.policy.paths import printable

MAX_URL_CHARS = 2048
SCHEMES = ("http", "https")
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_")

Resolver = Callable[[str, int], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def check_url(url: str, *, allow_private: bool, resolve: Resolver | None = None) -> str:
    """The normalised URL when it may be fetched; else `PolicyDenied` (see the module doc).

    `resolve(host, port)` returns the host's addresses (default: `socket.getaddrinfo`).
    """
    parts, host = parse_url(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    shown = printable(url, 200)
    try:
        addresses = (resolve or _getaddrinfo)(host, port)
    except (OSError, UnicodeError):
        addresses = []
    if not addresses:
        raise PolicyDenied("ERR_URL_UNRESOLVABLE", url=shown, host=host, reason="unresolvable")
    if not allow_private:
        for address in addresses:
            if refused_address(address):
                raise PolicyDenied("ERR_URL_PRIVATE", url=shown, host=host, address=address,
                                   reason="private_address")
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def parse_url(url: str) -> tuple[SplitResult, str]:
    """The split URL and its ASCII host, after the syntax checks (no resolution)."""
    if not isinstance(url, str) or not url.strip():
        raise PolicyDenied("ERR_URL_INVALID", url="", reason="empty")
    shown = printable(url, 200)
    if len(url) > MAX_URL_CHARS:
        raise PolicyDenied("ERR_URL_TOO_LONG", limit=MAX_URL_CHARS, reason="too_long")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 or ch == "\\" for ch in url):
        raise PolicyDenied("ERR_URL_INVALID", url=shown, reason="characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise PolicyDenied("ERR_URL_INVALID", url=shown, reason="syntax") from None
    if parts.scheme.lower() not in SCHEMES:
        raise PolicyDenied("ERR_URL_SCHEME", url=shown, scheme=printable(parts.scheme, 20),
                           reason="scheme")
    if "@" in parts.netloc:
        raise PolicyDenied("ERR_URL_USERINFO", url=shown, reason="userinfo")
    if port == 0:
        raise PolicyDenied("ERR_URL_INVALID", url=shown, reason="port")
    host = _ascii_host(parts.hostname or "")
    if host is None:
        raise PolicyDenied("ERR_URL_INVALID", url=shown, reason="host")
    return parts._replace(scheme=parts.scheme.lower()), host


def refused_address(address: str) -> bool:
    """Whether connecting to `address` could reach this machine, the LAN or a special net.

    Unparsable text counts as refused (fail closed)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    return any(_special(candidate) for candidate in (ip, *_embedded_ipv4(ip)))


def _special(ip: IPAddress) -> bool:
    return (not ip.is_global or ip.is_private or ip.is_loopback or ip.is_link_local
            or ip.is_multicast or ip.is_reserved or ip.is_unspecified)


def _embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64 64:ff9b::/96)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found = [a for a in (ip.ipv4_mapped, ip.sixtofour) if a is not None]
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in ipaddress.IPv6Network("64:ff9b::/96"):
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _ascii_host(hostname: str) -> str | None:
    """The host in ASCII (IDNA for names, compressed form for IPv6), or None if unusable."""
    if not hostname:
        return None
    if ":" in hostname:
        try:
            return ipaddress.IPv6Address(hostname.split("%", 1)[0]).compressed
        except ValueError:
            return None
    try:
        host = hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    if not host or not set(host) <= _HOST_CHARS or len(host) > 253:
        return None
    return host


def _getaddrinfo(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]
