"""What a test needs from the machine: Debian packages installed on demand, and skips that
cannot hide a test under CI.

The project's machines are Debian and the test session runs as root, so a missing system tool
(minisign, chromium) is installed with apt-get when it can be; where it cannot, the test is
skipped with the reason, except under CI (`CI` set), where that is a failure. Under
pytest-xdist two workers may want a package at once: apt-get runs under `machine_lock("apt")`
(dpkg's own lock would make the second one fail, and its test skip).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (`CI=1`, `CI=true`): then nothing may hide behind a skip."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str) -> None:
    """Skip a test that cannot run here, except under CI, where it fails instead."""
    if in_ci():
        pytest.fail(f"{reason} (CI=1: a skip would hide this test)", pytrace=False)
    pytest.skip(reason)


def ensure_debian_binary(binary: str, package: str) -> str | None:
    """The path of `binary`, installing Debian's `package` when missing (root and apt-get)."""
    ensure_debian(package, lambda: shutil.which(binary) is not None)
    return shutil.which(binary)


def ensure_debian_file(path: Path, package: str) -> bool:
    """Whether `path` exists, installing Debian's `package` when it does not (a language's
    data, a font)."""
    return ensure_debian(package, path.exists)


def ensure_debian(package: str, present: Callable[[], bool]) -> bool:
    """`present()`, after installing Debian's `package` when it says False (root, apt-get)."""
    if present() or os.geteuid() != 0 or not shutil.which("apt-get"):
        return present()
    with machine_lock("apt"):
        if present():  # another worker installed it meanwhile
            return True
        install = ("install", "-y", "-q", "--no-install-recommends", package)
        if not _apt_get(*install) and _apt_get("update", "-q"):  # lists missing or stale
            _apt_get(*install)
    return present()


@contextmanager
def machine_lock(name: str) -> Iterator[None]:
    """One holder at a time on this machine (an exclusive flock on a file in the temp dir):
    for what the test processes of one session (pytest-xdist workers) must not do together."""
    path = Path(tempfile.gettempdir()) / f"metnos-tests-{name}.lock"
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _apt_get(*args: str) -> bool:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(["apt-get", *args], check=False, env=env, timeout=900,  # noqa: S603
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return done.returncode == 0
