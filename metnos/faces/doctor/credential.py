"""The Prefect credential (`secrets/prefect.auth`): present, private, and accepted.

When this instance's own Prefect server answers, the credential must open its API
(`GET /api/version` → 200) while a request without it is refused (401). The credential is
sent only to a server this instance started: never to a foreign process on its port.
"""

from __future__ import annotations

import stat

import httpx

from metnos.faces.doctor.finding import Finding, text
from metnos.faces.doctor.instance import family, own_prefect
from metnos.faces.serve import instance, ports
from metnos.faces.serve.prefect_access import CREDENTIAL_USER, credential_path, read_credential
from metnos.ground.settings import Settings

NAME = "prefect-credential"
TIMEOUT_S = 3.0


async def check_credential(settings: Settings, lang: str | None) -> Finding:
    if not own_prefect():
        return Finding(NAME, None, text("DOCTOR_PREFECT_EXTERNAL", lang))
    path = credential_path(settings)
    try:
        mode = path.stat().st_mode
        credential = read_credential(settings)
    except FileNotFoundError:
        credential = None
    except OSError as exc:
        return Finding(NAME, False, text("DOCTOR_PREFECT_UNREADABLE", lang, path=str(path),
                                         error=exc.strerror or str(exc)),
                       text("DOCTOR_FIX_PREFECT_PERMISSIONS", lang, path=str(path)))
    if credential is None or ":" not in credential:
        return Finding(NAME, False, text("DOCTOR_PREFECT_MISSING", lang, path=str(path)),
                       text("DOCTOR_FIX_INIT", lang))
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return Finding(NAME, False, text("DOCTOR_PREFECT_EXPOSED", lang, path=str(path),
                                         mode=oct(stat.S_IMODE(mode))),
                       text("DOCTOR_FIX_PREFECT_PERMISSIONS", lang, path=str(path)))
    if not _served_by_us(settings):
        return Finding(NAME, True, text("DOCTOR_PREFECT_NOT_RUNNING", lang))
    return await _accepted(settings, credential, lang)


def _served_by_us(settings: Settings) -> bool:
    holder = ports.holder(settings.prefect.port)
    if holder is None or holder.pid is None:
        return False
    server = [r for r in instance.running(settings) if r.name == "prefect-server"]
    if not server:
        return False
    return holder.pid in family({r.pid for r in server})


async def _accepted(settings: Settings, credential: str, lang: str | None) -> Finding:
    url = f"http://127.0.0.1:{settings.prefect.port}/api/version"
    user, _, password = credential.partition(":")
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
            without = (await client.get(url)).status_code
            with_it = (await client.get(url, auth=(user or CREDENTIAL_USER, password))
                       ).status_code
    except httpx.HTTPError as exc:
        return Finding(NAME, None, text("DOCTOR_PREFECT_NO_ANSWER", lang,
                                        error=type(exc).__name__))
    if with_it != 200:
        return Finding(NAME, False, text("DOCTOR_PREFECT_REFUSED", lang, status=with_it),
                       text("DOCTOR_FIX_RESTART", lang))
    if without != 401:
        return Finding(NAME, False, text("DOCTOR_PREFECT_OPEN", lang, status=without),
                       text("DOCTOR_FIX_RESTART", lang))
    return Finding(NAME, True, text("DOCTOR_PREFECT_ACCEPTED", lang))
