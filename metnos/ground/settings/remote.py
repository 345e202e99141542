"""The `[remote]` settings group: executors that run on another machine (SPEC §1 scale-out).

Environment variables are `METNOS_REMOTE_<FIELD>`; the table in `metnos.toml` is `[remote]`.
A manifest's `runs_on` names a place; `pools` maps each place to its Prefect work pool.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class RemoteSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_REMOTE_")

    pools: dict[str, str] = Field(
        default_factory=lambda: {"laptop": "laptop"},
        description="The Prefect work pool of each place a manifest's runs_on may name.")
    step_deadline_s: float = Field(
        120.0, gt=0, le=3600,
        description="How long one run on a remote pool may take, from submission to its end "
                    "(a worker picks it up, starts a process, runs the executor); past it "
                    "the run is cancelled and the step fails naming the place.")
    deployment_flow: str = Field(
        "remote-step", description="The flow whose deployment `<flow>/<pool>` each pool runs.")
