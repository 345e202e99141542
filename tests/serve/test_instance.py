"""The instance's lock and process records (metnos.faces.serve.instance), on a real file system and
real processes; the leftovers' rule that a pid alone is not ours (metnos.faces.serve.leftovers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metnos.faces.serve import instance
from metnos.faces.serve.instance import InstanceLock, ProcessRecord
from metnos.faces.serve.leftovers import stop_leftovers
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def test_a_second_lock_on_the_same_home_is_refused_naming_the_holder(
        settings: Settings) -> None:
    first = InstanceLock(settings)
    first.acquire()
    try:
        with pytest.raises(MetnosError) as refused:
            InstanceLock(settings).acquire()  # another open file: flock conflicts
        assert refused.value.key == "ERR_SERVE_ALREADY_RUNNING"
        assert refused.value.vars["pid"] == str(os.getpid())
        assert f"pid {os.getpid()}" in i18n.message(refused.value, "en")
    finally:
        first.release()
    again = InstanceLock(settings)
    again.acquire()  # released: free again
    again.release()


def test_the_lock_goes_with_a_killed_holder(settings: Settings) -> None:
    code = ("import sys, time\nfrom metnos.faces.serve.instance import InstanceLock\n"
            "from metnos.ground.settings import Settings\n"
            f"InstanceLock(Settings(home={str(settings.home)!r})).acquire()\n"
            "print('held', flush=True)\ntime.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(MetnosError) as refused:
            InstanceLock(settings).acquire()
        assert refused.value.vars["pid"] == str(holder.pid)
    finally:
        holder.kill()
        holder.wait()
    lock = InstanceLock(settings)
    lock.acquire()
    lock.release()


def test_records_keep_the_start_order_and_forget_what_stopped(settings: Settings) -> None:
    me = ProcessRecord.of("supervisor", os.getpid())
    instance.record(settings, ProcessRecord.of("gateway", os.getpid()))
    instance.record(settings, me)
    instance.record(settings, ProcessRecord.of("postgres", os.getpid()))
    assert [r.name for r in instance.recorded(settings)] == ["supervisor", "postgres",
                                                             "gateway"]
    instance.forget(settings, "postgres")
    assert [r.name for r in instance.running(settings)] == ["supervisor", "gateway"]


def test_a_reused_pid_is_not_a_leftover(settings: Settings) -> None:
    """A recorded pid now held by another process (another start time) is never signalled."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        real = ProcessRecord.of("gateway", other.pid)
        instance.write_records(settings, [ProcessRecord("gateway", other.pid,
                                                        real.create_time - 100.0)])
        assert stop_leftovers(settings, None) == []
        assert other.poll() is None  # untouched
        instance.write_records(settings, [real])
        assert stop_leftovers(settings, None) == ["gateway"]  # this one is ours: stopped
        other.wait(timeout=10)  # (reaped already by the stop's wait: returncode says 0)
        assert not real.alive()
        assert instance.recorded(settings) == []
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
