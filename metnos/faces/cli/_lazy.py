"""The `metnos` command's subcommands, each loaded when it runs (issue 29).

`metnos chat "ciao"` needs the chat module and nothing of `metnos mail`, `metnos tutor` or
`metnos prompts`; `metnos --help` needs only each subcommand's one-line help. So the top-level
group knows its subcommands by name (`Entry`: the module, the attribute, the help's message
key) and imports a module when its command is resolved: to run it, to complete it, to show
its own help. Listing them in `metnos --help` builds a placeholder with the same help and
imports nothing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from difflib import get_close_matches
from typing import TYPE_CHECKING, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from metnos.faces.cli._lang import msg

if TYPE_CHECKING:  # Typer's own copy of Click (Typer does not load the `click` package)
    from typer._click import Command, Context, HelpFormatter


@dataclass(frozen=True)
class Entry:
    """A subcommand: `attr` of `module` is a `typer.Typer` (a group) or a function (a
    command); `help_key` is its help's message key, the one the module itself uses."""

    module: str
    attr: str
    help_key: str

    def load(self, name: str) -> Command:
        target = getattr(importlib.import_module(self.module), self.attr)
        if isinstance(target, typer.Typer):
            command: Command = typer.main.get_group(target)
        else:  # the shell completion options belong to `metnos` alone
            single = typer.Typer(add_completion=False)
            single.command(name=name, help=msg(self.help_key))(target)
            command = typer.main.get_command(single)
        command.name = name
        return command


def group(name: str) -> Entry:
    """A command group in `metnos/faces/cli/<name>.py`, its Typer app called `app`."""
    return Entry(f"metnos.faces.cli.{name}", "app", f"CLI_{name.upper()}_HELP")


def command(name: str, help_key: str, attr: str | None = None) -> Entry:
    """A single command: the function `attr` (the name by default) of `<name>.py`."""
    return Entry(f"metnos.faces.cli.{name}", attr or name, help_key)


class LazyGroup(TyperGroup):
    """A Typer group whose `entries` are imported when resolved (subclass it and set them)."""

    entries: ClassVar[dict[str, Entry]] = {}
    _listing = False

    def list_commands(self, ctx: Context) -> list[str]:
        return sorted({*self.commands, *self.entries})

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        found = self.commands.get(cmd_name)
        entry = self.entries.get(cmd_name)
        if found is not None or entry is None:
            return found
        if self._listing:  # a line of `metnos --help`: the help, not the module
            return TyperCommand(cmd_name, help=msg(entry.help_key))
        found = self.commands[cmd_name] = entry.load(cmd_name)
        return found

    def resolve_command(self, ctx: Context,
                        args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        try:  # Typer's own suggestions know only the commands loaded so far
            return self._click_resolve_command(ctx, args)
        except typer.TyperException as exc:  # a usage error ("No such command 'audi'.")
            near = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if near and isinstance(getattr(exc, "message", None), str):
                exc.message = (f"{exc.message.rstrip('.')}. Did you mean "
                               f"{', '.join(repr(name) for name in near)}?")
            raise

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
