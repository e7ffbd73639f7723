"""watch() resumes after dropped connections: every event once, in order.

A TCP proxy on loopback stands between the client and a real serve and
cuts each connection after a set number of bytes from the server, at
offsets that fall inside event lines and HTTP chunks, while a fake
executor runs the jobs: the watch must reconnect from the last seq + 1,
discard the line cut short, and deliver exactly the stored log.
"""

from __future__ import annotations

import socket
import threading
from typing import List, Optional

import flotilla
from conftest import EVENT_TIMEOUT, NODES
from test_service import by_job


class CuttingProxy:
    """Forwards connections to target; the n-th connection is cut after
    budgets[n] bytes from the server (later ones are not cut)."""

    def __init__(self, target: str, budgets: List[int]) -> None:
        host, port = target.split("//")[1].split(":")
        self.target = (host, int(port))
        self.budgets = list(budgets)
        self.cuts: List[bytes] = []  # per cut, the last bytes the client got
        self._lock = threading.Lock()
        self._n = 0
        self._ls = socket.socket()
        self._ls.bind(("127.0.0.1", 0))
        self._ls.listen(16)
        self.url = "http://127.0.0.1:%d" % self._ls.getsockname()[1]
        self._socks: List[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._ls.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self._lock:
                budget = self.budgets[self._n] if self._n < len(self.budgets) else None
                self._n += 1
                self._socks += [client, server]
            threading.Thread(target=self._pump, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, budget), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, budget: Optional[int]) -> None:
        sent = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if budget is not None and len(sent) + len(data) >= budget:
                    part = data[:budget - len(sent)]
                    dst.sendall(part)
                    with self._lock:
                        self.cuts.append((sent + part)[-40:])
                    break
                dst.sendall(data)
                if budget is not None:
                    sent += data
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._ls.close()
        with self._lock:
            for s in self._socks:
                try:
                    s.close()
                except OSError:
                    pass


def test_watch_resumes_after_dropped_connections_seeing_every_event_once_in_order(service):
    c = service.client()
    c.create_queue("A")
    service.executor("c1", NODES)
    # Odd budgets: cuts inside the response headers' end, chunk framing and
    # event lines; the first connection gets its headers and a few events.
    budgets = [600 + 233 * k for k in range(10)]
    proxy = CuttingProxy(service.url, budgets)
    try:
        first = c.submit("A", "s1", [{"count": 6, "requests": {"cpu": "1"}, "runtime": "200ms"}])
        w = flotilla.Client(proxy.url).watch("A", "s1", timeout=EVENT_TIMEOUT, retry_delay=0.05)
        got: List[flotilla.Event] = []
        later: List[str] = []
        for e in w:
            got.append(e)
            if not later and len(got) >= 8:
                # More jobs while the watch is being cut: live events too.
                later = c.submit("A", "s1", [{"count": 6, "requests": {"cpu": "1"}, "runtime": "200ms"}])
            done = [x.job for x in got if x.type == "succeeded"]
            if later and len(done) == len(first) + len(later):
                break
        w.close()
    finally:
        proxy.close()

    assert [e.seq for e in got] == list(range(1, len(got) + 1)), "a gap or a repeat"
    assert got == c.events("A", "s1")
    assert by_job(got) == {j: ["submitted", "leased", "running", "succeeded"] for j in first + later}
    # The log is about 8 kB: most budgets are used up. Each cut costs one
    # reconnection (the last may come after the last event).
    assert len(proxy.cuts) >= 5
    assert w.reconnects >= len(proxy.cuts) - 1
    # Some cuts fell inside a line: the watch dropped the partial line.
    assert any(not cut.endswith(b"\n") and not cut.endswith(b"\r\n") for cut in proxy.cuts)


def test_watch_resumes_across_a_restart_of_serve_on_postgresql(start_service, postgres_url):
    # serve closes its streams on SIGTERM and is away until it is started
    # again on the same address and database: the watch reconnects, waits
    # while nothing listens, and reads on from the last seq + 1, events
    # stored before and after the restart alike.
    from conftest import free_loopback_address

    svc = start_service("-db", postgres_url, "-leader-ttl", "2s", listen=free_loopback_address())
    c = svc.client()
    c.create_queue("A")
    svc.executor("c1", NODES)
    ids = c.submit("A", "s1", [{"count": 4, "requests": {"cpu": "1"}, "runtime": "1s"}])
    w = c.watch("A", "s1", timeout=EVENT_TIMEOUT, retries=20, retry_delay=0.05)
    got: List[flotilla.Event] = []
    for e in w:
        got.append(e)
        if e.type == "running":
            break  # restart while the jobs run
    svc.restart()
    more = c.submit("A", "s1", [{"count": 2, "requests": {"cpu": "1"}, "runtime": "200ms"}])
    for e in w:
        got.append(e)
        if len([x for x in got if x.type == "succeeded"]) == len(ids) + len(more):
            break
    w.close()

    assert [e.seq for e in got] == list(range(1, len(got) + 1)), "a gap or a repeat"
    assert got == c.events("A", "s1")
    assert by_job(got) == {j: ["submitted", "leased", "running", "succeeded"] for j in ids + more}
    assert w.reconnects >= 1
