"""Real ``redis-server`` processes for the tests: single servers and clusters
(3 or 6 masters).

Tests talk to real servers, never to a fake: every server here is a child process on a free
loopback port with its own temporary directory, stopped when the fixture ends.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.marked import require

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")


#: Redis Cluster listens on its port + 10000 for the cluster bus, so cluster ports stay below this.
MAX_CLUSTER_PORT = 55535


def free_port(maximum: int = 65535) -> int:
    """Return a loopback TCP port that is free right now and not above ``maximum``."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port <= maximum:
            return port
    raise RuntimeError(f"no free loopback port at or below {maximum}")


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"redis-server on port {port} exited at start: {error.strip()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"redis-server on port {port} did not start within {timeout}s")


@dataclass
class RedisServer:
    """One ``redis-server`` child process that can be stopped and started again on its port."""

    workdir: Path
    port: int = field(default_factory=free_port)
    cluster: bool = False
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Return the ``redis://`` URL of this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def simhash_bytes(self) -> int:
        """Memory this server spends on scrapy-simhash's keys (``MEMORY USAGE``, summed)."""
        import redis

        client = redis.Redis(port=self.port)
        try:
            return sum(
                int(client.memory_usage(name, samples=0) or 0)
                for name in client.scan_iter(match=b"simhash:*", count=1000)
            )
        finally:
            client.close()

    def start(self) -> RedisServer:
        """Start the server and wait until it accepts connections."""
        if self.cluster:
            require("cluster", "starts a Redis Cluster node")
        require("redis", "starts redis-server")
        if REDIS_SERVER is None:
            raise RuntimeError(
                "redis-server is not on PATH: install it (Debian: apt-get install redis-server) "
                "or point REDIS_URL at a running server"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.workdir),
            "--logfile",
            str(self.workdir / "redis.log"),
        ]
        if self.cluster:
            args += [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                str(self.workdir / "nodes.conf"),
                "--cluster-node-timeout",
                "2000",
            ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _wait_for_port(self.port, self.process)
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (as an outage would: connections drop at once)."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


def start_cluster(workdir: Path, masters: int = 3) -> list[RedisServer]:
    """Start ``masters`` cluster-enabled servers and join them into one cluster."""
    if REDIS_CLI is None:
        raise RuntimeError("redis-cli is not on PATH; it is needed to create a Redis Cluster")
    servers: list[RedisServer] = []
    try:
        for i in range(masters):
            node = RedisServer(workdir / f"node{i}", port=free_port(MAX_CLUSTER_PORT), cluster=True)
            servers.append(node.start())
        _create_cluster(servers)
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


def _create_cluster(servers: list[RedisServer]) -> None:
    addresses = [f"127.0.0.1:{server.port}" for server in servers]
    subprocess.run(
        [REDIS_CLI, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = subprocess.run(
            [REDIS_CLI, "-p", str(servers[0].port), "cluster", "info"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if "cluster_state:ok" in info:
            return
        time.sleep(0.1)
    raise RuntimeError("the Redis Cluster did not reach cluster_state:ok within 30s")
