"""One configuration file for the server processes, the LIMELIGHT_* environment
over it, flags over both; and --log-format json. Real executables, real sockets."""

import json
import os
import subprocess
import urllib.request

from harness import FakeWorker, bin_dir, free_port, wait_until


def start(name, *args, env=None):
    """Starts a server executable; returns (process, its first stdout line)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_")}
    full_env.update(env or {})
    p = subprocess.Popen([str(bin_dir() / name), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=full_env)
    return p


def stop(p):
    p.terminate()
    p.wait(10)
    err = p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    return err


def stats_of(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def coordinator_config(tmp_path, **coordinator):
    config = {"log": {"format": "json", "level": "info"},
              "coordinator": {"listen": "tcp://127.0.0.1:0", "workers": "tcp://127.0.0.1:0",
                              "statsListen": "127.0.0.1:0", "shards": 3, **coordinator}}
    path = tmp_path / "limelight.json"
    path.write_text(json.dumps(config))
    return path


def test_file_then_environment_then_flags(tmp_path):
    path = coordinator_config(tmp_path)
    cases = [([], {}, 3), ([], {"LIMELIGHT_SHARDS": "5"}, 5), (["--shards", "6"], {"LIMELIGHT_SHARDS": "5"}, 6)]
    for flags, env, shards in cases:
        p = start("limelight-coordinator", "--config", path, *flags, env=env)
        try:
            line = p.stdout.readline().split()
            assert line and line[0] == "listening", (flags, env, p.stderr.read() if p.poll() is not None else "")
            assert stats_of(line[3])["shardCount"] == shards, (flags, env)
        finally:
            stop(p)


def test_config_from_environment_and_json_logs(tmp_path):
    path = coordinator_config(tmp_path)
    p = start("limelight-coordinator", env={"LIMELIGHT_CONFIG": str(path)})
    try:
        line = p.stdout.readline().split()
        assert line[0] == "listening"
    finally:
        err = stop(p)
    records = [json.loads(x) for x in err.splitlines() if x.strip()]
    assert records, err
    [listening] = [r for r in records if r["message"] == "coordinator listening"]
    assert listening["level"] == "info" and listening["logger"] == "limelight.coordinator"
    assert listening["endpoint.clients"] == line[1] and listening["shards"] == "3"
    assert listening["time"].endswith("Z")


def test_a_stronger_stats_setting_drops_the_other_one(tmp_path):
    """--stats-listen on the command line and LIMELIGHT_STATS_PORT in the
    environment are not 'both given': the flag wins."""
    path = coordinator_config(tmp_path)
    port = free_port()
    p = start("limelight-coordinator", "--config", path, "--stats-listen", f"127.0.0.1:{port}",
              env={"LIMELIGHT_STATS_PORT": str(free_port())})
    try:
        line = p.stdout.readline().split()
        assert line[3] == f"http://127.0.0.1:{port}/stats"
    finally:
        stop(p)


def test_workers_take_their_section(tmp_path):
    # The cluster secret's file is a setting too: the coordinator makes it, the workers read it.
    secret = str(tmp_path / "cluster.secret")
    coordinator = coordinator_config(tmp_path, shards=2, heartbeatMs=200, livenessMs=600, clusterSecretFile=secret)
    c = start("limelight-coordinator", "--config", coordinator)
    workers = []
    try:
        _, _, worker_endpoint, stats_url = c.stdout.readline().split()
        assert (tmp_path / "cluster.secret").stat().st_mode & 0o777 == 0o600
        config = {"log": {"level": "notice"},
                  "indexer": {"coordinator": worker_endpoint, "data": str(tmp_path / "data"), "shards": [0, 1],
                              "id": "configured-indexer", "clusterSecretFile": secret},
                  "query": {"coordinator": worker_endpoint, "data": str(tmp_path / "data"), "shards": "0-1",
                            "id": "configured-query", "clusterSecretFile": secret}}
        path = tmp_path / "workers.json"
        path.write_text(json.dumps(config))
        workers = [start("limelight-indexer", "--config", path), start("limelight-query", "--config", path)]
        assert wait_until(lambda: stats_of(stats_url)["servedShards"] == [0, 1], timeout=20)
        ids = {w["id"]: w["shards"] for w in stats_of(stats_url)["workers"]}
        assert ids == {"configured-indexer": [0, 1], "configured-query": [0, 1]}
    finally:
        for w in workers:
            stop(w)
        stop(c)


def test_faults_are_named(tmp_path):
    cases = [
        ({"coordinator": {"shardz": 3}}, "coordinator.shardz is not a setting"),
        ({"coordinator": {"shards": "3"}}, "coordinator.shards must be an integer, not text"),
        ({"coordinatr": {}}, "'coordinatr' is not a section"),
        ({"log": {"format": 1}}, "log.format must be text, not number"),
    ]
    for config, message in cases:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(config))
        done = subprocess.run([str(bin_dir() / "limelight-coordinator"), "--config", str(path)],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 64 and f"{path}: {message}" in done.stderr, (config, done.stderr)
    path.write_text('{"coordinator": ')
    done = subprocess.run([str(bin_dir() / "limelight-coordinator"), "--config", str(path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 64 and f"{path} is not JSON" in done.stderr, done.stderr
    done = subprocess.run([str(bin_dir() / "limelight-coordinator"), "--log-format", "yaml"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 64 and "yaml" in done.stderr, done.stderr
    done = subprocess.run([str(bin_dir() / "limelight-coordinator"), "--config", str(tmp_path / "missing.json")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 64 and "cannot read the configuration file" in done.stderr, done.stderr


def test_the_example_configuration_is_valid():
    """ops/limelight.example.json: every process accepts its settings (a
    fault would exit 64 before --help is printed)."""
    from harness import REPO
    example = REPO / "ops" / "limelight.example.json"
    for name in ("limelight-coordinator", "limelight-indexer", "limelight-query"):
        done = subprocess.run([str(bin_dir() / name), "--config", str(example), "--help"],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (name, done.stderr)
        assert "--config" in done.stdout
