"""The Prefect API reads behind the scheduler's signals (flows/_scheduler_signals.py): the
deployments, and their flow runs counted by state, one request at a time."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from prefect.client.orchestration import PrefectClient
from prefect.client.schemas import filters as f
from prefect.client.schemas.objects import StateType
from prefect.settings import get_current_settings

READ_TIMEOUT_S = 5.0  # the deployments and the counts together
WINDOW = timedelta(hours=24)  # the nightly flows run once a day: last night's crash counts
DEPLOYMENTS_READ = 200  # more than deployments/serve.py serves, by far
# runs counted per state: a state type, or a state name where the type is shared ("Late"
# runs are SCHEDULED runs past their time, marked by the server's late-runs service)
COUNTED: dict[str, f.FlowRunFilterState] = {
    **{name: f.FlowRunFilterState(type=f.FlowRunFilterStateType(any_=[kind])) for name, kind in (
        ("completed", StateType.COMPLETED), ("failed", StateType.FAILED),
        ("crashed", StateType.CRASHED), ("running", StateType.RUNNING))},
    **{name: f.FlowRunFilterState(name=f.FlowRunFilterStateName(any_=[state]))
       for name, state in (("late", "Late"), ("scheduled", "Scheduled"))},
}


def client(api_url: str | None = None) -> PrefectClient:
    """A client of the configured API (or of `api_url`), its own: the refresher's requests
    never share a turn's client nor its retries' time."""
    api = get_current_settings().api
    return PrefectClient(api_url or str(api.url), api_key=api.key.get_secret_value()
                         if api.key else None, auth_string=api.auth_string.get_secret_value()
                         if api.auth_string else None,
                         httpx_settings={"timeout": READ_TIMEOUT_S})


def flows_named(names: list[str] | None) -> f.FlowFilter | None:
    return f.FlowFilter(name=f.FlowFilterName(any_=names)) if names else None


async def reads(prefect: PrefectClient, flows: f.FlowFilter | None,
                now: datetime) -> tuple[list[Any], dict[str, int]]:
    """The deployments, and their runs expected to start within `WINDOW` up to now, one
    count per state (turn flows run in the gateway, not from a deployment: not counted).
    One request at a time (about 30 ms each): concurrent first requests of one client
    fetch its CSRF token at once, and all but one then hold a dead token."""
    deployments = await prefect.read_deployments(flow_filter=flows, limit=DEPLOYMENTS_READ)
    when = f.FlowRunFilterExpectedStartTime(after_=now - WINDOW, before_=now)
    deployed = f.FlowRunFilterDeploymentId(is_null_=False)
    runs: dict[str, int] = {}
    for name, state in COUNTED.items():
        runs[name] = await prefect.count_flow_runs(flow_filter=flows, flow_run_filter=(
            f.FlowRunFilter(expected_start_time=when, deployment_id=deployed, state=state)))
    return deployments, runs
