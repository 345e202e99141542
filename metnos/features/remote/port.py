"""How the server reaches a work pool: the calls `flows/remote_step.py` builds from Prefect."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from metnos.ground.errors import MetnosError

# a work pool's name → whether a worker of it has sent a heartbeat lately
Online = Callable[[str], Awaitable[bool]]
# (pool, the flow run's parameters, deadline in seconds) → the final state's message, when the
# run completed or failed on the worker; raises RemoteTimeout or RemoteLost
Submit = Callable[[str, dict[str, Any], float], Awaitable[str]]


class RemoteTimeout(MetnosError, TimeoutError):
    """The run did not end within its deadline (it was cancelled)."""

    key = "ERR_REMOTE_TIMEOUT"


class RemoteLost(MetnosError, RuntimeError):
    """The run ended without a reply of the worker (crashed, cancelled elsewhere)."""

    key = "ERR_REMOTE_LOST"


@dataclass(frozen=True)
class RemotePort:
    online: Online
    submit: Submit
