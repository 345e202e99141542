"""Every CLI command writes through one door (issue 25): `metnos.faces.cli._out` (which escapes with
`metnos.ground.escape`) or `metnos.faces.cli._table.print_table` (which escapes every cell). Read
from the source's syntax tree, so a new command cannot forget it: no `typer.echo`, `print`, stream
`write`, or rich console of its own anywhere else in `metnos.faces.cli`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

import metnos.faces.cli
from metnos.faces.cli import _out
from metnos.faces.cli._table import print_table

CLI = Path(metnos.faces.cli.__file__).parent
DOORS = {"_out.py"}  # the one module that writes text to the terminal
CONSOLE = {"_table.py"}  # the one rich Console (markup, emoji and highlighting off)
BANNED_CALLS = {"typer.echo", "typer.secho", "typer.style", "click.echo", "click.secho",
                "click.echo_via_pager", "rich.print", "print", "pprint", "os.write"}
BANNED_METHODS = {"write", "writelines"}
STREAMS = {"sys.stdout", "sys.stderr", "sys.__stdout__", "sys.__stderr__"}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return "?"


def offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    asks = {id(node.value) for node in ast.walk(tree)  # `sys.stdout.isatty()` only asks
            if isinstance(node, ast.Attribute) and node.attr == "isatty"}
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name in BANNED_CALLS:
                found.append(f"{where} calls {name}")
            if (isinstance(node.func, ast.Attribute) and node.func.attr in BANNED_METHODS
                    and _name(node.func.value) not in {"out", "_out"}):
                found.append(f"{where} writes with {name}")
            if name.split(".")[-1] == "Console":
                markup = {k.arg: k.value for k in node.keywords}
                off = all(isinstance(markup.get(k), ast.Constant)
                          and markup[k].value is False  # type: ignore[attr-defined]
                          for k in ("markup", "emoji", "highlight"))
                if path.name not in CONSOLE or not off:
                    found.append(f"{where} makes a rich Console")
        if (isinstance(node, ast.Attribute) and _name(node) in STREAMS
                and path.name not in CONSOLE and id(node) not in asks):
            found.append(f"{where} reaches {_name(node)} itself")
        if isinstance(node, ast.ImportFrom) and node.module in {"typer", "click", "rich"}:
            names = {a.name for a in node.names}
            if names & {"echo", "secho", "print", "style"}:
                found.append(f"{where} imports {node.module}.{names}")
    return found


def test_no_cli_module_writes_to_the_terminal_but_through_the_door() -> None:
    modules = sorted(p for p in CLI.glob("*.py") if p.name not in DOORS)
    assert len(modules) > 15
    problems = [problem for path in modules for problem in offences(path)]
    assert problems == []


def test_the_check_sees_each_way_of_writing(tmp_path: Path) -> None:
    """The check is not blind: each way a future command could write raw is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("import sys, typer\nfrom rich.console import Console\n"
                   "typer.echo(x)\nprint(x)\nsys.stdout.write(x)\nstream.write(x)\n"
                   "Console(markup=True)\nfrom typer import echo\n", encoding="utf-8")
    assert len(offences(bad)) == 7  # sys.stdout counted twice: reached, and written to


@pytest.mark.parametrize("text", ["a\x1b[8mb", "a\rb\x9b2J", "\u202eab", "a\x1b]0;t\x07b"])
def test_the_door_and_the_table_leave_no_control(text: str) -> None:
    import typer

    def command() -> None:
        _out.echo(text)
        _out.echo_line(text + "\nnext")
        _out.echo_json({"v": text})
        _out.write(text)
        print_table(["h" + text], [[text, "x"]], title=text)

    app = typer.Typer()
    app.command()(command)
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 0, result.output
    assert not any(ch in result.stdout for ch in "\x1b\r\x07\x9b\u202e"), result.stdout
    assert "next" in result.stdout.splitlines()[1]  # echo_line kept one row
