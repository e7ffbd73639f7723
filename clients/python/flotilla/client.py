"""The client of Flotilla's HTTP API (httpapi/openapi.json).

One :class:`Client` per service; it holds no connection between calls
(each call opens one and closes it), so it is safe to share between
threads. A :class:`Watch` is one caller's iterator and is not.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import time
import urllib.parse
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union

from .errors import APIError, NeverFitsWarning, TransportError, UnavailableError, error_from_response
from .types import (
    CancelResult,
    Cluster,
    Event,
    Group,
    JobStatus,
    JobTemplate,
    PreemptResult,
    Queue,
    ReprioritizeResult,
    SubmitResult,
)

__all__ = ["Client", "Watch", "DEFAULT_SERVER"]

#: The server used when neither the argument nor $FLOTILLA_SERVER names one.
DEFAULT_SERVER = "http://127.0.0.1:8080"

# _SAME: a read timeout left as the client's.
_SAME = object()

PathLike = Union[str, "os.PathLike[str]"]
Ids = Union[str, Iterable[str]]


def _ids(ids: Optional[Ids]) -> List[str]:
    if ids is None:
        return []
    if isinstance(ids, str):
        return [ids]
    return list(ids)


class _Base:
    """One server of the service: scheme, host, port and path prefix."""

    def __init__(self, url: str) -> None:
        u = urllib.parse.urlsplit(url.strip().rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("server URL %r: want http://host:port or https://host:port" % url)
        self.url = url.strip().rstrip("/")
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port
        self.prefix = u.path


class Client:
    """Calls a Flotilla service.

    Args:
        server: the service's URL (http://127.0.0.1:8080), or several
            comma-separated (the servers of one highly available service: a
            call goes to the next when one cannot be reached). Default:
            $FLOTILLA_SERVER, else http://127.0.0.1:8080.
        token: bearer token. Default: $FLOTILLA_TOKEN, else none.
        timeout: seconds a call may wait to connect and for each read.
        ssl_context: for https, the TLS context (default: the system's).

    Refusals raise :class:`flotilla.APIError` subclasses carrying the
    server's field and value; an unreachable service raises
    :class:`flotilla.TransportError`.
    """

    def __init__(self, server: Optional[str] = None, token: Optional[str] = None, *,
                 timeout: float = 30.0, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        if server is None:
            server = os.environ.get("FLOTILLA_SERVER") or DEFAULT_SERVER
        if token is None:
            token = os.environ.get("FLOTILLA_TOKEN") or None
        self._bases = [_Base(s) for s in server.split(",") if s.strip()]
        if not self._bases:
            raise ValueError("server URL %r: names no server" % server)
        self._cur = 0
        self.token = token
        self.timeout = timeout
        self._ssl = ssl_context

    @property
    def server(self) -> str:
        """The server calls go to first."""
        return self._bases[self._cur % len(self._bases)].url

    # -- transport -------------------------------------------------------

    def _connect(self, base: _Base, timeout: Optional[float]) -> http.client.HTTPConnection:
        if base.https:
            return http.client.HTTPSConnection(base.host, base.port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(base.host, base.port, timeout=timeout)

    def _open(self, method: str, path: str, query: Optional[Sequence[Tuple[str, str]]] = None,
              body: Optional[bytes] = None,
              read_timeout: Any = _SAME) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Sends a request and returns the connection and a 2xx response;
        raises the refusal as an APIError. A server that cannot be connected
        to is skipped for the next (the request was not sent). read_timeout
        bounds each read of a 2xx response's body (None: no bound; by
        default the client's timeout)."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        qs = "?" + urllib.parse.urlencode(list(query)) if query else ""
        last: Optional[BaseException] = None
        for _ in range(len(self._bases)):
            i = self._cur
            base = self._bases[i % len(self._bases)]
            conn = self._connect(base, self.timeout)
            try:
                conn.connect()
            except OSError as e:
                conn.close()
                last = e
                if self._cur == i:
                    self._cur = i + 1
                continue
            try:
                conn.request(method, base.prefix + path + qs, body=body, headers=headers)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                # The request may have reached the server: not sent again,
                # but the next call goes to the next server.
                if self._cur == i:
                    self._cur = i + 1
                raise TransportError("%s %s%s: %s" % (method, base.url, path, e)) from e
            if 200 <= resp.status < 300:
                if read_timeout is not _SAME and conn.sock is not None:
                    conn.sock.settimeout(read_timeout)
                return conn, resp
            try:
                data = resp.read(1 << 20)
            except (OSError, http.client.HTTPException):
                data = b""
            finally:
                conn.close()
            raise error_from_response(resp.status, data, resp.getheader("Retry-After"))
        raise TransportError("%s %s: cannot connect to %s: %s" % (
            method, path, ", ".join(b.url for b in self._bases), last)) from last

    def _call(self, method: str, path: str, query: Optional[Sequence[Tuple[str, str]]] = None,
              body: Any = None) -> Any:
        """Sends a request with a JSON body (bytes pass as they are) and
        returns the decoded JSON answer (None for an empty one)."""
        data: Optional[bytes]
        if body is None or isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body).encode("utf-8")
        conn, resp = self._open(method, path, query, data)
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError("%s %s: reading the answer: %s" % (method, path, e)) from e
        finally:
            conn.close()
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise TransportError("%s %s: the answer is not JSON: %r" % (method, path, raw[:200])) from e

    # -- queues and groups ----------------------------------------------

    def queues(self) -> List[Queue]:
        """Every queue the token may read, with its status, by name."""
        return [Queue.from_dict(q) for q in self._call("GET", "/v1/queues") or []]

    def queue(self, name: str) -> Queue:
        """One queue with its status (NotFoundError when there is none)."""
        return Queue.from_dict(self._call("GET", "/v1/queues/" + _seg(name)))

    def create_queue(self, queue: Union[Queue, str], **fields: Any) -> Queue:
        """Creates a queue (admin): a Queue, or a name and Queue's fields
        (parent=, guaranteed=, limit=, lending_limit=, priority_factor=, ...).
        ConflictError when the name is taken; BadRequestError, naming the
        field and value, when the queue tree would become invalid."""
        q = _definition(Queue, queue, fields)
        return Queue.from_dict(self._call("POST", "/v1/queues", body=_writable(q)))

    def update_queue(self, queue: Union[Queue, str], **fields: Any) -> Queue:
        """Replaces a queue's definition (admin): fields left out are unset."""
        q = _definition(Queue, queue, fields)
        return Queue.from_dict(self._call("PUT", "/v1/queues/" + _seg(q.name), body=_writable(q)))

    def delete_queue(self, name: str) -> None:
        """Deletes a queue without unfinished jobs (admin); ConflictError otherwise."""
        self._call("DELETE", "/v1/queues/" + _seg(name))

    def cordon_queue(self, name: str) -> None:
        """Cordons a queue (admin): its queued jobs are not leased."""
        self._call("POST", "/v1/queues/" + _seg(name) + "/cordon")

    def uncordon_queue(self, name: str) -> None:
        """Undoes cordon_queue (admin)."""
        self._call("POST", "/v1/queues/" + _seg(name) + "/uncordon")

    def groups(self) -> List[Group]:
        """Every group of the queue tree, with its status, by name."""
        return [Group.from_dict(g) for g in self._call("GET", "/v1/groups") or []]

    def group(self, name: str) -> Group:
        """One group with its status (NotFoundError when there is none)."""
        return Group.from_dict(self._call("GET", "/v1/groups/" + _seg(name)))

    def create_group(self, group: Union[Group, str], **fields: Any) -> Group:
        """Creates a group (admin): a Group, or a name and Group's fields."""
        g = _definition(Group, group, fields)
        return Group.from_dict(self._call("POST", "/v1/groups", body=_writable(g)))

    def update_group(self, group: Union[Group, str], **fields: Any) -> Group:
        """Replaces a group's definition (admin): fields left out are unset."""
        g = _definition(Group, group, fields)
        return Group.from_dict(self._call("PUT", "/v1/groups/" + _seg(g.name), body=_writable(g)))

    def delete_group(self, name: str) -> None:
        """Deletes a group no queue or group hangs from (admin)."""
        self._call("DELETE", "/v1/groups/" + _seg(name))

    # -- clusters --------------------------------------------------------

    def clusters(self) -> List[Cluster]:
        """The clusters, by name."""
        return [Cluster.from_dict(c) for c in self._call("GET", "/v1/clusters") or []]

    def cordon_cluster(self, name: str) -> None:
        """Cordons a cluster (admin): no new leases go to it."""
        self._call("POST", "/v1/clusters/" + _seg(name) + "/cordon")

    def uncordon_cluster(self, name: str) -> None:
        """Undoes cordon_cluster (admin)."""
        self._call("POST", "/v1/clusters/" + _seg(name) + "/uncordon")

    # -- jobs ------------------------------------------------------------

    def submit(self, queue: str, job_set: str,
               jobs: Iterable[Union[JobTemplate, Mapping[str, Any]]]) -> SubmitResult:
        """Submits job templates (JobTemplate or dicts of the submit file's
        form) to a queue's job set, once the jobs and their submitted events
        are stored. Bad input is refused whole (BadRequestError, every
        problem with its field and value).

        Returns the job ids in order: a SubmitResult, which is a list of
        them, with ``.warnings``: a SubmitWarning for each template whose
        jobs no node the service knows can run (they are stored all the
        same, and wait for a large enough node), with the template's
        job_ids. Each such warning is also issued as a NeverFitsWarning
        (:mod:`warnings`; shown by default). An answer not of the API's
        form raises AnswerError, naming the field and value."""
        templates = [j.to_dict() if isinstance(j, JobTemplate) else dict(j) for j in jobs]
        doc = {"queue": queue, "jobSet": job_set, "jobs": templates}
        return _submitted(self._call("POST", "/v1/jobs", body=doc), templates)

    def submit_file(self, file: Union[PathLike, Mapping[str, Any], bytes]) -> SubmitResult:
        """Submits a submit file: a path to one, its JSON as
        bytes, or its dict. A file's bytes go to the server as they are, so
        the fields of a refusal are those of the file. Returns what
        submit does (the ids, and warnings also issued as NeverFitsWarning)."""
        if isinstance(file, bytes):
            body = file
        elif isinstance(file, Mapping):
            body = json.dumps(file).encode("utf-8")
        else:
            with open(file, "rb") as f:
                body = f.read()
        answer = self._call("POST", "/v1/jobs", body=body)
        try:
            templates = json.loads(body).get("jobs")
        except (ValueError, AttributeError):
            templates = None  # not a JSON object (which the service refuses): no warning gets ids
        return _submitted(answer, templates)

    def status(self, ids: Ids, *, explain: bool = False) -> List[JobStatus]:
        """The status of each job, in the order asked; with explain, each
        status's long form (as `flotilla status -v`)."""
        query = [("id", i) for i in _ids(ids)]
        if explain:
            query.append(("explain", "true"))
        out = self._call("GET", "/v1/jobs", query=query) or {}
        return [JobStatus.from_dict(s) for s in out.get("jobs") or []]

    def cancel(self, ids: Optional[Ids] = None, *, queue: Optional[str] = None,
               job_set: Optional[str] = None) -> CancelResult:
        """Cancels jobs by id; or a job set (queue and job_set); or every
        job of a queue (queue alone). Queued jobs end at once; leased and
        running ones are asked to stop (cancel-requested)."""
        body = _selection(ids, queue, job_set)
        return CancelResult.from_dict(self._call("POST", "/v1/jobs/cancel", body=body) or {})

    def reprioritize(self, priority: int, ids: Optional[Ids] = None, *, queue: Optional[str] = None,
                     job_set: Optional[str] = None) -> ReprioritizeResult:
        """Gives queued jobs (by id, or a queue's job set) a new priority
        (lower runs first within a class); leased and running jobs are left
        alone and reported as live."""
        body = _selection(ids, queue, job_set)
        body["priority"] = priority
        return ReprioritizeResult.from_dict(self._call("POST", "/v1/jobs/reprioritize", body=body) or {})

    def preempt(self, ids: Optional[Ids] = None, *, queue: Optional[str] = None,
                job_set: Optional[str] = None, cluster: Optional[str] = None,
                node: Optional[str] = None, reason: Optional[str] = None) -> PreemptResult:
        """Preempts leased or running jobs as a cycle would: by id, a
        queue (and job set), or a cluster (and node; admin). reason is kept
        on the events."""
        body = _selection(ids, queue, job_set)
        for k, v in (("cluster", cluster), ("node", node), ("reason", reason)):
            if v is not None:
                body[k] = v
        return PreemptResult.from_dict(self._call("POST", "/v1/jobs/preempt", body=body) or {})

    # -- events ----------------------------------------------------------

    def events(self, queue: str, job_set: str, from_seq: int = 0,
               limit: Optional[int] = None) -> List[Event]:
        """A job set's stored events from sequence number from_seq (0 and
        1: the first), at most limit of them; a connection that drops
        midway is read on from the last event's seq + 1."""
        return list(Watch(self, queue, job_set, from_seq, follow=False, limit=limit))

    def watch(self, queue: str, job_set: str, from_seq: int = 0, *, until_done: bool = False,
              timeout: Optional[float] = None, retries: int = 10, retry_delay: float = 0.2) -> "Watch":
        """Iterates over a job set's events from from_seq, then each new one
        as it is stored. See :class:`Watch`."""
        return Watch(self, queue, job_set, from_seq, follow=True, until_done=until_done,
                     timeout=timeout, retries=retries, retry_delay=retry_delay)


class Watch(Iterator[Event]):
    """An iterator over a job set's events that survives dropped connections.

    It reads the event stream (JSON lines) from from_seq; when the
    connection drops or the server ends the stream, it connects again
    asking for next_seq (the last event's seq + 1), so it sees every event
    once, in order, with no gap: the service's promise to watchers (docs/job-lifecycle.md). A line
    cut short by a drop is discarded and read again after reconnecting.

    A refusal (APIError) ends the iteration with that error, but for 503
    (too many streams, storage unavailable), which is waited out as the
    server's Retry-After says. Reconnecting gives up after ``retries``
    failures in a row with no event between them (the last error is
    raised), waiting retry_delay, doubled each time (at most 5 s).

    With until_done, the iteration stops once every job that existed in
    the set when the watch started has ended (as `flotilla watch
    -until-done`). With timeout, TimeoutError is raised when no event
    arrives for that many seconds; a new watch from next_seq resumes.

    Attributes:
        next_seq: the sequence number the next event will have.
        reconnects: how many times the stream was opened again.
    """

    def __init__(self, client: Client, queue: str, job_set: str, from_seq: int = 0, *,
                 follow: bool = True, limit: Optional[int] = None, until_done: bool = False,
                 timeout: Optional[float] = None, retries: int = 10, retry_delay: float = 0.2) -> None:
        if from_seq < 0:
            raise ValueError("from_seq %d: want a sequence number >= 0" % from_seq)
        self._client = client
        self.queue = queue
        self.job_set = job_set
        self.next_seq = max(from_seq, 1)
        self._yield_from = self.next_seq
        self._follow = follow
        self._left = limit if limit and limit > 0 else None
        self._timeout = timeout
        self._retries = retries
        self._retry_delay = retry_delay
        self._conn: Optional[http.client.HTTPConnection] = None
        self._resp: Optional[http.client.HTTPResponse] = None
        self._failures = 0
        self._done = False
        self.reconnects = 0
        self._opened = 0
        # until_done: the jobs not yet ended, and the seq from which the
        # stream's events update them (the log's end when the watch began).
        self._waiting: Optional[Set[str]] = None
        self._track_from = 0
        self._backlog: List[Event] = []
        if until_done:
            self._start_until_done()

    def _start_until_done(self) -> None:
        stored = self._client.events(self.queue, self.job_set)
        ended: Dict[str, bool] = {}
        for e in stored:
            ended[e.job] = e.ends_job
        self._waiting = {j for j, done in ended.items() if not done}
        self._track_from = stored[-1].seq + 1 if stored else 1
        if not self._waiting:
            # Done already: the stored events from from_seq, then the end.
            self._backlog = [e for e in stored if e.seq >= self._yield_from]
            self._backlog.reverse()
            self._done = True
            return
        # Start no later than the log's end, so every later event is seen.
        self.next_seq = min(self.next_seq, self._track_from)

    def __iter__(self) -> "Watch":
        return self

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection; the iteration ends."""
        self._done = True
        self._drop_connection()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = self._resp = None

    def _open(self) -> None:
        query = [("from", str(self.next_seq))]
        if self._follow:
            query.append(("watch", "true"))
        elif self._left is not None:
            query.append(("limit", str(self._left)))
        path = "/v1/queues/%s/jobsets/%s/events" % (_seg(self.queue), _seg(self.job_set))
        while True:
            try:
                self._conn, self._resp = self._client._open(
                    "GET", path, query, read_timeout=self._timeout if self._follow else _SAME)
                if self._opened:
                    self.reconnects += 1
                self._opened += 1
                return
            except UnavailableError as e:
                self._failed(e, e.retry_after)
            except TransportError as e:
                self._failed(e, None)
            except APIError:
                self._done = True
                raise

    def _failed(self, err: Exception, wait: Optional[float]) -> None:
        """Counts a failure to get events; raises err past the retries,
        else waits before the next try (the first retry goes at once)."""
        self._failures += 1
        if self._failures > self._retries:
            self._done = True
            raise err
        if wait is None:
            wait = 0.0 if self._failures == 1 else min(self._retry_delay * 2 ** (self._failures - 2), 5.0)
        if wait > 0:
            time.sleep(wait)

    def __next__(self) -> Event:
        while True:
            if self._backlog:
                return self._backlog.pop()
            if self._done:
                raise StopIteration
            if self._resp is None:
                self._open()
            assert self._resp is not None
            try:
                line = self._resp.readline()
            except socket.timeout:
                self.close()
                raise TimeoutError("no event of %s/%s for %s s (resume from seq %d)" % (
                    self.queue, self.job_set, self._timeout, self.next_seq)) from None
            except (OSError, http.client.HTTPException) as e:
                self._drop_connection()
                self._failed(TransportError("event stream of %s/%s: %s" % (self.queue, self.job_set, e)), None)
                continue
            if not line.endswith(b"\n"):
                # The end of the stream, or a line cut short by a drop.
                self._drop_connection()
                if not line and not self._follow:
                    self._done = True
                    raise StopIteration
                self._failed(TransportError("event stream of %s/%s ended at seq %d" % (
                    self.queue, self.job_set, self.next_seq)), None)
                continue
            if not line.strip():
                continue
            try:
                e = Event.from_dict(json.loads(line))
            except (ValueError, TypeError) as err:
                self.close()
                raise TransportError("event stream of %s/%s: a line that is no event: %r" % (
                    self.queue, self.job_set, line[:200])) from err
            if e.seq < self.next_seq:
                continue  # seen already (never expected: the server resumes at from)
            self.next_seq = e.seq + 1
            self._failures = 0
            if self._left is not None:
                self._left -= 1
                if self._left == 0:
                    self.close()
            if self._waiting is not None and e.seq >= self._track_from and e.ends_job:
                self._waiting.discard(e.job)
                if not self._waiting:
                    self.close()
            if e.seq >= self._yield_from:
                return e


def _submitted(answer: Any, templates: Any) -> SubmitResult:
    """The SubmitResult of a submission's answer, given the templates sent
    (for the warnings' job ids); it issues each warning as a
    NeverFitsWarning attributed to the caller of submit or submit_file."""
    res = SubmitResult.from_dict(answer, _counts(templates))
    for w in res.warnings:
        warnings.warn(NeverFitsWarning(w), stacklevel=3)
    return res


def _counts(templates: Any) -> Optional[List[int]]:
    """How many jobs each template makes (count, absent: 1), or None when
    the templates are not of the submit file's form."""
    if not isinstance(templates, list):
        return None
    out = []
    for t in templates:
        n = t.get("count", 1) if isinstance(t, Mapping) else None
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return None
        out.append(n)
    return out


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _selection(ids: Optional[Ids], queue: Optional[str], job_set: Optional[str]) -> Dict[str, Any]:
    body: Dict[str, Any] = {}
    if ids is not None:
        body["jobIds"] = _ids(ids)
    if queue is not None:
        body["queue"] = queue
    if job_set is not None:
        body["jobSet"] = job_set
    return body


def _definition(cls: Any, obj: Any, fields: Dict[str, Any]) -> Any:
    if isinstance(obj, str):
        return cls(name=obj, **fields)
    if fields:
        raise TypeError("give a %s or a name with fields, not both" % cls.__name__)
    return obj


def _writable(obj: Any) -> Dict[str, Any]:
    d = obj.to_dict()
    d.pop("status", None)  # read only
    return d
