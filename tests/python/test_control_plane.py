"""The control plane's two backends, from separate processes: a local file
under flock, and a real 3-member etcd cluster (issue 34, point 1).

Two `limelight control-plane increment` processes add one to the same key at
once, each by compare-and-swap: no increment may be lost or made twice, on
either backend, and on etcd not even while a member (the leader) is killed.
"""

import json
import subprocess

import pytest

from etcd_cluster import EtcdCluster
from harness import bin_dir, require_binaries

TIMES = 60


@pytest.fixture
def etcd(tmp_path):
    cluster = EtcdCluster(tmp_path)
    yield cluster
    cluster.stop()


def cli(*args, **kwargs):
    return subprocess.run([str(bin_dir() / "limelight"), "control-plane", *args], capture_output=True, text=True,
                          timeout=120, **kwargs)


def contend(endpoint, during=None):
    """Two processes increment `counter` TIMES times each; returns what each
    wrote, the final value, and who wrote each value (`counter.by/N`)."""
    require_binaries("limelight")
    processes = [subprocess.Popen([str(bin_dir() / "limelight"), "control-plane", "increment", "counter",
                                   "--times", str(TIMES), "--writer", f"p{n}", "--control-plane", endpoint],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(2)]
    if during:
        during()
    outputs = [p.communicate(timeout=120) for p in processes]
    for p, (out, err) in zip(processes, outputs):
        assert p.returncode == 0, err
    wrote = [[int(line) for line in out.split()] for out, _ in outputs]
    final = cli("get", "counter", "--control-plane", endpoint)
    assert final.returncode == 0, final.stderr
    listed = cli("list", "counter.by/", "--control-plane", endpoint)
    assert listed.returncode == 0, listed.stderr
    writers = {}
    for line in listed.stdout.splitlines():
        key, who, _ = line.split(" ")
        writers[int(key.rsplit("/", 1)[1])] = who
    return wrote, int(final.stdout), writers


def check(wrote, final, writers, ambiguous=0):
    """Every value 1…final was written once (it has one writer), each
    process's acknowledged values are its own, none is acknowledged twice;
    values a process wrote but never learnt of (its answer lost with an
    etcd member) number at most `ambiguous`."""
    assert [len(w) for w in wrote] == [TIMES, TIMES]
    assert sorted(writers) == list(range(1, final + 1))
    for n, values in enumerate(wrote):
        assert all(writers[v] == f"p{n}" for v in values), (n, values)
    every = wrote[0] + wrote[1]
    assert len(set(every)) == len(every)
    assert 2 * TIMES <= final <= 2 * TIMES + ambiguous, (final, sorted(set(range(1, final + 1)) - set(every)))


def test_two_processes_share_a_file_control_plane(tmp_path):
    check(*contend(f"file://{tmp_path}/control-plane.json"))


def test_two_processes_share_an_etcd_control_plane(etcd):
    check(*contend(etcd.endpoint))


def test_writes_go_on_while_the_etcd_leader_is_killed(etcd):
    leader = etcd.leader()
    endpoint = etcd.endpoint_first(leader)

    def kill_leader():
        # After the first increments are in: the processes are mid-run.
        import time
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = cli("get", "counter", "--control-plane", endpoint)
            if got.returncode == 0 and int(got.stdout) >= 10:
                break
            time.sleep(0.05)
        etcd.kill(leader)

    # A write committed after its answer was lost is not acknowledged to its
    # writer, who makes another: at most one such per process here.
    check(*contend(endpoint, during=kill_leader), ambiguous=2)
    assert etcd.wait_for_leader() != leader


def test_status_names_no_active_coordinator_on_a_new_store(tmp_path):
    require_binaries("limelight")
    status = cli("status", "--control-plane", f"file://{tmp_path}/cp.json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == {"active": None, "epoch": 0, "revision": 0}


def test_a_bad_control_plane_is_named(tmp_path):
    require_binaries("limelight")
    bad = cli("status", "--control-plane", "zookeeper://x")
    assert bad.returncode == 2
    assert "zookeeper://x" in bad.stderr and "etcd://" in bad.stderr
    down = cli("status", "--control-plane", "etcd://127.0.0.1:1")
    assert down.returncode == 3, down.stderr
    assert "127.0.0.1:1" in down.stderr
