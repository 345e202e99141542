"""Run executors under bubblewrap (SPEC §5): argv, runner, start-up canary.

`run_sandboxed(SandboxRequest(...)) -> SandboxResult` is the one way `metnos` starts an
executor; `run_canary()` proves confinement at start-up.
"""

from metnos.mechanisms.sandbox.bwrap import PythonRuntime, build_argv, find_bwrap
from metnos.mechanisms.sandbox.canary import CanaryReport, run_canary
from metnos.mechanisms.sandbox.profile import SandboxProfile
from metnos.mechanisms.sandbox.request import SandboxRequest, SandboxResult
from metnos.mechanisms.sandbox.runner import find_python_runtime, run_sandboxed

__all__ = [
    "CanaryReport",
    "PythonRuntime",
    "SandboxProfile",
    "SandboxRequest",
    "SandboxResult",
    "build_argv",
    "find_bwrap",
    "find_python_runtime",
    "run_canary",
    "run_sandboxed",
]
