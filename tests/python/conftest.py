"""Fixtures: a real Limelight cluster, and Python clients whose every message
is checked against proto-schemas/ as it passes.

The cluster is ``<bin>/limelight up --data <tmp> --listen tcp://127.0.0.1:0
--stats-port 0 --shards 4`` (bin = $LIMELIGHT_BIN, default .build/debug),
with the worker endpoint on a free port so fake workers can connect to it.
Tests that need it are skipped when the executable is missing and
$LIMELIGHT_BIN and $CI are unset, and fail otherwise (harness.require_binaries).
"""

import pytest

from harness import Client, Traffic, publish_all, read_jsonl, require_binaries, start_cluster, stop_cluster


def pytest_configure(config):
    # An exception that ends a test's helper thread fails the test: pytest
    # would otherwise only warn, and the thread's checks would pass unseen.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestUnhandledThreadExceptionWarning")


def _require_binary():
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")


def _cluster(tmp_path_factory, name):
    _require_binary()
    cluster = start_cluster(tmp_path_factory.mktemp(name))
    try:
        yield cluster
    finally:
        stop_cluster(cluster.process)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """The cluster shared by the session: (endpoint, stats_url, workers_endpoint, data, process)."""
    yield from _cluster(tmp_path_factory, "cluster")


@pytest.fixture(scope="module")
def private_cluster(tmp_path_factory):
    """A cluster of the module's own, for tests that register fake workers."""
    yield from _cluster(tmp_path_factory, "private-cluster")


@pytest.fixture
def traffic():
    """Every message of the test's clients, each checked against its schema."""
    return Traffic()


@pytest.fixture
def client(cluster, traffic):
    """A client of the shared cluster whose messages are all schema-checked."""
    with Client(cluster.endpoint, timeout=10, observer=traffic) as c:
        yield c


@pytest.fixture(scope="session")
def grocer(cluster):
    """The Green Grocer sample, published to the shared cluster."""
    items = read_jsonl("green-grocer.jsonl")
    assert publish_all(cluster.endpoint, items) == len(items)
    return items


@pytest.fixture(scope="session")
def debian(cluster):
    """The Debian packages sample, published to the shared cluster."""
    items = read_jsonl("debian-packages.jsonl")
    assert publish_all(cluster.endpoint, items) == len(items)
    return items
