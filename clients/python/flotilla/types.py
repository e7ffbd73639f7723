"""The API's JSON forms as dataclasses (httpapi/openapi.json, docs/job-lifecycle.md).

Attribute names are the JSON names in snake case (``jobSet`` is
``job_set``). ``from_dict`` reads a JSON object, keeping fields this
version does not know in ``extra`` (so a queue read, changed and written
back loses nothing the server added); ``to_dict`` writes the JSON form,
leaving out attributes that are None.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from .errors import AnswerError

__all__ = [
    "STATES",
    "TERMINAL_STATES",
    "EVENT_TYPES",
    "Event",
    "JobStatus",
    "Queue",
    "QueueStatus",
    "PoolShare",
    "Group",
    "GroupStatus",
    "Cluster",
    "Gang",
    "JobTemplate",
    "SubmitResult",
    "SubmitWarning",
    "CancelResult",
    "ReprioritizeResult",
    "PreemptResult",
    "duration",
]

#: A job's states (docs/job-lifecycle.md).
STATES = ("queued", "leased", "running", "succeeded", "failed", "cancelled", "preempted")
#: The states no event follows.
TERMINAL_STATES = frozenset(("succeeded", "failed", "cancelled", "preempted"))
#: The event types of docs/job-lifecycle.md.
EVENT_TYPES = (
    "submitted", "leased", "running", "succeeded", "failed", "cancelled", "preempted",
    "lease-expired", "lease-returned", "cancel-requested", "reprioritized", "run-failed",
)

Duration = Union[str, _dt.timedelta]
Quantities = Dict[str, str]


def duration(d: Duration) -> str:
    """A duration in Go's form: strings pass as they are ("30s", "1h");
    a timedelta becomes whole microseconds ("1500000us"), exactly."""
    if isinstance(d, _dt.timedelta):
        return "%dus" % (d // _dt.timedelta(microseconds=1))
    return d


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


W = TypeVar("W", bound="_Wire")


class _Wire:
    """from_dict and to_dict for the dataclasses below."""

    # Attributes holding another wire type, by attribute name.
    _nested: ClassVar[Dict[str, Type["_Wire"]]] = {}
    # Attributes mapping resource names to quantities: values become strings.
    _quantities: ClassVar[Tuple[str, ...]] = ()
    # Attributes holding durations: a timedelta becomes Go's form.
    _durations: ClassVar[Tuple[str, ...]] = ()
    # Attributes holding a list of another wire type: how to read one.
    _lists: ClassVar[Dict[str, Any]] = {}

    @classmethod
    def from_dict(cls: Type[W], d: Mapping[str, Any]) -> W:
        by_json = {_camel(f.name): f for f in fields(cls) if f.name != "extra"}  # type: ignore[arg-type]
        kwargs: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        for k, v in d.items():
            f = by_json.get(k)
            if f is None:
                extra[k] = v
                continue
            sub = cls._nested.get(f.name)
            if sub is not None and isinstance(v, Mapping):
                v = sub.from_dict(v)
            read = cls._lists.get(f.name)
            if read is not None:
                v = read(v)
            kwargs[f.name] = v
        if any(f.name == "extra" for f in fields(cls)):  # type: ignore[arg-type]
            kwargs["extra"] = extra
        return cls(**kwargs)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            if v is None:
                continue
            if isinstance(v, _Wire):
                v = v.to_dict()
            elif isinstance(v, list) and any(isinstance(x, _Wire) for x in v):
                v = [x.to_dict() if isinstance(x, _Wire) else x for x in v]
            elif f.name in self._quantities:
                v = {k: str(q) for k, q in v.items()}
            elif f.name in self._durations:
                v = duration(v)
            out[_camel(f.name)] = v
        out.update(getattr(self, "extra", None) or {})
        return out


_FRACTION = re.compile(r"\.(\d+)")


@dataclass
class Event(_Wire):
    """One event of a job set's log (docs/job-lifecycle.md's event form)."""

    seq: int
    time: str
    queue: str
    job_set: str
    job: str
    type: str
    cluster: Optional[str] = None
    node: Optional[str] = None
    attempt: Optional[int] = None
    reason: Optional[str] = None
    exit_code: Optional[int] = None
    requeued: bool = False
    priority: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def ends_job(self) -> bool:
        """Whether the job is in a terminal state after this event: succeeded,
        failed and cancelled; preempted, lease-expired and lease-returned
        unless the job was queued again (requeued)."""
        if self.type in ("succeeded", "failed", "cancelled"):
            return True
        if self.type in ("preempted", "lease-expired", "lease-returned"):
            return not self.requeued
        return False

    @property
    def timestamp(self) -> _dt.datetime:
        """time as an aware datetime (UTC), to the microsecond."""
        s = self.time.replace("Z", "+00:00")
        s = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], s, count=1)
        return _dt.datetime.fromisoformat(s)


@dataclass
class JobStatus(_Wire):
    """A job's state, attempts, lease and why it waits (GET /v1/jobs)."""

    job: str
    queue: str
    job_set: str
    state: str
    attempts: int = 0
    cluster: str = ""
    node: str = ""
    reason: str = ""
    cancel_requested: bool = False
    #: with explain=True: the long form (status -v), as the server sent it
    explain: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass
class PoolShare(_Wire):
    """A queue's or group's standing in one pool's last cycle (read only):
    each pool has its own cycle and fair shares, of its own clusters."""

    pool: str = ""
    share: float = 0.0
    fair_share: float = 0.0
    adjusted_fair_share: float = 0.0
    demand: float = 0.0
    running: int = 0
    queued: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)


def _pool_shares(v: Any) -> Any:
    """A status's pools as PoolShare values (a list of JSON objects)."""
    if isinstance(v, list):
        return [PoolShare.from_dict(x) if isinstance(x, Mapping) else x for x in v]
    return v


@dataclass
class QueueStatus(_Wire):
    """A queue's standing in the last cycle (read only). With more than one
    pool, pools has its standing in each (in pool name order) and the
    shares above are the first pool's where it has jobs."""

    queued: int = 0
    leased: int = 0
    running: int = 0
    share: float = 0.0
    fair_share: float = 0.0
    adjusted_fair_share: float = 0.0
    usage: float = 0.0
    cordoned: bool = False
    pools: Optional[List[PoolShare]] = None
    # never_fit counts the queued jobs that no node the service knows can
    # run (their requests leave the queue's demand).
    never_fit: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    _lists: ClassVar[Dict[str, Any]] = {"pools": _pool_shares}


@dataclass
class Queue(_Wire):
    """A queue: its weight, per-class limits and its place in the queue tree
    (docs/queue-tree.md: parent group, guaranteed, limit, lending limit, each a
    map of resource name to quantity). status is read only."""

    name: str
    priority_factor: Optional[float] = None
    limits_by_priority_class: Optional[Dict[str, Dict[str, float]]] = None
    parent: Optional[str] = None
    guaranteed: Optional[Quantities] = None
    limit: Optional[Quantities] = None
    lending_limit: Optional[Quantities] = None
    # retry_policy is the queue's retry policy as the service's form:
    # {"maxAttempts": 5, "rules": [{"onExitCodes": [137], "onReasons": ["oom"],
    # "retryLimit": 3, "avoidSameNode": True}]}; None is no policy.
    retry_policy: Optional[Dict[str, Any]] = None
    status: Optional[QueueStatus] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _nested: ClassVar[Dict[str, Type[_Wire]]] = {"status": QueueStatus}
    _quantities: ClassVar[Tuple[str, ...]] = ("guaranteed", "limit", "lending_limit")


@dataclass
class GroupStatus(_Wire):
    """A group's standing in the last cycle: its queues summed (read only);
    per pool in pools, as a queue's."""

    queued: int = 0
    running: int = 0
    share: float = 0.0
    fair_share: float = 0.0
    adjusted_fair_share: float = 0.0
    demand: float = 0.0
    usage: float = 0.0
    pools: Optional[List[PoolShare]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _lists: ClassVar[Dict[str, Any]] = {"pools": _pool_shares}


@dataclass
class Group(_Wire):
    """A group of the queue tree: it holds queues and groups, no jobs."""

    name: str
    parent: Optional[str] = None
    priority_factor: Optional[float] = None
    guaranteed: Optional[Quantities] = None
    limit: Optional[Quantities] = None
    lending_limit: Optional[Quantities] = None
    status: Optional[GroupStatus] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _nested: ClassVar[Dict[str, Type[_Wire]]] = {"status": GroupStatus}
    _quantities: ClassVar[Tuple[str, ...]] = ("guaranteed", "limit", "lending_limit")


@dataclass
class Cluster(_Wire):
    """An executor's cluster as the service sees it (GET /v1/clusters)."""

    name: str
    nodes: int = 0
    alive: bool = False
    cordoned: bool = False
    #: the pool its executor named (`executor -pool`), "default" when none
    pool: str = ""
    leased: int = 0
    running: int = 0
    reported: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Gang(_Wire):
    """A gang: all its members are placed together or not at all."""

    id: str
    cardinality: int
    node_uniformity_label: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class JobTemplate(_Wire):
    """A job template of the submit file: count copies of one job.

    requests maps resource names to quantities ({"cpu": "1", "memory":
    "4Gi"}); durations are Go's form ("30s") or a timedelta. runtime and
    exit_code are for the fake executor. Fields the server knows and this
    class does not go in extra.
    """

    requests: Optional[Quantities] = None
    count: Optional[int] = None
    priority_class: Optional[str] = None
    priority: Optional[int] = None
    node_selector: Optional[Dict[str, str]] = None
    tolerations: Optional[List[Dict[str, Any]]] = None
    gang: Optional[Union[Gang, Dict[str, Any]]] = None
    termination_grace_period: Optional[Duration] = None
    active_deadline: Optional[Duration] = None
    client_id: Optional[str] = None
    runtime: Optional[Duration] = None
    exit_code: Optional[int] = None
    #: the pools whose clusters may run the jobs; None accepts every pool
    pools: Optional[List[str]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _nested: ClassVar[Dict[str, Type[_Wire]]] = {"gang": Gang}
    _quantities: ClassVar[Tuple[str, ...]] = ("requests",)
    _durations: ClassVar[Tuple[str, ...]] = ("termination_grace_period", "active_deadline", "runtime")


_TEMPLATE = re.compile(r"jobs\[(0|[1-9][0-9]*)\]\Z")


@dataclass
class SubmitWarning(_Wire):
    """The service's warning about one template of a submission: no node of
    any cluster it knows, in the pools the template accepts, can run its
    jobs (docs/submit-file.md, "Jobs no node can run"). The jobs are stored
    all the same and wait until a cluster with a large enough node
    registers. ``flotilla submit`` prints the message on standard error.

    Attributes:
        field: the template, ``jobs[i]`` (i counts from 0 in the order sent).
        message: the whole warning, starting with field.
        resource: the resource no node has enough of (or, when some node has
            enough of each but none of all, the one node lacks); None when
            no node of the jobs' pools is known.
        node: the node with the most of resource (``cluster/node``); None
            with resource.
        job_ids: the ids of the template's jobs, in order. Not part of the
            API's form today (to_dict leaves it out): the client fills it in
            from the count of each template it sent; empty when it cannot
            tell.
    """

    field: str
    message: str
    resource: Optional[str] = None
    node: Optional[str] = None
    job_ids: List[str] = dataclasses.field(default_factory=list)
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def template(self) -> int:
        """The template's index in the jobs sent (the i of jobs[i])."""
        return int(_TEMPLATE.match(self.field).group(1))  # type: ignore[union-attr]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "warning") -> "SubmitWarning":
        """Reads the API's form, checking it: AnswerError names the field
        (where, then the key: ``warnings[0].message``) and its value."""
        if not isinstance(d, Mapping):
            raise AnswerError("%s %r: want a JSON object" % (where, d), where, d)
        for key, required in (("field", True), ("message", True), ("resource", False), ("node", False)):
            v = d.get(key)
            if v is None and not required:
                continue
            if not isinstance(v, str) or (required and not v):
                raise AnswerError("%s.%s %r: want a%s string" % (where, key, v, " non-empty" if required else ""),
                                  where + "." + key, v)
        if not _TEMPLATE.match(d["field"]):
            raise AnswerError("%s.field %r: want jobs[i], a template of the submission" % (where, d["field"]),
                              where + ".field", d["field"])
        ids = d.get("jobIds")
        if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) and i for i in ids)):
            raise AnswerError("%s.jobIds %r: want a list of job ids" % (where, ids), where + ".jobIds", ids)
        return super().from_dict(d)

    def to_dict(self) -> Dict[str, Any]:
        out = super().to_dict()
        out.pop("jobIds", None)  # the client's, not the API's
        return out

    def text(self) -> str:
        """The message and the template's job ids (up to three named): the
        text of the NeverFitsWarning issued for it."""
        ids = self.job_ids
        if not ids:
            return self.message
        named = ", ".join(ids[:3])
        if len(ids) > 3:
            named += " and %d more" % (len(ids) - 3)
        return "%s (job%s %s)" % (self.message, "s" if len(ids) > 1 else "", named)


class SubmitResult(List[str]):
    """What a submission returns: the ids of the jobs it stored, in the
    order sent, as a list (so every use of the ids as a list works as it
    did), and the service's warnings about its templates.

    Attributes:
        warnings: a SubmitWarning for each template whose jobs no known node
            can run, in template order; empty when there are none.

    It compares equal to a list of the same ids, whatever its warnings;
    slices and copies made by list operations are plain lists.
    """

    def __init__(self, job_ids: Iterable[str] = (), warnings: Iterable[SubmitWarning] = ()) -> None:
        super().__init__(job_ids)
        self.warnings: List[SubmitWarning] = list(warnings)

    @property
    def job_ids(self) -> List[str]:
        """The ids as a plain list."""
        return list(self)

    def __repr__(self) -> str:
        return "SubmitResult(%s, warnings=%r)" % (list.__repr__(self), self.warnings)

    @classmethod
    def from_dict(cls, d: Optional[Mapping[str, Any]], counts: Optional[Sequence[int]] = None) -> "SubmitResult":
        """Reads the answer to POST /v1/jobs ({"jobIds": [...], "warnings":
        [...]}), checking it (AnswerError names the field and value).
        counts, the number of jobs each template sent makes, gives each
        warning its job_ids; without it, or when it does not add up to the
        ids, job_ids stay empty."""
        if d is None:
            d = {}
        if not isinstance(d, Mapping):
            raise AnswerError("answer %r: want a JSON object" % (d,), "answer", d)
        ids = d.get("jobIds")
        if ids is None:
            ids = []
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise AnswerError("jobIds %r: want a list of job ids" % (ids,), "jobIds", ids)
        raw = d.get("warnings")
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise AnswerError("warnings %r: want a list" % (raw,), "warnings", raw, ids)
        warnings = []
        for i, w in enumerate(raw):
            try:
                warnings.append(SubmitWarning.from_dict(w, "warnings[%d]" % i))
            except AnswerError as e:
                e.job_ids = list(ids)
                raise
        # Template i's jobs are the counts[i] ids after those of the
        # templates before it (the service expands them in order).
        starts: List[int] = []
        if counts is not None and sum(counts) == len(ids):
            at = 0
            for n in counts:
                starts.append(at)
                at += n
        for w in warnings:
            if not w.job_ids and w.template < len(starts):
                i = w.template
                w.job_ids = ids[starts[i]:starts[i] + counts[i]]  # type: ignore[index]
        return cls(ids, warnings)


@dataclass
class CancelResult(_Wire):
    """What a cancel did: queued jobs cancelled at once, leased or running
    jobs asked to stop (cancel-requested), jobs that had ended already."""

    cancelled: List[str] = field(default_factory=list)
    requested: List[str] = field(default_factory=list)
    finished: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ReprioritizeResult(_Wire):
    """What a reprioritize did: queued jobs given the priority, leased or
    running jobs left alone (live), jobs that had ended."""

    reprioritized: List[str] = field(default_factory=list)
    live: List[str] = field(default_factory=list)
    finished: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class PreemptResult(_Wire):
    """What a preempt did: leased or running jobs preempted (gang mates
    included), queued jobs named (nothing to preempt), jobs that had ended."""

    preempted: List[str] = field(default_factory=list)
    queued: List[str] = field(default_factory=list)
    finished: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)
