"""The client against a real `flotilla serve` and fake executors on loopback."""

from __future__ import annotations

import json
import socket
from typing import Dict, List

import pytest

import flotilla
from conftest import EVENT_TIMEOUT, NODES


def by_job(events: List[flotilla.Event]) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for e in events:
        out.setdefault(e.job, []).append(e.type)
    return out


def wait_for(watch: flotilla.Watch, job: str, type: str) -> flotilla.Event:
    """Reads the watch until job's event of that type (the watch's timeout
    bounds the wait)."""
    for e in watch:
        if e.job == job and e.type == type:
            return e
    raise AssertionError("the watch ended before %s's %s event" % (job, type))


def test_submitted_jobs_are_leased_run_and_succeed_seen_through_watch(service):
    c = service.client()
    c.create_queue("A")
    service.executor("c1", NODES)
    ids = c.submit("A", "s1", [flotilla.JobTemplate(count=3, requests={"cpu": "1"}, runtime="300ms"),
                               {"requests": {"cpu": "2", "memory": "1Gi"}, "runtime": "200ms"}])
    assert len(ids) == 4 and len(set(ids)) == 4

    seen = list(c.watch("A", "s1", until_done=True, timeout=EVENT_TIMEOUT))

    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    assert by_job(seen) == {j: ["submitted", "leased", "running", "succeeded"] for j in ids}
    for e in seen:
        assert (e.queue, e.job_set) == ("A", "s1")
        if e.type != "submitted":
            assert e.cluster == "c1" and e.node and e.node.startswith("node-") and e.attempt == 1
    # The stored log is what the watch delivered.
    assert c.events("A", "s1") == seen
    assert c.events("A", "s1", from_seq=3, limit=2) == seen[2:4]
    statuses = c.status(ids)
    assert [s.job for s in statuses] == ids
    assert all(s.state == "succeeded" and s.attempts == 1 and s.terminal for s in statuses)


def test_watch_until_done_on_a_finished_set_returns_the_stored_events_and_ends(service):
    c = service.client()
    c.create_queue("A")
    ids = c.submit("A", "s1", [{"count": 2, "requests": {"cpu": "1"}}])
    c.cancel(ids)
    got = list(c.watch("A", "s1", from_seq=2, until_done=True, timeout=EVENT_TIMEOUT))
    assert [(e.seq, e.type) for e in got] == [(2, "submitted"), (3, "cancelled"), (4, "cancelled")]


def test_a_bad_submission_is_refused_whole_naming_each_field_and_value(service, tmp_path):
    c = service.client()
    c.create_queue("A")
    with pytest.raises(flotilla.BadRequestError) as err:
        c.submit("A", "s1", [{"requests": {"cpu": "1"}},
                             {"requests": {"cpu": "lots"}, "terminationGracePeriod": "0.5s"}])
    e = err.value
    assert e.status == 400
    assert [(p.field, p.value) for p in e.problems] == [
        ("jobs[1].requests.cpu", "lots"), ("jobs[1].terminationGracePeriod", "0.5s")]
    assert (e.field, e.value) == ("jobs[1].requests.cpu", "lots")
    assert "malformed" in e.problems[0].error
    assert isinstance(e, ValueError) and isinstance(e, flotilla.APIError)
    # Nothing was stored: no job, no event (a job set never used is not found).
    with pytest.raises(flotilla.NotFoundError) as err:
        c.events("A", "s1")
    assert (err.value.field, err.value.value) == ("jobSet", "s1")
    assert c.queue("A").status.queued == 0

    # A submit file's bytes go as they are: the fields are the file's.
    f = tmp_path / "jobs.json"
    f.write_text(json.dumps({"queue": "A", "jobSet": "s1", "jobs": [{"requests": {"cpu": "1"}, "sizes": 3}]}))
    with pytest.raises(flotilla.BadRequestError) as err:
        c.submit_file(f)
    assert (err.value.field, err.value.value) == ("jobs[0].sizes", "sizes")
    with pytest.raises(flotilla.BadRequestError) as err:
        c.submit_file({"queue": "nosuch", "jobSet": "s1", "jobs": [{"requests": {"cpu": "1"}}]})
    assert (err.value.field, err.value.value) == ("queue", "nosuch")
    # And a good file goes through, in file order.
    f.write_text(json.dumps({"queue": "A", "jobSet": "s1", "jobs": [{"count": 2, "requests": {"cpu": "1"}}]}))
    ids = c.submit_file(f)
    assert [s.state for s in c.status(ids)] == ["queued", "queued"]


def test_refusals_raise_the_class_of_their_status_with_field_and_value(service):
    c = service.client()
    with pytest.raises(flotilla.NotFoundError) as err:
        c.queue("Z")
    assert (err.value.status, err.value.field, err.value.value) == (404, "queue", "Z")
    assert isinstance(err.value, LookupError)
    with pytest.raises(flotilla.NotFoundError) as err:
        c.status(["nope"])
    assert (err.value.field, err.value.value) == ("job", "nope")
    with pytest.raises(flotilla.NotFoundError) as err:
        c.events("Z", "s1")
    assert (err.value.field, err.value.value) == ("queue", "Z")

    c.create_queue("A")
    with pytest.raises(flotilla.ConflictError) as err:
        c.create_queue("A")
    assert (err.value.status, err.value.field, err.value.value) == (409, "queue", "A")
    c.submit("A", "s1", [{"requests": {"cpu": "1"}}])
    with pytest.raises(flotilla.ConflictError):
        c.delete_queue("A")  # a queue with unfinished jobs
    with pytest.raises(flotilla.BadRequestError) as err:
        c.cancel()  # names no jobs
    assert err.value.field == "queue"


def test_an_unreachable_service_is_a_transport_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = flotilla.Client("http://127.0.0.1:%d" % port, timeout=5)
    with pytest.raises(flotilla.TransportError) as err:
        c.queues()
    assert isinstance(err.value, OSError)
    with pytest.raises(flotilla.TransportError):
        list(c.watch("A", "s1", retries=2, retry_delay=0.01))


def test_a_second_server_is_tried_when_the_first_cannot_be_reached(service):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = "http://127.0.0.1:%d" % s.getsockname()[1]
    s.close()
    c = flotilla.Client(dead + "," + service.url)
    assert c.create_queue("A").name == "A"
    assert c.server == service.url  # the next calls go to the one that answered


AUTH = {"tokens": [
    {"token": "t-admin", "principal": "ops", "admin": True},
    {"token": "t-alice", "principal": "alice", "submit": ["A"], "watch": ["A"]},
    {"token": "t-bob", "principal": "bob", "watch": ["B"]},
    {"token": "t-c1", "principal": "exec-c1", "executor": ["c1"]},
]}


def test_tokens_come_from_the_environment_and_refusals_are_refused_errors(start_service, tmp_path, monkeypatch):
    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps(AUTH))
    svc = start_service("-auth", str(auth))
    monkeypatch.setenv("FLOTILLA_SERVER", svc.url)
    monkeypatch.setenv("FLOTILLA_TOKEN", "t-admin")
    admin = flotilla.Client()
    assert (admin.server, admin.token) == (svc.url, "t-admin")
    admin.create_queue("A")
    admin.create_queue("B")

    with pytest.raises(flotilla.UnauthorizedError) as err:
        flotilla.Client(token="t-nobody").queues()
    assert err.value.status == 401 and isinstance(err.value, flotilla.RefusedError)
    alice = flotilla.Client(token="t-alice")
    with pytest.raises(flotilla.ForbiddenError) as err:
        alice.create_queue("C")
    assert err.value.status == 403 and isinstance(err.value, flotilla.RefusedError)
    assert "alice" in err.value.message
    with pytest.raises(flotilla.ForbiddenError):
        alice.submit("B", "s1", [{"requests": {"cpu": "1"}}])
    with pytest.raises(flotilla.ForbiddenError):
        flotilla.Client(token="t-bob").events("A", "s1")
    # The refusals changed nothing; alice may do what her token says.
    assert [q.name for q in admin.queues()] == ["A", "B"]
    ids = alice.submit("A", "s1", [{"requests": {"cpu": "1"}, "runtime": "100ms"}])
    svc.executor("c1", NODES, token="t-c1")
    got = list(alice.watch("A", "s1", until_done=True, timeout=EVENT_TIMEOUT))
    assert by_job(got) == {ids[0]: ["submitted", "leased", "running", "succeeded"]}


def test_queues_and_groups_round_trip_with_their_tree_fields(service):
    c = service.client()
    g = c.create_group("g", guaranteed={"cpu": "8"}, limit={"cpu": "16"}, priority_factor=2.0)
    assert (g.name, g.parent, g.guaranteed, g.limit, g.priority_factor) == ("g", None, {"cpu": "8"}, {"cpu": "16"}, 2)
    c.create_group(flotilla.Group("h", parent="g", guaranteed={"cpu": "4"}, lending_limit={"cpu": "2"}))
    q = c.create_queue("q1", parent="h", guaranteed={"cpu": "2"}, limit={"cpu": "8"},
                       lending_limit={"cpu": "1"}, priority_factor=3.0)
    assert q.status is not None and q.status.queued == 0

    h = c.group("h")
    assert (h.parent, h.guaranteed, h.limit, h.lending_limit) == ("g", {"cpu": "4"}, None, {"cpu": "2"})
    q = c.queue("q1")
    assert (q.name, q.parent, q.guaranteed, q.limit, q.lending_limit, q.priority_factor) == (
        "q1", "h", {"cpu": "2"}, {"cpu": "8"}, {"cpu": "1"}, 3)
    assert [x.name for x in c.groups()] == ["g", "h"]
    assert [x.name for x in c.queues()] == ["q1"]

    # Read, change, write back: the whole definition is replaced.
    q.limit = {"cpu": "6"}
    q.parent = "g"
    q.lending_limit = None
    c.update_queue(q)
    q = c.queue("q1")
    assert (q.parent, q.guaranteed, q.limit, q.lending_limit) == ("g", {"cpu": "2"}, {"cpu": "6"}, None)
    c.update_group("h", parent="g", guaranteed={"cpu": "4"}, limit={"cpu": "10"})
    assert c.group("h").limit == {"cpu": "10"}

    # A tree that would become invalid is refused, naming field and value, and nothing changes.
    with pytest.raises(flotilla.BadRequestError) as err:
        c.update_group("h", parent="g", guaranteed={"cpu": "4"}, limit={"cpu": "3"})
    assert (err.value.field, err.value.value) == ('group "h".limit.cpu', "3")
    assert c.group("h").limit == {"cpu": "10"}
    with pytest.raises(flotilla.BadRequestError) as err:
        c.create_queue("q2", parent="nosuch")
    assert err.value.value == "nosuch"
    with pytest.raises(flotilla.ConflictError) as err:
        c.delete_group("g")  # h and q1 hang from it
    assert (err.value.field, err.value.value) == ("group", "g")

    # A retry policy goes and comes back in the service's form; a bad one is
    # refused naming its field.
    policy = {"maxAttempts": 4, "rules": [{"onExitCodes": [137], "retryLimit": 2, "avoidSameNode": True}]}
    q = c.queue("q1")
    q.retry_policy = policy
    c.update_queue(q)
    assert c.queue("q1").retry_policy == policy
    q.retry_policy = {"rules": [{"retryLimit": 1}]}
    with pytest.raises(flotilla.BadRequestError) as err:
        c.update_queue(q)
    assert "rules[0]" in err.value.field
    assert c.queue("q1").retry_policy == policy

    c.delete_queue("q1")
    c.delete_group("h")
    c.delete_group("g")
    assert c.groups() == [] and c.queues() == []
    with pytest.raises(flotilla.NotFoundError) as err:
        c.group("h")
    assert (err.value.field, err.value.value) == ("group", "h")


def test_cancel_and_reprioritize_queued_jobs_by_id_job_set_and_queue(service):
    c = service.client()
    c.create_queue("A")  # no executor: the jobs stay queued
    ids = c.submit("A", "s1", [{"count": 4, "requests": {"cpu": "1"}}])

    r = c.reprioritize(5, ids[0])
    assert (r.reprioritized, r.live, r.finished) == ([ids[0]], [], [])
    long = c.status(ids[0], explain=True)[0]
    assert long.state == "queued" and long.explain is not None
    assert long.explain["priority"]["priority"] == 5
    r = c.reprioritize(7, queue="A", job_set="s1")
    assert sorted(r.reprioritized) == sorted(ids)
    evs = [e for e in c.events("A", "s1") if e.type == "reprioritized"]
    assert [(e.job, e.priority) for e in evs[:1]] == [(ids[0], 5)]
    assert sorted((e.job, e.priority) for e in evs[1:]) == sorted((j, 7) for j in ids)

    r = c.cancel([ids[1]])
    assert (r.cancelled, r.requested, r.finished) == ([ids[1]], [], [])
    r = c.cancel(queue="A", job_set="s1")
    assert sorted(r.cancelled) == sorted([ids[0], ids[2], ids[3]])
    assert c.cancel(ids[1]).finished == [ids[1]]
    r = c.reprioritize(1, ids[:2])
    assert sorted(r.finished) == sorted(ids[:2]) and r.reprioritized == []
    assert [s.state for s in c.status(ids)] == ["cancelled"] * 4

    # A whole queue: every job set.
    more = c.submit("A", "s2", [{"requests": {"cpu": "1"}}]) + c.submit("A", "s3", [{"requests": {"cpu": "1"}}])
    assert sorted(c.cancel(queue="A").cancelled) == sorted(more)
    c.delete_queue("A")  # nothing unfinished is left


def test_cancel_reprioritize_and_preempt_running_jobs(service):
    c = service.client()
    c.create_queue("A")
    service.executor("c1", NODES)
    ids = c.submit("A", "s1", [{"count": 2, "requests": {"cpu": "1"}, "runtime": "10m"}])
    w = c.watch("A", "s1", timeout=EVENT_TIMEOUT)
    wait_for(w, ids[0], "running")
    wait_for(w, ids[1], "running")

    r = c.reprioritize(3, ids)
    assert (r.reprioritized, sorted(r.live)) == ([], sorted(ids))
    r = c.cancel(ids[0])
    assert (r.cancelled, r.requested) == ([], [ids[0]])
    p = c.preempt(ids[1], reason="runaway")
    assert p.preempted == [ids[1]]

    rest = list(c.watch("A", "s1", from_seq=w.next_seq, until_done=True, timeout=EVENT_TIMEOUT))
    assert by_job(rest) == {ids[0]: ["cancel-requested", "cancelled"], ids[1]: ["preempted"]}
    assert "runaway" in [e for e in rest if e.type == "preempted"][0].reason
    assert [s.state for s in c.status(ids)] == ["cancelled", "preempted"]
    assert c.cancel(ids).finished == ids


def test_an_idle_watch_times_out_and_a_new_one_resumes_from_next_seq(service):
    c = service.client()
    c.create_queue("A")
    ids = c.submit("A", "s1", [{"requests": {"cpu": "1"}}])
    w = c.watch("A", "s1", timeout=0.5)
    assert next(w).job == ids[0]
    with pytest.raises(TimeoutError):
        next(w)  # no executor: nothing happens
    with pytest.raises(StopIteration):
        next(w)  # the timeout closed it
    c.cancel(ids)
    e = next(iter(c.watch("A", "s1", from_seq=w.next_seq, timeout=EVENT_TIMEOUT)))
    assert (e.seq, e.type) == (2, "cancelled")


def test_clusters_cordons_and_preempting_a_job_set(service):
    c = service.client()
    c.create_queue("A")
    c.cordon_queue("A")
    assert c.queue("A").status.cordoned
    c.uncordon_queue("A")
    assert not c.queue("A").status.cordoned
    service.executor("c1", NODES)
    ids = c.submit("A", "s1", [{"count": 2, "requests": {"cpu": "1"}, "runtime": "10m"}])
    w = c.watch("A", "s1", timeout=EVENT_TIMEOUT)
    wait_for(w, ids[0], "running")
    wait_for(w, ids[1], "running")

    [cl] = c.clusters()  # it reported: its jobs run
    assert (cl.name, cl.nodes, cl.alive, cl.cordoned, cl.leased + cl.running) == ("c1", 2, True, False, 2)
    assert cl.reported
    c.cordon_cluster("c1")
    assert c.clusters()[0].cordoned
    c.uncordon_cluster("c1")
    assert not c.clusters()[0].cordoned

    p = c.preempt(queue="A", job_set="s1", reason="maintenance")
    assert sorted(p.preempted) == sorted(ids)
    assert by_job(list(c.watch("A", "s1", from_seq=w.next_seq, until_done=True, timeout=EVENT_TIMEOUT))) == {
        j: ["preempted"] for j in ids}


def test_pools_jobs_accepting_one_pool_run_there_and_shares_are_per_pool(service):
    c = service.client()
    c.create_queue("A")
    c.create_queue("B")
    service.executor("ca", NODES, pool="a100")
    service.executor("cb", NODES, pool="h100")
    only_h = c.submit("A", "s", [flotilla.JobTemplate(count=2, requests={"cpu": "1"}, runtime="10m", pools=["h100"])])
    anywhere = c.submit("B", "s", [{"count": 1, "requests": {"cpu": "1"}, "runtime": "10m"}])
    w = c.watch("A", "s", timeout=EVENT_TIMEOUT)
    for j in only_h:
        e = wait_for(w, j, "running")
        assert e.cluster == "cb", "a job accepting pool h100 only runs on its cluster"
    wait_for(c.watch("B", "s", timeout=EVENT_TIMEOUT), anywhere[0], "running")
    assert {cl.name: cl.pool for cl in c.clusters()} == {"ca": "a100", "cb": "h100"}
    a = c.queue("A").status
    assert a.pools and {p.pool for p in a.pools} <= {"a100", "h100"}
    h = [p for p in a.pools if p.pool == "h100"]
    assert h and h[0].running == 2 and h[0].fair_share > 0
    assert all(p.running == 0 for p in a.pools if p.pool == "a100"), "A's share in a100 counts nothing of h100"


def test_a_job_no_node_can_run_is_stored_and_its_warning_reaches_the_caller(service):
    c = service.client()
    c.create_queue("A")
    service.executor("c1", NODES)  # two nodes of 8 cpu
    # Once a job ran, the service knows the cluster's nodes.
    first = c.submit("A", "s0", [{"requests": {"cpu": "1"}, "runtime": "10m"}])
    wait_for(c.watch("A", "s0", timeout=EVENT_TIMEOUT), first[0], "running")
    assert first.warnings == []

    with pytest.warns(flotilla.NeverFitsWarning) as issued:
        ids = c.submit("A", "s1", [{"requests": {"cpu": "1"}},
                                   flotilla.JobTemplate(count=2, requests={"cpu": "64"}),
                                   {"requests": {"cpu": "1"}, "pools": ["h100"]}])
    assert len(ids) == 4
    too_big, no_pool = ids.warnings
    assert (too_big.field, too_big.resource, too_big.job_ids) == ("jobs[1]", "cpu", ids[1:3])
    assert too_big.node in ("c1/node-0", "c1/node-1")
    assert too_big.message == ("jobs[1]: requests cpu=64 but the largest node (%s) has 8: "
                               "no node of any cluster fits it yet" % too_big.node)
    assert (no_pool.field, no_pool.resource, no_pool.node, no_pool.job_ids) == ("jobs[2]", None, None, ids[3:])
    assert no_pool.message.startswith("jobs[2]: no node of pool h100 is known")
    assert [w.message.warning for w in issued] == ids.warnings
    assert str(issued[0].message) == too_big.message + " (jobs %s, %s)" % (ids[1], ids[2])
    # The jobs are stored all the same and wait.
    assert [s.state for s in c.status(ids[1:])] == ["queued"] * 3
