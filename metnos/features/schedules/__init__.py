"""Schedules people can see (SPEC §12): the owner's own scheduled tasks beside the built-in
ones, all Prefect deployments in the instance's time zone."""
