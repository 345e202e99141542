"""An executor's `main.py` run directly, outside the sandbox (a test harness: production runs
it in bubblewrap, `metnos.mechanisms.sandbox.runner`): the interpreter started as the sandbox starts
it (`-I -S -B`), with the protocol helper importable as the sandbox binds it
(`metnos_sandbox_protocol`, `metnos.mechanisms.sandbox.bwrap.protocol_package`)."""

from __future__ import annotations

import sys
from pathlib import Path

from metnos.mechanisms.sandbox.bwrap import protocol_package

_BOOT = """import importlib.util, runpy, sys
spec = importlib.util.spec_from_file_location(sys.argv[1], sys.argv[2])
sys.modules[spec.name] = module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
runpy.run_path(sys.argv[3], run_name="__main__")
"""


def direct_argv(entry: Path) -> list[str]:
    """The command that runs the executor file `entry` on this host, JSON on stdin."""
    helper = protocol_package()
    name = helper.dest.removesuffix(".py")
    return [sys.executable, "-I", "-S", "-B", "-c", _BOOT, name, str(helper.source), str(entry)]
