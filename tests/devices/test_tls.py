"""HTTPS on the overlay (issue 30): with `[gateway] expose_tls_cert`/`_key` (what `tailscale
cert` makes; here a certificate the test signs), the real gateway process serves the exposed
address over TLS and loopback stays plain HTTP for the CLI. Plain HTTP on the overlay address
gets no page, the ceremony works over HTTPS with a `Secure` cookie, and the origin rules
follow the `https` scheme."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from metnos.testing.llm_server import ScriptedLLM
from tests.support.gateway_process import GatewayProcess
from tests.support.home import MakeHome
from tests.support.overlay import Addresses, listening
from tests.support.pg import free_port


def certificate(folder: Path, address: str) -> tuple[Path, Path]:
    """A self-signed certificate for `address` (as an IP name), PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "metnos.family.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address(address)),
                x509.DNSName("metnos.family.test")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "overlay.crt", folder / "overlay.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def gateway(make_home: MakeHome, scripted_llm: ScriptedLLM, overlay: Addresses,
            tmp_path: Path) -> Iterator[tuple[GatewayProcess, Path]]:
    cert, key = certificate(tmp_path, overlay.server)
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_GATEWAY_EXPOSE=overlay.server, METNOS_GATEWAY_EXPOSE_TLS_CERT=str(cert),
                     METNOS_GATEWAY_EXPOSE_TLS_KEY=str(key))
    process = GatewayProcess(home, dict(os.environ), tmp_path / "gateway.log")
    process.start()
    yield process, cert
    process.close()


def test_the_overlay_speaks_https_and_loopback_stays_http(
        gateway: tuple[GatewayProcess, Path], overlay: Addresses) -> None:
    process, cert = gateway
    port = process.env["METNOS_GATEWAY_PORT"]
    assert process.proc is not None
    assert listening(process.proc.pid) == {f"127.0.0.1:{port}", f"{overlay.server}:{port}"}
    site = f"https://{overlay.server}:{port}"
    trust = ssl.create_default_context(cafile=str(cert))
    phone = httpx.Client(base_url=site, verify=trust, timeout=30, headers={"Origin": site},
                         transport=httpx.HTTPTransport(local_address=overlay.devices[0],
                                                       verify=trust))
    with phone:
        plain = httpx.Client(timeout=10, transport=httpx.HTTPTransport(
            local_address=overlay.devices[0]))
        with plain, pytest.raises(httpx.HTTPError):  # plain HTTP on the overlay: no page
            plain.get(f"http://{overlay.server}:{port}/device")
        page = phone.get("/device")
        assert page.status_code == 200
        assert f"connect-src 'self' wss://{overlay.server}:{port}" in page.headers[
            "content-security-policy"]
        foreign = phone.post("/device/ask", json={"label": "x"},
                             headers={"Origin": f"http://{overlay.server}:{port}"})
        assert foreign.status_code == 403  # the http origin is not the https page's
        asked = phone.post("/device/ask", json={"label": "Anna's tablet"})
        assert asked.status_code == 200, asked.text
        assert "secure" in asked.headers["set-cookie"].lower()
        approved = httpx.post(f"{process.base}/api/pairing/approve",  # the CLI: loopback http
                              headers=process.home.auth(), json={"code": asked.json()["code"]},
                              timeout=30)
        assert approved.status_code == 200, approved.text
        assert phone.get("/api/sessions").status_code == 200
