"""`[gateway] expose`: what may be exposed, how an interface is read, what `metnos doctor`
says of it, and that an address this machine does not have leaves loopback serving."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from metnos.faces.doctor.instance import check_overlay
from metnos.faces.gateway.exposed import listening_sockets
from metnos.faces.web.overlay import ExposeUnavailable, exposed
from metnos.ground.settings import get_settings
from metnos.ground.settings.gateway import GatewaySettings
from tests.support.overlay import Addresses
from tests.support.pg import free_port


@pytest.mark.parametrize("value", ["0.0.0.0", "::", "[::]", "127.0.0.1", "::1", "127.0.0.2",  # noqa: S104 - refused, the point
                                   "224.0.0.1", "ff02::1", "169.254.1.1", "fe80::1",
                                   "bad name!", "a" * 16])
def test_every_address_and_no_address_are_refused(value: str) -> None:
    with pytest.raises(ValidationError):
        GatewaySettings(expose=value)


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "evil.example/x", "-bad.example"])
def test_an_exposed_name_is_a_host_name_and_not_loopback(name: str) -> None:
    with pytest.raises(ValidationError):
        GatewaySettings(expose_name=name)


def test_names_are_kept_as_browsers_send_them() -> None:
    gateway = GatewaySettings(expose="100.64.1.7", expose_name="Metnos.Tail1234.TS.net.")
    assert gateway.expose_name == "metnos.tail1234.ts.net"


def settings_with(monkeypatch: pytest.MonkeyPatch, **env: str):  # type: ignore[no-untyped-def]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    return get_settings()


def test_an_interface_is_read_for_its_address_and_the_doctor_says_where(
        overlay: Addresses, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = settings_with(monkeypatch, METNOS_HOME=str(tmp_path), METNOS_LANG="en",
                             METNOS_GATEWAY_EXPOSE=overlay.interface,
                             METNOS_GATEWAY_EXPOSE_NAME="metnos.family.test")
    found = exposed(settings)
    assert found is not None and found.address == overlay.server and found.overlay
    assert found.names == {overlay.server, "metnos.family.test"}
    finding = check_overlay(settings, "en")
    assert finding is not None and finding.ok is True
    assert f"http://metnos.family.test:{settings.gateway.port}" in finding.line
    get_settings.cache_clear()


def test_a_missing_interface_is_told_and_loopback_goes_on(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = settings_with(monkeypatch, METNOS_HOME=str(tmp_path), METNOS_LANG="it",
                             METNOS_GATEWAY_EXPOSE="tailscale9")
    with pytest.raises(ExposeUnavailable):
        exposed(settings)
    finding = check_overlay(settings, "it")
    assert finding is not None and finding.ok is False
    assert "tailscale9" in finding.line and "tailscale up" in (finding.fix or "")
    get_settings.cache_clear()


def test_a_lan_address_is_served_but_warned_and_an_absent_one_is_not_bound(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = settings_with(monkeypatch, METNOS_HOME=str(tmp_path), METNOS_LANG="en",
                             METNOS_GATEWAY_EXPOSE="192.168.77.10",
                             METNOS_GATEWAY_PORT=str(free_port()))
    found = exposed(settings)
    assert found is not None and not found.overlay
    finding = check_overlay(settings, "en")
    assert finding is not None and finding.ok is None and "not an overlay address" in finding.line
    sockets = listening_sockets(settings, found)  # 192.168.77.10 is not this machine's
    try:
        assert [s.getsockname()[0] for s in sockets] == ["127.0.0.1"]
    finally:
        for sock in sockets:
            sock.close()
    get_settings.cache_clear()
