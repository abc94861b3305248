"""publish.py and query.py, run as a user runs them, against the cluster."""

import json
import re
import subprocess
import sys

from harness import CLIENTS, SAMPLES, free_port, read_jsonl


def run(script, *args, timeout=120):
    """Runs a client script; returns (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, str(CLIENTS / script), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def test_publish_green_grocer(cluster):
    code, out, err = run("publish.py", SAMPLES / "green-grocer.jsonl", "--endpoint", cluster.endpoint)
    assert code == 0, err
    count = len(read_jsonl("green-grocer.jsonl"))
    assert re.match(rf"{count} stored, 0 rejected in [0-9.]+ s \([0-9]+ items/s\)$", out.strip()), out
    assert err == ""


def test_publish_debian_with_a_window_of_small_batches(cluster):
    code, out, err = run("publish.py", SAMPLES / "debian-packages.jsonl", "--endpoint", cluster.endpoint,
                         "--batch-size", 25, "--window", 3)
    assert code == 0, err
    assert out.startswith("300 stored, 0 rejected"), out


def test_publish_names_rejected_lines(cluster, tmp_path):
    lines = [
        {"uniqueIdentifier": "script:ok", "domainIdentifier": "test.script", "attributes": {"title": "Fine"}},
        "{not json",
        {"domainIdentifier": "test.script", "attributes": {"title": "no identifier"}},
        "",
        {"customAttributeKey": {"name": "bestBefore", "type": "date"}},
        {"uniqueIdentifier": "script:dated", "domainIdentifier": "test.script", "attributes": {"bestBefore": "2027-01-01"}},
        {"uniqueIdentifier": "script:bad-date", "domainIdentifier": "test.script", "attributes": {"bestBefore": "someday"}},
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(l if isinstance(l, str) else json.dumps(l) for l in lines) + "\n")
    code, out, err = run("publish.py", path, "--endpoint", cluster.endpoint, "--batch-size", 2)
    assert code == 1
    assert out.startswith("2 stored, 3 rejected"), out
    rejected = sorted(int(m) for m in re.findall(rf"^{re.escape(str(path))}:(\d+): rejected", err, re.M))
    assert rejected == [2, 3, 7], err
    assert "missing_identifier" in err and "invalid_date" in err


def test_publish_to_nowhere_exits_3(tmp_path):
    code, _, err = run("publish.py", SAMPLES / "green-grocer.jsonl", "--endpoint", f"tcp://127.0.0.1:{free_port()}",
                       "--timeout", 1)
    assert code == 3
    assert "cannot reach" in err


def test_query_prints_batches_as_they_arrive(cluster, grocer):
    code, out, err = run("query.py", 'title == "Crisp"w', "--endpoint", cluster.endpoint, "--fetch", "title,price")
    assert code == 0, err
    assert sorted(line.split("\t")[0] for line in out.splitlines()) == ["produce:cosmic-crisp-apple", "produce:evercrisp-apple"]
    assert "produce:evercrisp-apple\tEverCrisp Apple\t2.79" in out.splitlines()
    headers = re.findall(r"^batch (\d+): (\d+) items?$", err, re.M)
    assert [int(n) for n, _ in headers] == list(range(1, len(headers) + 1))
    assert sum(int(k) for _, k in headers) == 2
    assert re.search(r"^2 items in [0-9.]+ ms$", err, re.M), err


def test_query_json_lines(cluster, grocer):
    code, out, err = run("query.py", 'displayName == "*jalapeno*"cd', "--endpoint", cluster.endpoint,
                         "--fetch", "displayName", "--json")
    assert code == 0, err
    [line] = out.splitlines()
    assert json.loads(line) == {"uniqueIdentifier": "produce:jalapeno", "domainIdentifier": "com.greengrocer.produce.vegetable",
                                "attributes": {"displayName": "Jalapeño Pepper"}}


def test_query_limit_and_sort(cluster, grocer):
    code, out, err = run("query.py", 'keywords == "citrus"', "--endpoint", cluster.endpoint, "--fetch", "price",
                         "--sort", "price", "--limit", 2)
    assert code == 0, err
    citrus = sorted(i["attributes"]["price"] for i in grocer if "citrus" in i["attributes"]["keywords"])
    assert [float(line.split("\t")[1]) for line in out.splitlines()] == citrus[:2]


def test_bad_query_exits_2_and_names_the_position(cluster):
    code, out, err = run("query.py", 'title == "Window"w && (', "--endpoint", cluster.endpoint)
    assert code == 2
    assert out == ""
    assert re.search(r"at position \d+", err), err
    assert "^" in err


def test_query_to_nowhere_exits_3():
    code, _, err = run("query.py", 'title == "x"', "--endpoint", f"tcp://127.0.0.1:{free_port()}", "--timeout", 1)
    assert code == 3
    assert "cannot reach" in err
