"""Headless Chromium for the web chat tests (ISSUE 5: tested as a person would use it).

Debian's chromium is installed here when missing (`apt-get install chromium`, as root), and
Playwright drives it through `executablePath`. Where it cannot be installed (not root, no
package manager) the tests are skipped with the reason, except in CI (`CI` set), where a
missing browser is a failure, never a silent skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator

import pytest

from tests.support.system import machine_lock

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu"]


def ensure_chromium() -> str | None:
    """The browser's path, installing Debian's package when possible; None with a reason."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        with machine_lock("apt"):  # one pytest-xdist worker at a time
            for args in (["apt-get", "update", "-q"],
                         ["apt-get", "install", "-y", "-q", "chromium"]):
                if os.access(CHROMIUM, os.X_OK):  # another worker installed it meanwhile
                    break
                subprocess.run(args, check=False, env=env, timeout=900,  # noqa: S603 - fixed argv
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return CHROMIUM if os.access(CHROMIUM, os.X_OK) else None


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = ensure_chromium()
    if path is None:
        reason = f"{CHROMIUM} is missing and cannot be installed here (needs root and apt-get)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@pytest.fixture
async def browser(chromium_path: str) -> AsyncIterator[object]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=chromium_path, args=FLAGS)
        try:
            yield launched
        finally:
            await launched.close()
