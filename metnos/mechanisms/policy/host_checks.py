"""Host-side checks of arguments that are more than paths, declared by the executor manifest.

An input declares `check = "<name>"` in its manifest (`[inputs.command] check =
"shell_command"`); the turn's step checker applies the named check before the step can run,
whichever executor declares it. The checks themselves are code (SPEC §4: security is code):
- `shell_command`: the command passes `policy.shell.check_command` (allow-list, no pipes,
  redirections, variables or absolute paths);
- `url`: the URL passes `policy.urls.check_url` (http/https only, no credentials, no private
  address unless the host allows it); the host, never the model, adds `allow_private`;
A feature's check lives with the feature and is registered by `metnos.faces.registry`:
- `list_name`: a list's name gets its file, `lists/<id>.md` (`metnos.features.lists`: "spesa" and
  "shopping" are one list), resolved in the workspace like any path argument; the host, never
  the model, sets `path` and the heading of a new file (`title`), so the before-record covers
  exactly the list's file; an older home's per-language files are merged first
  (`metnos.features.lists_merge`);
- `archive_destination`: an archive's category and year give the file its place,
  `archive/<year>/<category>/<name>` (`metnos.features.archiving`); the host, never the model, sets
  `dst`, so the before-record covers both ends of the move;
- `cadence`: a scheduled task's "when" must read as a recurring time in one of the active
  languages (`metnos.features.schedules.cadence`); the host, never the model, sets `cron`, so the
  owner approves the exact schedule and a "when" nobody can read is refused before asking.
A check sees the arguments checked so far (paths resolved already).
A failing check raises `PolicyDenied` (or `ModelRetryError`, for a value the model may
say again another way) with its i18n key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from metnos.ground.settings import Settings
from metnos.mechanisms.policy.shell import check_command
from metnos.mechanisms.policy.urls import check_url

# (settings, input name, value, the arguments so far) -> the arguments to set (the checked
# value, and any the host adds)
HostCheck = Callable[[Settings, str, Any, Mapping[str, Any]], dict[str, Any]]


def _shell_command(settings: Settings, name: str, value: Any,
                   args: Mapping[str, Any]) -> dict[str, Any]:
    check_command(str(value), settings.policy.shell_allow)
    return {name: value}


def _url(settings: Settings, name: str, value: Any,
         args: Mapping[str, Any]) -> dict[str, Any]:
    allow = settings.sandbox.web_allow_private
    return {name: check_url(str(value), allow_private=allow), "allow_private": allow}


# the policy's own checks by name; a feature's (`list_name`, `archive_destination`,
# `cadence`) are the runtime's hooks (`metnos.faces.wiring`): the policy ring knows no feature
BUILTIN_CHECKS: Mapping[str, HostCheck] = MappingProxyType(
    {"shell_command": _shell_command, "url": _url})


def apply_host_checks(settings: Settings, checks: dict[str, str], args: dict[str, Any],
                      features: Mapping[str, HostCheck] = BUILTIN_CHECKS) -> dict[str, Any]:
    """`args` after every check its manifest declares (`checks`: input name → check name),
    the policy's own or the `features'`; an input left out of `args` (optional, not given)
    is not checked."""
    out = dict(args)
    for name, check in checks.items():
        if name in args:
            run = BUILTIN_CHECKS.get(check) or features[check]
            out.update(run(settings, name, args[name], out))
    return out
