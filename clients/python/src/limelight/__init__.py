"""Limelight's Python client: publish items to and query a Limelight cluster.

Everything travels as one JSON object per ZeroMQ frame to the coordinator
(``proto-schemas/`` in the repository has a schema per message), so the
package needs only pyzmq. ``Client`` is the library; ``limelight-publish``
and ``limelight-query`` are the command-line tools built on it.
"""

from .client import (
    DEFAULT_DEADLINE_MS,
    DEFAULT_ENDPOINT,
    PROTOCOL_VERSION,
    Client,
    JSONObject,
    LimelightError,
    LimelightTimeout,
    QueryEvent,
    QueryStream,
    secured_key,
    sort_key,
)

__all__ = [
    "DEFAULT_DEADLINE_MS",
    "DEFAULT_ENDPOINT",
    "PROTOCOL_VERSION",
    "Client",
    "JSONObject",
    "LimelightError",
    "LimelightTimeout",
    "QueryEvent",
    "QueryStream",
    "secured_key",
    "sort_key",
]
__version__ = "0.1.0"
