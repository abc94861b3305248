"""Fixtures: a real Limelight cluster, and Python clients whose every message
is checked against proto-schemas/ as it passes.

The cluster is ``<bin>/limelight up --data <tmp> --listen tcp://127.0.0.1:0
--stats-port 0 --shards 4`` (bin = $LIMELIGHT_BIN, default .build/debug),
with the worker endpoint on a free port so fake workers can connect to it.
Tests that need it are skipped when the executable is missing and
$LIMELIGHT_BIN is unset, and fail when $LIMELIGHT_BIN names a folder without it.
"""

import os

import pytest

from harness import Client, Traffic, bin_dir, publish_all, read_jsonl, start_cluster, stop_cluster


def _require_binary():
    exe = bin_dir() / "limelight"
    if exe.exists():
        return
    if os.environ.get("LIMELIGHT_BIN"):
        pytest.fail(f"{exe} does not exist: build first (swift build)")
    pytest.skip(f"{exe} does not exist: run `swift build` or set LIMELIGHT_BIN")


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
