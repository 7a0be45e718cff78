"""Servers of the tests' own on spare loopback ports, for faults the shared ones must not
see: a Redis that wants a password, a PostgreSQL cluster with password authentication."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

PASSWORD = "own-s3cret"


def spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes] | None, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"no server on port {port} after {seconds}s")


@contextlib.contextmanager
def redis_with_password() -> Iterator[int]:
    """A redis-server requiring ``PASSWORD`` on a spare port; yields the port."""
    with _own_redis("--requirepass", PASSWORD) as port:
        yield port


@contextlib.contextmanager
def redis_without_scripts() -> Iterator[int]:
    """A redis-server that refuses ``EVAL`` as an unknown command (renamed away), as
    plain fakeredis does; yields the port."""
    with _own_redis("--rename-command", "EVAL", "") as port:
        yield port


@contextlib.contextmanager
def _own_redis(*options: str) -> Iterator[int]:
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.skip("redis-server is not installed")
    port = spare_port()
    process = subprocess.Popen(
        [
            executable,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process, 10)
        yield port
    finally:
        process.terminate()
        process.wait(10)


def _as_postgres(*command: str, cwd: str) -> None:
    prefix = [] if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--"]
    subprocess.run([*prefix, *command], check=True, capture_output=True, cwd=cwd, timeout=120)


@contextlib.contextmanager
def postgres_with_password() -> Iterator[int]:
    """A throwaway PostgreSQL cluster (initdb/pg_ctl as the ``postgres`` user in a temp
    dir) where user ``postgres`` logs in with ``PASSWORD`` (scram); yields the port."""
    with own_postgres() as cluster:
        yield cluster.port


class OwnPostgres:
    """A cluster of the test's own: its port, and SIGSTOP/SIGCONT of all its processes."""

    def __init__(self, port: int, data: Path) -> None:
        self.port = port
        self.data = data

    def processes(self) -> list[int]:
        """The postmaster's pid first, then its children's."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    children.append(int(stat.parent.name))
        return [postmaster, *children]

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Every process of the cluster stopped (as ``kill -STOP``) inside the block."""
        stopped = []
        try:
            for pid in self.processes():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
            yield
        finally:
            for pid in reversed(stopped):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """``postgres_with_password``'s cluster, as an ``OwnPostgres``."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("initdb/pg_ctl are not installed")
    root = tempfile.mkdtemp(prefix="agent-sessions-pg-")
    os.chmod(root, 0o777)
    data, pwfile = Path(root) / "data", Path(root) / "pw"
    pwfile.write_text(PASSWORD)
    os.chmod(pwfile, 0o644)
    port = spare_port()
    try:
        _as_postgres(
            initdb,
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "--no-sync",
            cwd=root,
        )
        _as_postgres(
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(Path(root) / "log"),
            "-w",
            "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
            cwd=root,
        )
        try:
            yield OwnPostgres(port, data)
        finally:
            _as_postgres(pg_ctl, "-D", str(data), "-m", "immediate", "stop", cwd=root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cluster_port() -> int:
    """A free port P below 55536 whose cluster bus port, P + 10000, is free too."""
    while True:
        port = random.randrange(20000, 45000)
        try:
            with socket.socket() as probe, socket.socket() as bus:
                probe.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port


@contextlib.contextmanager
def redis_cluster(nodes: int = 3) -> Iterator[list[int]]:
    """A Redis Cluster of ``nodes`` primaries (no replicas) on spare loopback ports, in a
    temp directory of its own; yields the ports once every slot is served."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        pytest.skip("redis-server and redis-cli are needed to start a Redis Cluster")
    root = tempfile.mkdtemp(prefix="agent-sessions-cluster-")
    ports: list[int] = []
    while len(ports) < nodes:
        port = _cluster_port()
        if port not in ports:
            ports.append(port)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            processes.append(
                subprocess.Popen(
                    [
                        server,
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        f"nodes-{port}.conf",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--daemonize",
                        "no",
                    ],
                    cwd=root,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port, process in zip(ports, processes, strict=True):
            _wait_for_port(port, process, 10)
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + 30
        while True:
            states = [
                subprocess.run(
                    [cli, "-p", str(port), "cluster", "info"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                ).stdout
                for port in ports
            ]
            if all("cluster_state:ok" in state for state in states):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster on {ports} never became ok: {states}")
            time.sleep(0.1)
        yield ports
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(10)
        shutil.rmtree(root, ignore_errors=True)


class DurableRedis:
    """A redis-server of the test's own on a spare loopback port, every write in its
    append-only file before it answers (``appendfsync always``): ``kill()`` SIGKILLs it,
    ``start()`` starts it again on the same port and directory, which replays the file."""

    def __init__(self, executable: str, directory: Path) -> None:
        self.executable = executable
        self.directory = directory
        self.port = spare_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.executable,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--aof-load-truncated",
                "yes",
                "--logfile",
                str(self.directory / "redis.log"),
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_port(self.port, self.process, 10)

    def kill(self) -> None:
        """SIGKILL: no shutdown, nothing flushed that was not already."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None


@contextlib.contextmanager
def durable_redis() -> Iterator[DurableRedis]:
    """A started ``DurableRedis`` in a temporary directory, stopped at the end."""
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.skip("redis-server is not installed")
    with tempfile.TemporaryDirectory(prefix="agent-sessions-redis-") as directory:
        server = DurableRedis(executable, Path(directory))
        server.start()
        try:
            yield server
        finally:
            if server.process is not None:
                server.process.terminate()
                server.process.wait(10)
