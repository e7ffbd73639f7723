"""Flotilla's Python client: submit batch jobs to a Flotilla service and
follow them.

    import flotilla
    c = flotilla.Client("http://127.0.0.1:8080")          # or $FLOTILLA_SERVER, $FLOTILLA_TOKEN
    ids = c.submit("A", "s1", [{"count": 3, "requests": {"cpu": "1"}}])   # ids.warnings: jobs no node can run
    for e in c.watch("A", "s1", until_done=True):
        print(e.seq, e.job, e.type)

Standard library only. The HTTP API it calls is httpapi/openapi.json of
the Flotilla repository; the job life cycle and the event form are in
its docs/job-lifecycle.md.
"""

from .client import DEFAULT_SERVER, Client, Watch
from .errors import (
    AnswerError,
    APIError,
    BadRequestError,
    ConflictError,
    FlotillaError,
    FlotillaWarning,
    ForbiddenError,
    NeverFitsWarning,
    NotFoundError,
    Problem,
    RefusedError,
    TooLargeError,
    TransportError,
    UnauthorizedError,
    UnavailableError,
)
from .types import (
    EVENT_TYPES,
    STATES,
    TERMINAL_STATES,
    CancelResult,
    Cluster,
    Event,
    Gang,
    Group,
    GroupStatus,
    JobStatus,
    JobTemplate,
    PoolShare,
    PreemptResult,
    Queue,
    QueueStatus,
    ReprioritizeResult,
    SubmitResult,
    SubmitWarning,
    duration,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SERVER", "Client", "Watch",
    "AnswerError", "APIError", "BadRequestError", "ConflictError", "FlotillaError", "ForbiddenError",
    "NotFoundError", "Problem", "RefusedError", "TooLargeError", "TransportError",
    "UnauthorizedError", "UnavailableError", "FlotillaWarning", "NeverFitsWarning",
    "EVENT_TYPES", "STATES", "TERMINAL_STATES", "CancelResult", "Cluster", "Event", "Gang",
    "Group", "GroupStatus", "JobStatus", "JobTemplate", "PoolShare", "PreemptResult", "Queue",
    "QueueStatus", "ReprioritizeResult", "SubmitResult", "SubmitWarning", "duration",
]
