"""The attack tally (tests/support/attacks.py) in a real pytest run: a skipped attack is not
"tried", and under CI a skipped attack fails the session with its name printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

ATTACKS = '''
import pytest

@pytest.mark.attack
def test_held() -> None:
    assert True

@pytest.mark.attack
def test_not_admitted() -> None:
    pytest.skip("fs_nothing is not admitted")

@pytest.mark.attack
@pytest.mark.skipif(True, reason="no seccomp here")
def test_skipped_at_setup() -> None:
    assert True

@pytest.mark.attack
@pytest.mark.xfail(strict=True, reason="a documented residual risk")
def test_known_risk() -> None:
    assert False

def test_not_an_attack() -> None:
    pytest.skip("ordinary skip")
'''


def _pytest(tmp_path: Path, source: str, ci: str,
            *options: str) -> subprocess.CompletedProcess[str]:
    test_file = tmp_path / "test_some_attacks.py"
    test_file.write_text(source)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CI": ci}
    env.pop("PYTEST_XDIST_WORKER", None)  # this run's own, not the outer worker's
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "tests.support.attacks", "-c",
            os.devnull, "--rootdir", str(tmp_path), "-p", "no:cacheprovider", *options,
            str(test_file)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120, check=False)


def test_skipped_attacks_are_reported_apart(tmp_path: Path) -> None:
    out = _pytest(tmp_path, ATTACKS, ci="")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "attacks tried: 2; skipped: 2; successful attacks: 0" in out.stdout
    assert "SKIPPED: test_some_attacks.py::test_not_admitted (fs_nothing is not admitted)" \
        in out.stdout
    assert "test_skipped_at_setup (no seccomp here)" in out.stdout
    assert "test_not_an_attack" not in out.stdout.split("security attack suite")[1]


def test_under_ci_a_skipped_attack_fails_the_session(tmp_path: Path) -> None:
    out = _pytest(tmp_path, ATTACKS, ci="1")
    assert out.returncode == pytest.ExitCode.TESTS_FAILED, out.stdout + out.stderr
    assert "attacks tried: 2; skipped: 2; successful attacks: 0" in out.stdout
    assert "CI=1: 2 attack(s) skipped; the session fails" in out.stdout


def test_under_ci_a_skipped_attack_fails_a_session_on_two_workers(tmp_path: Path) -> None:
    """`make test` runs pytest-xdist: the workers' reports are tallied by the controller."""
    out = _pytest(tmp_path, ATTACKS, "1", "-n", "2")
    assert out.returncode == pytest.ExitCode.TESTS_FAILED, out.stdout + out.stderr
    assert "attacks tried: 2; skipped: 2; successful attacks: 0" in out.stdout
    assert "CI=1: 2 attack(s) skipped; the session fails" in out.stdout


def test_a_failed_attack_is_a_successful_one(tmp_path: Path) -> None:
    source = "import pytest\n@pytest.mark.attack\ndef test_breach() -> None:\n    assert False\n"
    out = _pytest(tmp_path, source, ci="1")
    assert out.returncode == pytest.ExitCode.TESTS_FAILED
    assert "attacks tried: 1; skipped: 0; successful attacks: 1" in out.stdout
    assert "SUCCEEDED: test_some_attacks.py::test_breach" in out.stdout


def test_under_ci_skip_or_fail_fails(tmp_path: Path) -> None:
    source = ("from tests.support.system import skip_or_fail\n"
              "def test_needs_a_tool() -> None:\n    skip_or_fail('minisign is missing')\n")
    assert _pytest(tmp_path, source, ci="").returncode == 0
    out = _pytest(tmp_path, source, ci="true")
    assert out.returncode == pytest.ExitCode.TESTS_FAILED
    assert "minisign is missing (CI=1: a skip would hide this test)" in out.stdout
