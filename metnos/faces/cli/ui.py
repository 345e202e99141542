"""`metnos ui`: how to open the Prefect UI, and where its credential is (issue 10).

The Prefect UI shows every turn as a flow run and is one of the places where the owner
approves a paused action, so it is locked (`metnos.faces.serve.prefect_access`): it asks for a
password, the whole content of `secrets/prefect.auth`. This prints the address and the path
of that file, never the secret itself.
"""

from __future__ import annotations

import os

import typer

from metnos.faces.cli._common import JsonFlag, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.faces.serve.prefect_access import CREDENTIAL_USER, credential_path, ui_url
from metnos.ground import i18n
from metnos.ground.errors import MetnosError


def ui(as_json: JsonFlag = False) -> None:
    settings = settings_or_exit()
    url = ui_url(settings)
    external = bool(os.environ.get("PREFECT_API_URL"))
    path = credential_path(settings)
    if not external and not path.is_file():
        missing = MetnosError("ERR_PREFECT_CREDENTIAL_MISSING", path=str(path))
        echo(i18n.message(missing, cli_lang()), err=True)
        raise typer.Exit(1)
    if as_json:
        echo_json({"url": url, "external": external,
                   "credential_file": None if external else str(path),
                   "user": None if external else CREDENTIAL_USER})
        return
    key = "MSG_PREFECT_UI_EXTERNAL" if external else "MSG_PREFECT_UI"
    echo(msg(key, url=url, path=str(path)))
