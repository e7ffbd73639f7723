"""The client's parts without a service: JSON forms, errors, and the
watch's handling of streams a real serve does not produce (no chunked
encoding, a 503 before the stream)."""

from __future__ import annotations

import datetime
import json
import re
import socket
import threading
import warnings
from typing import Any, Callable, List

import pytest

import flotilla
from flotilla.errors import error_from_response


def event_line(seq: int) -> bytes:
    return (json.dumps({"seq": seq, "time": "2026-11-22T10:00:03.120Z", "queue": "A", "jobSet": "s1",
                        "job": "j%d" % seq, "type": "submitted"}) + "\n").encode()


class FakeServer:
    """Answers each connection with answer(request line) and closes it,
    having read the request's body (kept in bodies)."""

    def __init__(self, answer: Callable[[str], bytes]) -> None:
        self.requests: List[str] = []
        self.bodies: List[bytes] = []
        self._answer = answer
        self._ls = socket.socket()
        self._ls.bind(("127.0.0.1", 0))
        self._ls.listen(8)
        self.url = "http://127.0.0.1:%d" % self._ls.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._ls.accept()
            except OSError:
                return
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(4096)
                    if not data:
                        break
                    head += data
                line = head.split(b"\r\n", 1)[0].decode()
                m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
                body = head.split(b"\r\n\r\n", 1)[-1]
                while m and len(body) < int(m.group(1)):
                    data = conn.recv(65536)
                    if not data:
                        break
                    body += data
                self.requests.append(line)
                self.bodies.append(body)
                conn.sendall(self._answer(line))

    def close(self) -> None:
        self._ls.close()


STREAM_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n"


def test_watch_discards_a_line_cut_short_and_resumes_from_the_last_seq_plus_one():
    # A stream without chunked encoding (as through an HTTP/1.0 proxy): a
    # drop shows as an end of data in the middle of a line.
    def answer(req: str) -> bytes:
        if "from=1&" in req:
            return STREAM_HEAD + event_line(1) + event_line(2) + event_line(3)[:25]
        if "from=3&" in req:
            return STREAM_HEAD + event_line(3) + event_line(4)
        return b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"

    srv = FakeServer(answer)
    try:
        w = flotilla.Client(srv.url).watch("A", "s1", timeout=10, retry_delay=0.01)
        got = [next(w).seq for _ in range(4)]
        w.close()
    finally:
        srv.close()
    assert got == [1, 2, 3, 4]
    assert [r.split("?")[1].split()[0] for r in srv.requests[:2]] == ["from=1&watch=true", "from=3&watch=true"]
    assert w.reconnects == 1 and w.next_seq == 5


def test_watch_waits_out_a_503_and_gives_up_after_its_retries():
    calls = []

    def answer(req: str) -> bytes:
        calls.append(req)
        if len(calls) == 1:
            body = b'{"error":"the service serves 512 event streams, the most it serves at once; retry later"}'
            return (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: %d\r\n\r\n"
                    % len(body)) + body
        return STREAM_HEAD + event_line(1)

    srv = FakeServer(answer)
    try:
        w = flotilla.Client(srv.url).watch("A", "s1", timeout=10, retries=3, retry_delay=0.01)
        assert next(w).seq == 1
        # Then the stream ends each time with no event: three more tries, then the error.
        with pytest.raises(flotilla.TransportError):
            next(w)
    finally:
        srv.close()
    assert len(calls) == 1 + 1 + 3


def test_a_refusal_ends_the_watch_with_its_error():
    body = b'{"error":"queue \\"Z\\": not found","problems":[{"field":"queue","value":"Z","error":"not found"}]}'
    srv = FakeServer(lambda req: b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    try:
        with pytest.raises(flotilla.NotFoundError) as err:
            list(flotilla.Client(srv.url).watch("Z", "s1"))
    finally:
        srv.close()
    assert (err.value.field, err.value.value) == ("queue", "Z")
    assert len(srv.requests) == 1


@pytest.mark.parametrize("status,cls", [
    (400, flotilla.BadRequestError), (401, flotilla.UnauthorizedError), (403, flotilla.ForbiddenError),
    (404, flotilla.NotFoundError), (409, flotilla.ConflictError), (413, flotilla.TooLargeError),
    (503, flotilla.UnavailableError), (500, flotilla.APIError),
])
def test_each_status_has_its_error_class(status, cls):
    e = error_from_response(status, b'{"error":"x","problems":[{"field":"f","value":"v","error":"bad"}]}', "2")
    assert type(e) is cls
    assert (e.status, e.message, e.field, e.value, e.retry_after) == (status, "x", "f", "v", 2.0)


def test_an_error_body_that_is_not_the_api_form_is_the_message():
    e = error_from_response(502, b"<html>bad gateway</html>\n")
    assert (e.message, e.problems, e.field, e.value, e.retry_after) == ("<html>bad gateway</html>", [], None, None, None)


def test_json_forms_use_the_api_names_and_keep_unknown_fields():
    t = flotilla.JobTemplate(count=2, requests={"cpu": 1, "memory": "4Gi"}, priority_class="armada-default",
                             termination_grace_period=datetime.timedelta(seconds=1.5), client_id="c",
                             gang=flotilla.Gang("g", 2, node_uniformity_label="zone"), exit_code=0,
                             pools=["a100", "h100"], extra={"sidecar": {"image": "x"}})
    assert t.to_dict() == {
        "count": 2, "requests": {"cpu": "1", "memory": "4Gi"}, "priorityClass": "armada-default",
        "terminationGracePeriod": "1500000us", "clientId": "c",
        "gang": {"id": "g", "cardinality": 2, "nodeUniformityLabel": "zone"}, "exitCode": 0,
        "pools": ["a100", "h100"], "sidecar": {"image": "x"}}
    assert "pools" not in flotilla.JobTemplate(count=1).to_dict(), "no pools: every pool"
    doc = {"name": "q", "parent": "g", "lendingLimit": {"cpu": "1"}, "retryPolicy": {"maxAttempts": 5},
           "sidecar": {"image": "x"}, "status": {"queued": 3, "adjustedFairShare": 0.5, "cordoned": True}}
    q = flotilla.Queue.from_dict(doc)
    assert (q.lending_limit, q.retry_policy, q.status.queued, q.status.adjusted_fair_share, q.status.cordoned) == (
        {"cpu": "1"}, {"maxAttempts": 5}, 3, 0.5, True)
    assert q.extra == {"sidecar": {"image": "x"}}, "a field the client does not know is kept"
    back = q.to_dict()
    back["status"] = {k: v for k, v in back["status"].items() if k in doc["status"]}
    assert back == doc


def test_clusters_name_their_pool_and_statuses_have_per_pool_shares():
    cl = flotilla.Cluster.from_dict({"name": "c1", "nodes": 2, "alive": True, "cordoned": False, "pool": "a100",
                                     "leased": 0, "running": 1})
    assert (cl.name, cl.pool, cl.extra) == ("c1", "a100", {})
    share = {"pool": "h100", "share": 0.25, "fairShare": 0.5, "adjustedFairShare": 0.5, "demand": 0.75,
             "running": 1, "queued": 2}
    st = flotilla.QueueStatus.from_dict({"queued": 2, "share": 1, "pools": [
        {"pool": "a100", "share": 1, "fairShare": 1, "adjustedFairShare": 1, "demand": 1, "running": 4, "queued": 0},
        share]})
    assert [p.pool for p in st.pools] == ["a100", "h100"]
    assert isinstance(st.pools[1], flotilla.PoolShare)
    assert (st.pools[1].share, st.pools[1].fair_share, st.pools[1].adjusted_fair_share, st.pools[1].demand,
            st.pools[1].running, st.pools[1].queued) == (0.25, 0.5, 0.5, 0.75, 1, 2)
    assert st.to_dict()["pools"][1] == share
    g = flotilla.GroupStatus.from_dict({"share": 0.5, "pools": [share]})
    assert g.pools == [flotilla.PoolShare.from_dict(share)]
    assert flotilla.QueueStatus.from_dict({"queued": 1}).pools is None, "one pool: no per-pool lines"
    nf = flotilla.QueueStatus.from_dict({"queued": 3, "neverFit": 2})
    assert (nf.never_fit, nf.extra) == (2, {}), "jobs no node can run are counted apart"


def test_an_event_tells_whether_its_job_ended_and_its_time():
    def ev(type: str, requeued: bool = False) -> flotilla.Event:
        return flotilla.Event(1, "2026-11-22T10:00:03.123456789Z", "A", "s", "j", type, requeued=requeued)

    ended = {t for t in flotilla.EVENT_TYPES if ev(t).ends_job}
    assert ended == {"succeeded", "failed", "cancelled", "preempted", "lease-expired", "lease-returned"}
    assert not any(ev(t, requeued=True).ends_job for t in ("preempted", "lease-expired", "lease-returned"))
    assert ev("leased").timestamp == datetime.datetime(2026, 11, 22, 10, 0, 3, 123456, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("url", ["ftp://h:1", "127.0.0.1:8080", "http://", ""])
def test_a_server_url_that_is_not_http_is_refused(url):
    with pytest.raises(ValueError):
        flotilla.Client(url)


def json_answer(doc: Any) -> Callable[[str], bytes]:
    body = json.dumps(doc).encode()
    return lambda req: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body), body)


# The service's answer to a submission of three templates (count 2, count 3
# and one job) of which the second asks more cpu than any node has and the
# third accepts only a pool with no known node (the server's message forms).
NEVER_FITS = {"jobIds": ["j1", "j2", "j3", "j4", "j5", "j6"], "warnings": [
    {"field": "jobs[1]", "resource": "cpu", "node": "c1/node-0",
     "message": "jobs[1]: requests cpu=64 but the largest node (c1/node-0) has 8: no node of any cluster fits it yet"},
    {"field": "jobs[2]",
     "message": "jobs[2]: no node of pool h100 is known: its jobs wait until a cluster of its pools reports nodes"}]}
TEMPLATES = [{"count": 2, "requests": {"cpu": "1"}}, flotilla.JobTemplate(count=3, requests={"cpu": "64"}),
             {"requests": {"cpu": "1"}, "pools": ["h100"]}]


def test_submit_returns_the_ids_as_a_list_with_each_warning_and_its_templates_jobs():
    srv = FakeServer(json_answer(NEVER_FITS))
    try:
        with pytest.warns(flotilla.NeverFitsWarning) as issued:
            ids = flotilla.Client(srv.url).submit("A", "s1", TEMPLATES)
    finally:
        srv.close()
    # The ids work as the list they were before the warnings.
    assert ids == ["j1", "j2", "j3", "j4", "j5", "j6"] and isinstance(ids, list)
    assert (ids[0], len(ids), list(ids), ids.job_ids, json.dumps(ids)) == (
        "j1", 6, NEVER_FITS["jobIds"], NEVER_FITS["jobIds"], json.dumps(NEVER_FITS["jobIds"]))
    assert ids.warnings == [
        flotilla.SubmitWarning(field="jobs[1]", resource="cpu", node="c1/node-0",
                               message=NEVER_FITS["warnings"][0]["message"], job_ids=["j3", "j4", "j5"]),
        flotilla.SubmitWarning(field="jobs[2]", message=NEVER_FITS["warnings"][1]["message"], job_ids=["j6"])]
    assert [w.template for w in ids.warnings] == [1, 2]
    assert [w.to_dict() for w in ids.warnings] == NEVER_FITS["warnings"], "to_dict is the API's form"
    # One Python warning per template, at the caller's line, carrying the
    # SubmitWarning; its text names the jobs.
    assert [w.message.warning for w in issued] == ids.warnings
    assert [str(w.message) for w in issued] == [
        NEVER_FITS["warnings"][0]["message"] + " (jobs j3, j4, j5)",
        NEVER_FITS["warnings"][1]["message"] + " (job j6)"]
    assert {w.filename for w in issued} == {__file__}
    assert issubclass(flotilla.NeverFitsWarning, flotilla.FlotillaWarning)
    assert issubclass(flotilla.FlotillaWarning, UserWarning), "shown by default"
    assert json.loads(srv.bodies[0])["jobs"][1] == {"count": 3, "requests": {"cpu": "64"}}


def test_a_submission_without_warnings_returns_its_ids_and_warns_nothing():
    for answer in ({"jobIds": ["j1", "j2"]}, {"jobIds": ["j1", "j2"], "warnings": None},
                   {"jobIds": ["j1", "j2"], "warnings": []}):
        srv = FakeServer(json_answer(answer))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                ids = flotilla.Client(srv.url).submit("A", "s1", [{"count": 2, "requests": {"cpu": "1"}}])
        finally:
            srv.close()
        assert (ids, ids.warnings) == (["j1", "j2"], []), answer
        assert repr(ids) == "SubmitResult(['j1', 'j2'], warnings=[])"


def test_submit_file_gives_each_warning_the_jobs_of_its_template_by_the_files_counts(tmp_path):
    doc = {"queue": "A", "jobSet": "s1", "jobs": [{"count": 0, "requests": {"cpu": "1"}},
                                                  {"requests": {"cpu": "64"}}, {"count": 2, "requests": {"cpu": "1"}}]}
    f = tmp_path / "jobs.json"
    f.write_text(json.dumps(doc))
    w = {"field": "jobs[1]", "resource": "cpu", "node": "c1/n", "message": "jobs[1]: requests cpu=64 ..."}
    srv = FakeServer(json_answer({"jobIds": ["j1", "j2", "j3"], "warnings": [w]}))
    try:
        c = flotilla.Client(srv.url)
        for file in (f, str(f), doc, f.read_bytes()):
            with pytest.warns(flotilla.NeverFitsWarning):
                ids = c.submit_file(file)
            assert ids == ["j1", "j2", "j3"] and ids.warnings[0].job_ids == ["j1"], file
    finally:
        srv.close()


def test_a_warning_whose_jobs_cannot_be_told_has_no_job_ids():
    # The ids do not add up to the counts sent: no guess.
    srv = FakeServer(json_answer({"jobIds": ["j1"], "warnings": [NEVER_FITS["warnings"][0]]}))
    try:
        with pytest.warns(flotilla.NeverFitsWarning) as issued:
            ids = flotilla.Client(srv.url).submit("A", "s1", TEMPLATES)
    finally:
        srv.close()
    assert ids.warnings[0].job_ids == []
    assert str(issued[0].message) == NEVER_FITS["warnings"][0]["message"]


@pytest.mark.parametrize("answer,field,value", [
    ({"jobIds": "j1"}, "jobIds", "j1"),
    ({"jobIds": ["j1", 2]}, "jobIds", ["j1", 2]),
    ({"jobIds": ["j1"], "warnings": {"field": "jobs[0]"}}, "warnings", {"field": "jobs[0]"}),
    ({"jobIds": ["j1"], "warnings": ["jobs[0] too big"]}, "warnings[0]", "jobs[0] too big"),
    ({"jobIds": ["j1"], "warnings": [{"field": "jobs[0]"}]}, "warnings[0].message", None),
    ({"jobIds": ["j1"], "warnings": [{"field": "jobs[0]", "message": ""}]}, "warnings[0].message", ""),
    ({"jobIds": ["j1"], "warnings": [{"message": "m"}]}, "warnings[0].field", None),
    ({"jobIds": ["j1"], "warnings": [{"field": "template 0", "message": "m"}]}, "warnings[0].field", "template 0"),
    ({"jobIds": ["j1"], "warnings": [{"field": "jobs[01]", "message": "m"}]}, "warnings[0].field", "jobs[01]"),
    ({"jobIds": ["j1"], "warnings": [{"field": "jobs[0]", "message": "m"},
                                      {"field": "jobs[0]", "message": "m", "resource": 5}]},
     "warnings[1].resource", 5),
    ({"jobIds": ["j1"], "warnings": [{"field": "jobs[0]", "message": "m", "node": ["c1/n"]}]},
     "warnings[0].node", ["c1/n"]),
    ({"jobIds": ["j1"], "warnings": [{"field": "jobs[0]", "message": "m", "jobIds": "j1"}]},
     "warnings[0].jobIds", "j1"),
    (["j1"], "answer", ["j1"]),
])
def test_a_malformed_submit_answer_is_an_error_naming_the_field_and_value(answer, field, value):
    srv = FakeServer(json_answer(answer))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing is issued before the answer is read whole
            with pytest.raises(flotilla.AnswerError) as err:
                flotilla.Client(srv.url).submit("A", "s1", [{"requests": {"cpu": "1"}}])
    finally:
        srv.close()
    e = err.value
    assert (e.field, e.value) == (field, value)
    assert str(e).startswith("%s %r: want " % (field, value))
    assert isinstance(e, ValueError) and isinstance(e, flotilla.FlotillaError)
    # The jobs were stored: the error keeps their ids when it could read them.
    assert e.job_ids == (["j1"] if field.startswith("warnings") else [])
