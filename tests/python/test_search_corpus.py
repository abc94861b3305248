"""Parameter search on real corpora, checked against counts computed here,
independently, from the JSON Lines: the whole Debian package index (63,666
items) and GeoNames' cities of 15,000 people or more, in one cluster.

Facet counts, disjunctive counts, facet stats, numeric filters, `filters`
expressions, paging and the geo radius must equal what this file counts;
navigational queries must find the package named so first, and with one
typo in the top 3.
"""

import collections
import json
import math
import pathlib
import re
import subprocess
import sys

import pytest

from harness import Client, publish_all, start_cluster, stop_cluster

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "datasets"
EARTH = 6_371_008.8


def corpus(script, *args):
    out = subprocess.run([sys.executable, str(SHARED / script), *args], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    debian = corpus("debian_packages.py")
    cities = corpus("geonames_cities.py", "--size", "15000")
    assert len(debian) == 63_666 and len(cities) > 20_000
    cluster = start_cluster(tmp_path_factory.mktemp("corpus"), shards=3)
    try:
        assert publish_all(cluster.endpoint, debian + cities, batch_size=1000) == len(debian) + len(cities)
        with Client(cluster.endpoint, timeout=60) as c:
            yield c, debian, cities
    finally:
        stop_cluster(cluster.process)


def attr(item, name):
    return item["attributes"].get(name)


def test_facet_counts_and_stats_over_the_whole_corpus(world):
    c, debian, cities = world
    r = c.search({"facets": ["section", "architecture", "priority", "installedSize"], "maxValuesPerFacet": 1000,
                  "hitsPerPage": 0, "filters": "contentType:org.debian.binary-package"})
    assert r["nbHits"] == len(debian)
    for facet in ["section", "architecture", "priority"]:
        want = collections.Counter(attr(i, facet) for i in debian if attr(i, facet) is not None)
        got = r["facets"][facet]
        top = dict(sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))[:1000])
        assert got == top, facet
    sizes = [attr(i, "installedSize") for i in debian if isinstance(attr(i, "installedSize"), (int, float))]
    stats = r["facets_stats"]["installedSize"]
    assert stats["min"] == min(sizes) and stats["max"] == max(sizes)
    assert stats["sum"] == pytest.approx(sum(sizes))
    assert stats["avg"] == pytest.approx(sum(sizes) / len(sizes))


def test_disjunctive_facets_in_one_request(world):
    c, debian, _ = world
    r = c.search({"facets": ["section", "architecture"], "disjunctiveFacets": ["section"], "maxValuesPerFacet": 1000,
                  "facetFilters": [["section:utils", "section:admin"], "architecture:all"], "hitsPerPage": 0})
    in_arch = [i for i in debian if attr(i, "architecture") == "all"]
    picked = [i for i in in_arch if attr(i, "section") in ("utils", "admin")]
    assert r["nbHits"] == len(picked)
    # section: counted without its own refinement, with architecture:all applied.
    assert r["facets"]["section"] == dict(collections.Counter(attr(i, "section") for i in in_arch))
    # architecture (conjunctive): over the result.
    assert r["facets"]["architecture"] == {"all": len(picked)}


def test_numeric_filters_and_filters_expressions(world):
    c, debian, _ = world
    def count(**params):
        return c.search({"hitsPerPage": 0, **params})["nbHits"]
    size = lambda i: attr(i, "installedSize") if isinstance(attr(i, "installedSize"), (int, float)) else None
    assert count(numericFilters=["installedSize >= 10000"]) == sum(1 for i in debian if (size(i) or -1) >= 10000)
    assert count(numericFilters=["installedSize:100 TO 200"]) == sum(1 for i in debian if size(i) is not None and 100 <= size(i) <= 200)
    assert count(numericFilters=[["installedSize < 5", "installedSize > 500000"]]) == sum(
        1 for i in debian if size(i) is not None and (size(i) < 5 or size(i) > 500000))
    want = sum(1 for i in debian if attr(i, "section") in ("utils", "admin") and (size(i) or 0) > 500
               and attr(i, "architecture") != "all")
    assert count(filters="(section:utils OR section:admin) AND installedSize > 500 AND NOT architecture:all") == want
    want = sum(1 for i in debian if attr(i, "priority") == "required" or attr(i, "priority") == "important")
    assert count(filters="priority:required OR priority:important") == want


def test_paging_walks_a_result_once_in_order(world):
    c, debian, _ = world
    params = {"filters": "section:games AND installedSize > 20000", "hitsPerPage": 20, "attributesToRetrieve": ["title"]}
    want = {i["uniqueIdentifier"] for i in debian if attr(i, "section") == "games" and (attr(i, "installedSize") or 0) > 20000}
    first = c.search(params)
    assert first["nbHits"] == len(want) and first["nbPages"] == math.ceil(len(want) / 20)
    seen = []
    for page in range(first["nbPages"]):
        seen += [h["objectID"] for h in c.search({**params, "page": page})["hits"]]
    assert len(seen) == len(set(seen)) == len(want) and set(seen) == want
    # A page by offset and length is the same slice.
    assert [h["objectID"] for h in c.search({**params, "offset": 25, "length": 10})["hits"]] == seen[25:35]


def haversine(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH * math.asin(min(1, math.sqrt(a)))


@pytest.mark.parametrize("center,radius", [((48.8566, 2.3522), 100_000), ((-33.87, 151.21), 250_000), ((64.1, -21.9), 400_000)])
def test_geo_radius_equals_distances_computed_here(world, center, radius):
    c, _, cities = world
    lat, lon = center
    within = sorted((haversine(lat, lon, attr(i, "latitude"), attr(i, "longitude")), i["uniqueIdentifier"]) for i in cities
                    if haversine(lat, lon, attr(i, "latitude"), attr(i, "longitude")) <= radius)
    # Leave out cities right on the edge, where rounding could go either way.
    assert all(abs(d - radius) > 1 for d, _ in within)
    r = c.search({"aroundLatLng": f"{lat}, {lon}", "aroundRadius": radius, "hitsPerPage": 1000, "attributesToRetrieve": ["title"]})
    assert r["nbHits"] == len(within)
    ids = [h["objectID"] for h in r["hits"]]
    assert set(ids) == {u for _, u in within}
    distances = [h["_geoDistance"] for h in r["hits"]]
    assert distances == sorted(distances), "without a query, nearest first"
    for h in r["hits"]:
        want = next(d for d, u in within if u == h["objectID"])
        assert abs(h["_geoDistance"] - want) <= 1


def test_inside_bounding_box(world):
    c, _, cities = world
    box = [40.0, -10.0, 52.0, 10.0]
    want = {i["uniqueIdentifier"] for i in cities if 40 <= attr(i, "latitude") <= 52 and -10 <= attr(i, "longitude") <= 10}
    r = c.search({"insideBoundingBox": [box], "hitsPerPage": 0, "facets": ["countryCode"], "maxValuesPerFacet": 1000})
    assert r["nbHits"] == len(want)
    assert sum(r["facets"]["countryCode"].values()) == len(want)


NAMES = ["vim", "nginx", "postgresql", "git", "gimp", "inkscape", "emacs", "curl", "tmux", "firefox-esr", "python3", "htop"]
TYPOS = {"nginx": "ngnix", "postgresql": "postgersql", "inkscape": "inkscpae", "emacs": "emcas", "firefox-esr": "firefx-esr",
         "python3": "pyhton3", "gimp": "gimpp"}


@pytest.mark.parametrize("name", NAMES)
def test_a_package_name_finds_that_package_first(world, name):
    c, _, _ = world
    r = c.search({"query": name, "hitsPerPage": 5, "attributesToRetrieve": ["title"]})
    assert r["hits"][0]["objectID"] == f"deb:{name}", [h["objectID"] for h in r["hits"]]
    assert r["hits"][0]["_highlightResult"]["title"]["matchLevel"] == "full"


@pytest.mark.parametrize("name,typo", sorted(TYPOS.items()))
def test_one_typo_still_finds_it_in_the_top_3(world, name, typo):
    c, _, _ = world
    r = c.search({"query": typo, "hitsPerPage": 3, "attributesToRetrieve": ["title"], "getRankingInfo": True})
    assert f"deb:{name}" in [h["objectID"] for h in r["hits"]], [h["objectID"] for h in r["hits"]]


TOKEN = re.compile(r"[A-Za-z0-9]+")


def tokens(item):
    """Every ASCII token of an item's text attributes, lowercased, with camel-case parts."""
    out = set()
    for v in item["attributes"].values():
        for s in (v if isinstance(v, list) else [v]):
            if not isinstance(s, str):
                continue
            for t in TOKEN.findall(s):
                out.add(t.lower())
                out.update(p.lower() for p in re.sub(r"([a-z])([A-Z])", r"\1 \2", t).split())
    return out


def test_free_text_counts_match_a_plain_scan(world):
    c, debian, _ = world
    index = [(i, tokens(i)) for i in debian]
    for query in ["network", "python library", "vector graphics editor"]:
        words = query.split()
        # Exact words only: no prefix (prefixNone), no typos; every word must match.
        want = {i["uniqueIdentifier"] for i, ts in index if all(w in ts for w in words)}
        r = c.search({"query": query, "queryType": "prefixNone", "typoTolerance": False, "hitsPerPage": 0,
                      "filters": "contentType:org.debian.binary-package"})
        assert r["nbHits"] == len(want), query
        # The last word as a prefix adds the tokens that start with it.
        want_prefix = {i["uniqueIdentifier"] for i, ts in index
                       if all(w in ts for w in words[:-1]) and any(t.startswith(words[-1]) for t in ts)}
        r = c.search({"query": query, "typoTolerance": False, "hitsPerPage": 0, "filters": "contentType:org.debian.binary-package"})
        assert r["nbHits"] == len(want_prefix), query


def test_suggestions_for_pyth_include_python_counted_by_a_plain_scan(world):
    c, debian, cities = world
    reply = c.suggest("pyth", limit=10)
    suggestions = reply["suggestions"]
    assert reply["failedShards"] == []
    assert "python" in [s["suggestion"] for s in suggestions]
    assert all(s["suggestion"].startswith("pyth") for s in suggestions)
    counts = [s["count"] for s in suggestions]
    assert counts == sorted(counts, reverse=True)
    # One word: the items that hold it as a token, counted here over every item.
    want = sum(1 for i in debian + cities if "python" in tokens(i))
    assert next(s["count"] for s in suggestions if s["suggestion"] == "python") == want
    # Several words: the earlier kept, each count what a search for the words (exact, no typos) finds.
    for s in c.suggest("python libr", limit=5)["suggestions"]:
        assert s["suggestion"].startswith("python libr")
        r = c.search({"query": s["suggestion"], "queryType": "prefixNone", "typoTolerance": False, "hitsPerPage": 0})
        assert r["nbHits"] == s["count"], s
