"""The old module name of the client, kept for scripts that import it from this
folder: the library is the ``limelight`` package under ``src/`` now
(``pip install ./clients/python``, then ``import limelight``)."""

import pathlib
import sys

try:
    import limelight  # noqa: F401  (installed)
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "src"))

from limelight.client import *  # noqa: E402,F401,F403
from limelight.client import (  # noqa: E402,F401
    DEFAULT_DEADLINE_MS,
    DEFAULT_ENDPOINT,
    PROTOCOL_VERSION,
    Client,
    LimelightError,
    LimelightTimeout,
    QueryStream,
    secured_key,
    sort_key,
)
