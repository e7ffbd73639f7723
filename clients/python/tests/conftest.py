"""Fixtures: a real `flotilla serve` and fake executors on loopback.

The flotilla binary is built once per session from the repository
(`go build ./cmd/flotilla`), or taken from $FLOTILLA_BIN. Each test that
asks for `service` gets its own serve (in-memory backend) in a temporary
directory, listening on a port the kernel picks (-listen 127.0.0.1:0, the
address read from its "listening on" line); processes are stopped by PID
(SIGTERM, then SIGKILL) when the test ends.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package from the repository

import flotilla  # noqa: E402

REPO = HERE.parents[2]

# How long a process may take to start or to stop, and a test to see an
# event it waits for: bounds for failure, not pauses.
START_TIMEOUT = 30.0
EVENT_TIMEOUT = 30.0


@pytest.fixture(scope="session")
def flotilla_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("FLOTILLA_BIN")
    if given:
        return Path(given)
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out = tmp_path_factory.mktemp("bin") / "flotilla"
    subprocess.run([go, "build", "-o", str(out), "./cmd/flotilla"], cwd=REPO, check=True)
    return out


class Proc:
    """A process started by a test, its output in a log file, stopped by PID."""

    def __init__(self, args: List[str], cwd: Path, log: Path) -> None:
        self.log = log
        self._out = open(log, "wb")
        self.popen = subprocess.Popen(args, cwd=cwd, stdout=self._out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        self.pid = self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> Optional[int]:
        if self.popen.poll() is None:
            os.kill(self.pid, sig)
            try:
                self.popen.wait(timeout=START_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.popen.wait()
        self._out.close()
        return self.popen.returncode


class Service:
    """A `flotilla serve` on loopback, and the executors started for it."""

    def __init__(self, bin: Path, dir: Path, args: List[str], listen: str = "127.0.0.1:0") -> None:
        self.bin = bin
        self.dir = dir
        self.procs: List[Proc] = []
        self._args = ["serve", "-listen", listen, "-cycle", "100ms", "-lease-timeout", "5s"] + args
        self.serve = self._start(self._args, "serve.log")
        self.url = self._wait_listening()
        self.restarts = 0

    def restart(self) -> None:
        """Stops serve (SIGTERM: it must exit 0) and starts it again with
        the same flags; with a fixed -listen, at the same URL."""
        code = self.serve.stop()
        assert code == 0, "serve exited %s on SIGTERM:\n%s" % (code, self.serve.output())
        self.restarts += 1
        self.serve = self._start(self._args, "serve-%d.log" % self.restarts)
        self.url = self._wait_listening()

    def _start(self, args: List[str], log: str) -> Proc:
        p = Proc([str(self.bin)] + args, self.dir, self.dir / log)
        self.procs.append(p)
        return p

    def _wait_listening(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            m = re.search(r"listening on (http://\S+)", self.serve.output())
            if m:
                return m.group(1)
            if self.serve.popen.poll() is not None:
                raise AssertionError("serve exited %d:\n%s" % (self.serve.popen.returncode, self.serve.output()))
            time.sleep(0.02)
        raise AssertionError("serve did not listen within %s s:\n%s" % (START_TIMEOUT, self.serve.output()))

    def executor(self, cluster: str, nodes: List[Dict[str, object]], token: Optional[str] = None,
                 pool: Optional[str] = None) -> Proc:
        """Starts `flotilla executor`, a fake cluster, for this service (in
        pool, when given)."""
        path = self.dir / ("nodes-%s.json" % cluster)
        path.write_text(json.dumps(nodes))
        args = ["executor", "-cluster", cluster, "-nodes", str(path), "-renew", "100ms",
                "-lease-timeout", "5s", "-server", self.url]
        if token:
            args += ["-token", token]
        if pool:
            args += ["-pool", pool]
        return self._start(args, "executor-%s.log" % cluster)

    def client(self, token: Optional[str] = None, **kw: object) -> flotilla.Client:
        return flotilla.Client(self.url, token, **kw)  # type: ignore[arg-type]

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()

    def logs(self) -> str:
        return "\n".join("== %s\n%s" % (p.log.name, p.output()) for p in self.procs)


NODES = [{"name": "node", "count": 2, "resources": {"cpu": "8", "memory": "32Gi"}}]


@pytest.fixture
def start_service(flotilla_bin: Path, tmp_path: Path, request: pytest.FixtureRequest):
    """Starts services with extra serve flags; stops them after the test
    (printing their logs when the test failed)."""
    started: List[Service] = []

    def start(*args: str, listen: str = "127.0.0.1:0") -> Service:
        d = tmp_path / ("svc%d" % len(started))
        d.mkdir()
        s = Service(flotilla_bin, d, list(args), listen)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for s in started:
            print(s.logs())


@pytest.fixture
def service(start_service) -> Service:
    return start_service()


@pytest.fixture
def postgres_url() -> str:
    """A fresh schema on the test PostgreSQL server ($FLOTILLA_POSTGRES_URL,
    which scripts/test and run-tests set), dropped after the test. Without
    a server the test is skipped, except under CI=true, where it fails."""
    base = os.environ.get("FLOTILLA_POSTGRES_URL")
    if not base:
        if os.environ.get("CI") == "true":
            pytest.fail("FLOTILLA_POSTGRES_URL is not set under CI=true: run clients/python/run-tests or scripts/test")
        pytest.skip("FLOTILLA_POSTGRES_URL is not set: run clients/python/run-tests or scripts/test")
    psql = shutil.which("psql") or next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"), reverse=True)), None)
    if psql is None:
        pytest.fail("no psql to create a schema on %s" % base)
    schema = "flotilla_py_" + os.urandom(6).hex()
    subprocess.run([str(psql), base, "-qc", "CREATE SCHEMA " + schema], check=True)
    yield base + ("&" if "?" in base else "?") + "search_path=" + schema
    subprocess.run([str(psql), base, "-qc", "DROP SCHEMA %s CASCADE" % schema], check=False)


def free_loopback_address() -> str:
    """A loopback address no one listens on, its port outside the kernel's
    ephemeral range: a server restarted there will not find the port taken
    by the local end of some connection made while it was away."""
    lo, hi = 32768, 60999
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        pass
    if lo > 12000:
        ports = range(10000, lo)
    elif hi < 63000:
        ports = range(hi + 1, 65536)
    else:
        ports = range(20000, 40000)
    for _ in range(100):
        port = random.choice(ports)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        return "127.0.0.1:%d" % port
    raise AssertionError("no free loopback port found")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
