"""Unit tests of the bwrap argv (pure function; no process started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metnos.mechanisms.sandbox.bwrap import (
    EXECUTOR_DIR,
    WORKSPACE_DIR,
    Mount,
    PythonRuntime,
    SystemEntry,
    build_argv,
)
from metnos.mechanisms.sandbox.profile import SandboxProfile

PY = PythonRuntime(executable=Path("/opt/py/bin/python3.11"), binds=(Path("/opt/py"),))
MERGED = (SystemEntry("/bin", "usr/bin"), SystemEntry("/lib", "usr/lib"))
NET_FILES = ("/etc/resolv.conf", "/etc/hosts")
BIND_FLAGS = ("--bind", "--ro-bind", "--bind-try", "--ro-bind-try", "--dev-bind")


def argv_for(profile: SandboxProfile, **kw: object) -> list[str]:
    params: dict[str, object] = {
        "bwrap": Path("/x/bwrap"),
        "exec_dir_fd": 7,
        "workspace_fd": 8,
        "python": PY,
        "entry": "main.py",
        "system_entries": MERGED,
        "network_files": NET_FILES,
    }
    params.update(kw)
    return build_argv(profile, **params)  # type: ignore[arg-type]


def pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_core_isolation_flags() -> None:
    argv = argv_for(SandboxProfile())
    for flag in (
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
    ):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[0] == "/x/bwrap"
    cmd = argv[argv.index("--") + 1 :]
    assert cmd == ["/opt/py/bin/python3.11", "-I", "-S", "-B", f"{EXECUTOR_DIR}/main.py"]


@pytest.mark.parametrize("network", [False, True])
def test_unshare_net_iff_no_network(network: bool) -> None:
    argv = argv_for(SandboxProfile(network=network))
    assert ("--unshare-net" in argv) is (not network)
    net_binds = [src for src, _dst in pairs(argv, "--ro-bind") if src.startswith("/etc")]
    assert net_binds == (list(NET_FILES) if network else [])


def test_workspace_by_fd_never_by_name(tmp_path: Path) -> None:
    argv = argv_for(SandboxProfile(), workspace_fd=8)
    assert ("8", WORKSPACE_DIR) in pairs(argv, "--ro-bind-fd")
    assert ("7", EXECUTOR_DIR) in pairs(argv, "--ro-bind-fd")
    assert not any(
        dst.startswith("/home/metnos/") for f in BIND_FLAGS for _s, dst in pairs(argv, f)
    )
    assert "--bind-fd" not in argv


def test_workspace_writable_only_with_write_root() -> None:
    argv = argv_for(SandboxProfile(write=("workspace",)))
    assert ("8", WORKSPACE_DIR) in pairs(argv, "--bind-fd")
    assert ("7", EXECUTOR_DIR) in pairs(argv, "--ro-bind-fd")  # code stays read-only


def test_sub_roots_and_hidden_audit() -> None:
    argv = argv_for(
        SandboxProfile(write=("out",)),
        extra_mounts=[Mount(fd=9, rel="out", writable=True)],
        hidden_dirs=[".audit"],
    )
    assert ("9", f"{WORKSPACE_DIR}/out") in pairs(argv, "--bind-fd")
    tmpfs_at = argv.index(f"{WORKSPACE_DIR}/.audit")
    assert argv[tmpfs_at - 1] == "--tmpfs"
    assert ("--remount-ro", f"{WORKSPACE_DIR}/.audit") in zip(argv, argv[1:], strict=False)
    assert argv.index(f"{WORKSPACE_DIR}/.audit") > argv.index(WORKSPACE_DIR)


def test_no_workspace_fd_gives_empty_dir() -> None:
    argv = argv_for(
        SandboxProfile(read=("docs",)),
        workspace_fd=None,
        extra_mounts=[Mount(fd=9, rel="docs", writable=False)],
    )
    assert ("--dir", WORKSPACE_DIR) in zip(argv, argv[1:], strict=False)
    assert ("9", f"{WORKSPACE_DIR}/docs") in pairs(argv, "--ro-bind-fd")


def test_never_binds_home_root_or_etc_wholesale() -> None:
    argv = argv_for(SandboxProfile(network=True))
    sources = [src for f in BIND_FLAGS for src, _dst in pairs(argv, f)]
    assert set(sources) == {"/usr", "/opt/py", *NET_FILES}
    for forbidden in ("/", "/root", "/etc", str(Path.home()), "/home"):
        assert forbidden not in sources
    assert ("/opt/py", "/opt/py") in pairs(argv, "--ro-bind")  # interpreter at its own path


def test_remount_ro_root_after_every_mount() -> None:
    argv = argv_for(SandboxProfile(write=("workspace",)), hidden_dirs=[".audit"])
    last_mount = max(
        i for i, a in enumerate(argv) if a.startswith(("--bind", "--ro-bind", "--tmpfs"))
    )
    root = [i for i, a in enumerate(argv[:-1]) if a == "--remount-ro" and argv[i + 1] == "/"]
    assert root and root[0] > last_mount
    assert argv.index("--chdir") < argv.index("--")
    assert argv[argv.index("--chdir") + 1] == WORKSPACE_DIR


def test_private_tmp_proc_dev_and_env() -> None:
    argv = argv_for(SandboxProfile(memory_mb=64))
    assert argv[argv.index("--tmpfs") - 2 : argv.index("--tmpfs") + 2] == [
        "--size",
        str(64 * 1024 * 1024),
        "--tmpfs",
        "/tmp",
    ]
    assert ("--proc", "/proc") in zip(argv, argv[1:], strict=False)
    assert ("--dev", "/dev") in zip(argv, argv[1:], strict=False)
    env = pairs(argv, "--setenv")
    assert dict(env) == {"PATH": "/usr/bin:/bin", "HOME": "/home/metnos", "LANG": "C.UTF-8"}


def test_merged_and_split_usr_layouts() -> None:
    merged = argv_for(SandboxProfile())
    assert ("usr/bin", "/bin") in pairs(merged, "--symlink")
    split = argv_for(SandboxProfile(), system_entries=(SystemEntry("/lib"),))
    assert ("/lib", "/lib") in pairs(split, "--ro-bind")
    assert "--symlink" not in split


@pytest.mark.parametrize("entry", ["../main.py", "/etc/passwd", "", "a/../b.py", "./x.py"])
def test_bad_entry_is_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        argv_for(SandboxProfile(), entry=entry)
