"""What a new user meets first, on a cluster started as ``limelight up``
starts it (keys required): declarations that conflict with stored values,
huge lines in a JSONL file, keys found the same way by every client, one
exit code for a refused key, errors in ``--params`` that point at the fault,
``--fetch`` columns and ``facets: ["*"]``."""

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from harness import CLIENTS, SAMPLES, bin_dir, keyed_cluster, read_jsonl
from limelight_client import Client, LimelightError

EXIT_NOT_ALLOWED = 6


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    yield from keyed_cluster(tmp_path_factory, "first-contact", shards=4)


def clean_env(**extra):
    """The environment without any LIMELIGHT_* variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_")}
    env.update(extra)
    return env


def run(cluster, *args, cwd=None, env=None, input=None):
    """Runs ``limelight ARGS`` against the cluster; by default from the folder
    that holds the cluster's data folder, as a user of ``limelight up`` does."""
    command = [str(bin_dir() / "limelight"), *args, "--endpoint", cluster.endpoint]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, input=input,
                          cwd=cwd or cluster.data, env=env or clean_env(LIMELIGHT_DATA=str(cluster.data)))


def python_command(cluster, script, *args, cwd, env):
    """Runs the Python client's command (``publish.py`` is ``limelight-publish``)."""
    return subprocess.run([sys.executable, str(CLIENTS / script), *args, "--endpoint", cluster.endpoint],
                          capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def admin_key(cluster):
    return (cluster.data / "limelight.key").read_text().strip()


# -- 1. declarations that conflict ----------------------------------------------


def test_a_declaration_of_another_type_than_the_declared_one_is_refused(keyed, tmp_path):
    assert run(keyed, "declare", "fc_dueAt", "--type", "date").returncode == 0
    items = tmp_path / "due.jsonl"
    items.write_text(json.dumps({"uniqueIdentifier": "due-1", "attributes": {"title": "due", "fc_dueAt": "2026-01-01T00:00:00Z"}}) + "\n")
    assert run(keyed, "publish", str(items)).returncode == 0
    done = run(keyed, "declare", "fc_dueAt", "--type", "number")
    assert done.returncode == 2, done.stderr
    assert "'fc_dueAt' is declared date; declaring it number conflicts" in done.stderr, done.stderr
    # Nothing changed: dates are still accepted, numbers still refused.
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"uniqueIdentifier": "due-2", "attributes": {"title": "due", "fc_dueAt": "2026-02-01T00:00:00Z"}}) + "\n"
                    + json.dumps({"uniqueIdentifier": "due-3", "attributes": {"title": "due", "fc_dueAt": 5}}) + "\n")
    done = run(keyed, "publish", str(more))
    assert done.returncode == 1 and "due-3" in done.stderr and "due-2" not in done.stderr, done.stderr


def test_a_declaration_that_conflicts_with_one_shards_values_changes_no_shard(keyed):
    """Values typed by their JSON live on one shard (one domain); the other
    shards hold none. The declaration is refused by all of them, naming the
    values, and no shard takes it: text is still accepted on every shard."""
    key = admin_key(keyed)
    with Client(keyed.endpoint, timeout=30, key=key) as c:
        ack = c.publish([{"uniqueIdentifier": f"size-{i}", "domainIdentifier": "org.sizes",
                          "attributes": {"title": "sized", "fc_size": "big"}} for i in range(3)])
        assert ack["stored"] == 3, ack
        with pytest.raises(LimelightError) as e:
            c.declare([{"name": "fc_size", "type": "number"}])
        assert e.value.code == "bad_declaration"
        assert "'fc_size' holds 3 text values (item 'size-0' among them)" in e.value.message, e.value.message
        # Every shard still types fc_size by its JSON value: text in other domains is stored.
        ack = c.publish([{"uniqueIdentifier": f"other-{d}", "domainIdentifier": d,
                          "attributes": {"title": "sized", "fc_size": "small"}} for d in ("a", "b", "c", "d", "e", "f", "g", "h")])
        assert ack["stored"] == 8 and ack["rejected"] == 0, ack


def test_a_conflict_never_names_another_apps_items(keyed):
    with Client(keyed.endpoint, timeout=30, key=(keyed.data / "master.key").read_text().strip()) as boss:
        other = boss.keys("create", app="fc-other", role="admin")["apiKey"]
    with Client(keyed.endpoint, timeout=30, key=other) as c:
        assert c.publish([{"uniqueIdentifier": "secret-name", "attributes": {"title": "x", "fc_flag": True}}])["stored"] == 1
    with Client(keyed.endpoint, timeout=30, key=admin_key(keyed)) as c:
        with pytest.raises(LimelightError) as e:
            c.declare([{"name": "fc_flag", "type": "text"}])
        assert "holds 1 boolean value;" in e.value.message and "secret-name" not in e.value.message, e.value.message


# -- 2. huge lines -----------------------------------------------------------------


def test_a_huge_line_is_one_rejected_item_and_the_rest_of_the_file_is_stored(keyed, tmp_path):
    path = tmp_path / "huge.jsonl"
    with open(path, "w") as f:
        f.write(json.dumps({"uniqueIdentifier": "huge-before", "attributes": {"title": "before the huge line"}}) + "\n")
        f.write(json.dumps({"uniqueIdentifier": "huge", "attributes": {"title": "x" * 40_000_000}}) + "\n")
        f.write(json.dumps({"uniqueIdentifier": "huge-after", "attributes": {"title": "after the huge line"}}) + "\n")
    huge_bytes = 40_000_000 + len(json.dumps({"uniqueIdentifier": "huge", "attributes": {"title": ""}}))
    for command in (lambda: run(keyed, "publish", str(path)),
                    lambda: python_command(keyed, "publish.py", str(path), cwd=keyed.data,
                                           env=clean_env(LIMELIGHT_DATA=str(keyed.data)))):
        done = command()
        assert done.returncode == 1, done.stderr
        assert f"{path}:2: rejected" in done.stderr and f"item is {huge_bytes} bytes, more than the limit of 16777216" in done.stderr, done.stderr
    with Client(keyed.endpoint, timeout=30, key=admin_key(keyed)) as c:
        found = c.search({"query": "huge line"})
        assert sorted(h["objectID"] for h in found["hits"]) == ["huge-after", "huge-before"]


def test_batches_are_cut_by_size_so_large_items_fit_the_message_limit(keyed, tmp_path):
    """Five items of 7 MB (28 texts of 250 KB each, under the limit of one
    text): 35 MB in one batch of the default count would exceed the 32 MiB
    message limit; cut by size, every one is stored."""
    assert run(keyed, "declare", "fc_blob", "--type", "text", "--multi-valued", "--no-searchable").returncode == 0
    path = tmp_path / "large.jsonl"
    with open(path, "w") as f:
        for i in range(5):
            f.write(json.dumps({"uniqueIdentifier": f"large-{i}", "attributes": {"title": f"large item {i}", "fc_blob": ["y" * 250_000] * 28}}) + "\n")
    done = run(keyed, "publish", str(path))
    assert done.returncode == 0 and "published 5 items" in done.stderr, done.stderr
    done = python_command(keyed, "publish.py", str(path), cwd=keyed.data, env=clean_env(LIMELIGHT_DATA=str(keyed.data)))
    assert done.returncode == 0 and "5 stored, 0 rejected" in done.stdout, done.stdout + done.stderr


# -- 3 and 4. keys, found alike, refused with one exit code -------------------------


def test_the_python_client_finds_the_key_that_up_wrote(keyed, tmp_path, monkeypatch):
    for name in ("LIMELIGHT_KEY", "LIMELIGHT_KEY_FILE", "LIMELIGHT_DATA"):
        monkeypatch.delenv(name, raising=False)
    # From the folder that holds limelight-data, as the README shows it.
    (tmp_path / "limelight-data").mkdir()
    (tmp_path / "limelight-data" / "limelight.key").write_text(admin_key(keyed) + "\n")
    monkeypatch.chdir(tmp_path)
    with Client(keyed.endpoint, timeout=30) as c:
        assert c.key == admin_key(keyed)
        assert c.publish([{"uniqueIdentifier": "found-key", "attributes": {"title": "found key"}}])["stored"] == 1
    # From elsewhere, with LIMELIGHT_DATA; an explicit empty key sends none.
    monkeypatch.chdir(keyed.data.parent)
    monkeypatch.setenv("LIMELIGHT_DATA", str(keyed.data))
    with Client(keyed.endpoint, timeout=30) as c:
        assert c.search({"query": "found key"})["nbHits"] == 1
    with Client(keyed.endpoint, timeout=30, key="") as c:
        with pytest.raises(LimelightError) as e:
            c.search({"query": "found key"})
        assert e.value.code == "key_required"
    monkeypatch.setenv("LIMELIGHT_KEY", "from-the-variable")
    with Client(keyed.endpoint) as c:
        assert c.key == "from-the-variable"


def test_limelight_publish_reads_the_key_file_and_says_a_refusal_once(keyed, tmp_path):
    items = SAMPLES / "green-grocer.jsonl"
    done = python_command(keyed, "publish.py", str(items), cwd=keyed.data.parent, env=clean_env(LIMELIGHT_DATA=str(keyed.data)))
    assert done.returncode == 0, done.stderr
    nowhere = tmp_path / "elsewhere"
    nowhere.mkdir()
    done = python_command(keyed, "publish.py", str(items), cwd=nowhere, env=clean_env())
    assert done.returncode == EXIT_NOT_ALLOWED, done.stderr
    assert done.stderr.count("key_required") == 1, done.stderr
    assert str(nowhere / "limelight-data" / "limelight.key") in done.stderr, done.stderr


@pytest.mark.parametrize("args", [
    ("query", 'title == "kiwi"c'),
    ("search", "--params", '{"query": "kiwi"}'),
    ("predicate", "--record-type", "public.item", "title == 'Kiwi'"),
    ("declare", "fc_other", "--type", "text"),
    ("delete", "--ids", "nothing"),
    ("stats",),
    ("keys", "list"),
    ("suggest", "kiw"),
    ("publish", str(SAMPLES / "green-grocer.jsonl")),
])
def test_a_refused_key_exits_6_in_every_command(keyed, tmp_path, args):
    # No key anywhere: key_required, with where the key file was looked for.
    done = run(keyed, *args, cwd=tmp_path, env=clean_env())
    assert done.returncode == EXIT_NOT_ALLOWED, (done.returncode, done.stderr)
    assert "key_required" in done.stderr and str(tmp_path / "limelight-data" / "limelight.key") in done.stderr, done.stderr
    # A key the cluster does not know.
    done = run(keyed, *args, cwd=tmp_path, env=clean_env(LIMELIGHT_KEY="not-a-key-of-this-cluster"))
    assert done.returncode == EXIT_NOT_ALLOWED, (done.returncode, done.stderr)


def test_a_search_key_that_writes_is_forbidden_with_exit_6(keyed):
    with Client(keyed.endpoint, timeout=30, key=admin_key(keyed)) as c:
        search_key = c.keys("create", role="search")["apiKey"]
    done = run(keyed, "publish", str(SAMPLES / "green-grocer.jsonl"), env=clean_env(LIMELIGHT_KEY=search_key))
    assert done.returncode == EXIT_NOT_ALLOWED and done.stderr.count("forbidden") == 1, done.stderr
    done = run(keyed, "declare", "fc_x", "--type", "text", env=clean_env(LIMELIGHT_KEY=search_key))
    assert done.returncode == EXIT_NOT_ALLOWED and "forbidden" in done.stderr, done.stderr
    done = python_command(keyed, "query.py", 'title == "kiwi"', cwd=keyed.data, env=clean_env(LIMELIGHT_KEY="not-a-key"))
    assert done.returncode == EXIT_NOT_ALLOWED, done.stderr


# -- 6, 7, 9. params errors, fetched columns, every facet ----------------------------


def test_malformed_params_name_the_option_line_and_column(keyed):
    done = run(keyed, "search", "--params", '{"query": "kiwi",\n "facets": ["*"] "hitsPerPage": 1}')
    assert done.returncode == 2, done.stderr
    assert "--params is not valid JSON: line 2, column 18: expected ',' or '}' after a member, found '\"'" in done.stderr, done.stderr
    assert "NSCocoaErrorDomain" not in done.stderr
    assert ' "facets": ["*"] "hitsPerPage": 1}\n' + " " * 19 + "^" in done.stderr, done.stderr


def test_query_without_json_prints_fetched_attributes_as_columns(keyed):
    assert run(keyed, "publish", str(SAMPLES / "green-grocer.jsonl")).returncode == 0
    done = run(keyed, "query", 'title == "Gala Apple"', "--fetch", "title,price,keywords,nothing")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["uniqueIdentifier\ttitle\tprice\tkeywords\tnothing",
                                        "produce:gala-apple\tGala Apple\t1.49\tapple, sweet, snack\t"], done.stdout


def test_facets_star_counts_every_facet_attribute(keyed):
    items = read_jsonl("debian-packages.jsonl")
    with Client(keyed.endpoint, timeout=30, key=admin_key(keyed)) as c:
        c.delete(all=True)
        for start in range(0, len(items), 100):
            assert c.publish(items[start:start + 100])["rejected"] == 0
        answer = c.search({"query": "", "facets": ["*"], "hitsPerPage": 0, "maxValuesPerFacet": 1000})
        named = c.search({"query": "", "facets": ["section", "architecture"], "hitsPerPage": 0, "maxValuesPerFacet": 1000})
    facets = answer["facets"]
    # Categories are counted; prose, identifiers (url) and locations are not.
    assert {"section", "architecture", "priority", "depends", "authorNames", "installedSize"} <= set(facets), sorted(facets)
    assert not {"title", "displayName", "contentDescription", "url"} & set(facets), sorted(facets)
    for name in ("section", "architecture", "priority"):
        expected = Counter(i["attributes"][name] for i in items if name in i["attributes"])
        assert facets[name] == dict(expected), name
    assert named["facets"]["section"] == facets["section"]
    assert answer["facets_stats"]["installedSize"]["max"] == max(i["attributes"]["installedSize"] for i in items)
