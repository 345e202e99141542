"""`metnos login`: print a one-time link that logs a browser into the web chat (SPEC §3).

The link holds a random token, valid `login_token_ttl_s` (10 minutes) and once; the token goes
straight into the database (`metnos.faces.web.link`), so this works whenever `metnos serve` is up,
and ends with exit code 1 and the reason when the database cannot be reached.
"""

from __future__ import annotations

import math

from metnos.faces.cli._common import JsonFlag, or_exit, settings_or_exit
from metnos.faces.cli._lang import msg
from metnos.faces.cli._out import echo, echo_json


def login(as_json: JsonFlag = False) -> None:
    from metnos.faces.web.link import create_login_link  # the database: loaded when it runs

    link = or_exit(create_login_link, settings_or_exit())
    if as_json:
        echo_json({"url": link.url, "expires_at": link.expires_at.isoformat(),
                   "expires_in_s": link.ttl_s})
        return
    echo(msg("MSG_WEB_LOGIN_LINK", count=math.ceil(link.ttl_s / 60)))
    echo(link.url)
    echo(msg("MSG_WEB_LOGIN_PREFECT_HINT"))
