"""The client's exceptions.

Every refusal by the service is an :class:`APIError` carrying the HTTP
status, the server's message and its problems, each naming a field and a
value (a 400 lists every problem of the request; nothing was stored). The
subclasses say what kind of refusal it was, so a caller can catch one kind
(``except flotilla.NotFoundError``) or all (``except flotilla.APIError``).
Failing to reach the service at all is a :class:`TransportError`, which is
also an :class:`OSError`; a 2xx answer the client cannot read is an
:class:`AnswerError`, which is also a :class:`ValueError`.

The service's warnings about a request it carried out are not exceptions:
they come back with the result and are also issued with Python's
:mod:`warnings` module, as a :class:`FlotillaWarning` subclass
(:class:`NeverFitsWarning`: a submitted job no known node can run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional

if TYPE_CHECKING:
    from .types import SubmitWarning

__all__ = [
    "FlotillaError",
    "TransportError",
    "AnswerError",
    "APIError",
    "BadRequestError",
    "RefusedError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "ConflictError",
    "TooLargeError",
    "UnavailableError",
    "Problem",
    "FlotillaWarning",
    "NeverFitsWarning",
]


@dataclass(frozen=True)
class Problem:
    """One problem of a refused request: the field, its value, what is wrong."""

    error: str
    field: Optional[str] = None
    value: Optional[str] = None

    def __str__(self) -> str:
        if self.field is None:
            return self.error
        return "%s %r: %s" % (self.field, self.value if self.value is not None else "", self.error)


class FlotillaError(Exception):
    """The root of every exception this package raises on purpose."""


class TransportError(FlotillaError, OSError):
    """The service could not be reached, or the connection failed before an answer."""


class AnswerError(FlotillaError, ValueError):
    """A 2xx answer the client cannot read (a broken server or proxy): the
    request was carried out, but its answer is not of the API's form.

    Attributes:
        field: the part of the answer that is wrong (``warnings[0].message``).
        value: what it held, as decoded from JSON.
        job_ids: for a submission whose ids could be read, the ids of the
            jobs it stored (so the caller need not submit them again);
            else empty.
    """

    def __init__(self, message: str, field: str, value: Any, job_ids: Optional[List[str]] = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value
        self.job_ids: List[str] = list(job_ids or [])


class APIError(FlotillaError):
    """A refusal by the service: an HTTP status other than 2xx and its body.

    Attributes:
        status: the HTTP status code.
        message: the server's ``error`` sentence.
        problems: each problem with its field and value (may be empty).
        retry_after: seconds from a ``Retry-After`` header, when one came.
    """

    status: int = 0

    def __init__(self, status: int, message: str, problems: Optional[List[Problem]] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__("%d: %s" % (status, message))
        self.status = status
        self.message = message
        self.problems: List[Problem] = list(problems or [])
        self.retry_after = retry_after

    @property
    def field(self) -> Optional[str]:
        """The field of the first problem (None when the server named none)."""
        return self.problems[0].field if self.problems else None

    @property
    def value(self) -> Optional[str]:
        """The value of the first problem (None when the server named none)."""
        return self.problems[0].value if self.problems else None

    def __str__(self) -> str:
        return "%d %s: %s" % (self.status, _REASONS.get(self.status, "error"), self.message)


class BadRequestError(APIError, ValueError):
    """400: bad input, every problem named by field and value; nothing changed."""


class RefusedError(APIError):
    """401 or 403: the token is unknown or lacks the right; nothing changed."""


class UnauthorizedError(RefusedError):
    """401: no known bearer token."""


class ForbiddenError(RefusedError):
    """403: the token lacks the right for this request."""


class NotFoundError(APIError, LookupError):
    """404: no such queue, group or job."""


class ConflictError(APIError):
    """409: the name exists already, or the queue or group is not empty."""


class TooLargeError(APIError):
    """413: the request body is over the server's size limit."""


class UnavailableError(APIError):
    """503: storage unavailable or too many event streams; retry (see retry_after)."""


class FlotillaWarning(UserWarning):
    """The root of the warnings this package issues (:mod:`warnings`): a
    request was carried out, but the service warns about it. A UserWarning,
    so shown by default; ``warnings.simplefilter("error",
    flotilla.FlotillaWarning)`` turns them into exceptions, ``"ignore"``
    silences them."""


class NeverFitsWarning(FlotillaWarning):
    """Submitted jobs that no node the service knows can run, in the pools
    they accept: they are stored and wait until a cluster with a large
    enough node registers (the service's docs/submit-file.md, "Jobs no node
    can run"). One per template of the submission.

    Attributes:
        warning: the :class:`flotilla.SubmitWarning` it was issued for (its
            field, resource, node, message and the template's job_ids).
    """

    def __init__(self, warning: "SubmitWarning") -> None:
        super().__init__(warning.text())
        self.warning = warning


_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    413: "Request Entity Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}

_CLASSES = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: TooLargeError,
    503: UnavailableError,
}


def error_from_response(status: int, body: bytes, retry_after: Optional[str] = None) -> APIError:
    """Builds the exception for a refusal from its status and body.

    A body in the API's Error form ({"error", "problems": [{"field",
    "value", "error"}]}) gives the message and problems; any other body is
    the message as it came.
    """
    message = body.decode("utf-8", "replace").strip()
    problems: List[Problem] = []
    try:
        doc: Any = json.loads(body)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"]:
        message = doc["error"]
        for p in doc.get("problems") or []:
            if isinstance(p, dict):
                problems.append(Problem(error=str(p.get("error", "")), field=p.get("field"),
                                        value=p.get("value")))
    after: Optional[float] = None
    if retry_after:
        try:
            after = float(retry_after)
        except ValueError:
            after = None
    cls = _CLASSES.get(status, APIError)
    return cls(status, message or _REASONS.get(status, "error"), problems, after)

