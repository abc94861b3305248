"""The search page (`GET /search`) in headless Chromium, on a cluster as
``limelight up`` starts it (keys required) holding the Debian sample as an
Algolia index: typed letter by letter, its hits and facet counts must be the
REST API's; a facet clicked, a page turned, a range set and a replica chosen
must show what the JSON Lines say. A screenshot is kept in .test-output.

chromium must be installed (scripts/install-deps --ops): this test fails,
not skips, without it.
"""

import collections
import json
import os
import pathlib
import urllib.parse
import urllib.request

import pytest

from devtools import Browser
from harness import REPO, keyed_cluster, read_jsonl

INDEX = "packages"
ARTIFACTS = pathlib.Path(os.environ.get("LIMELIGHT_ARTIFACTS") or REPO / ".test-output")


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    yield from keyed_cluster(tmp_path_factory, "searchpage", shards=3)


def rest(cluster, key, method, path, body=None):
    request = urllib.request.Request(f"{cluster.rest_url}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"X-Algolia-API-Key": key, "X-Algolia-Application-Id": "default"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def page(keyed):
    key = (keyed.data / "limelight.key").read_text().strip()
    records = [dict(i["attributes"], objectID=i["uniqueIdentifier"]) for i in read_jsonl("debian-packages.jsonl")]
    rest(keyed, key, "POST", f"/1/indexes/{INDEX}/batch",
         {"requests": [{"action": "addObject", "body": r} for r in records]})
    rest(keyed, key, "PUT", f"/1/indexes/{INDEX}/settings",
         {"attributesForFaceting": ["section", "priority", "architecture"], "replicas": ["packages_by_size"]})
    rest(keyed, key, "PUT", "/1/indexes/packages_by_size/settings", {"ranking": ["desc(installedSize)"]})
    browser = Browser()
    try:
        query = urllib.parse.urlencode({"index": INDEX, "key": key, "app": "default", "range": "installedSize"})
        browser.navigate(f"{keyed.rest_url}/search?{query}")
        browser.wait_for("document.body.dataset.state === 'ready'")
        yield browser, keyed, key, records
    finally:
        browser.close()


def shown(browser):
    """What the page shows: hit ids, the count, the page, each facet's counts."""
    return browser.evaluate("""(() => ({
        ids: [...document.querySelectorAll('.hit')].map(h => h.dataset.objectId),
        nbHits: Number(document.body.dataset.nbHits), page: Number(document.body.dataset.page),
        renders: Number(document.body.dataset.renders),
        facets: Object.fromEntries([...document.querySelectorAll('#facets section')].map(s =>
            [s.dataset.facet, Object.fromEntries([...s.querySelectorAll('label')].map(l => [l.dataset.value, Number(l.dataset.count)]))])),
    }))()""")


def after(browser, renders):
    """Waits for the render after `renders` and for the page to be ready."""
    browser.wait_for(f"Number(document.body.dataset.renders) > {renders} && document.body.dataset.state === 'ready'")
    return shown(browser)


def top(counter, n=10):
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


def test_the_search_page_in_chromium(page, capsys):
    browser, cluster, key, records = page
    # Served from the binary, with no external assets.
    with urllib.request.urlopen(f"{cluster.rest_url}/search", timeout=10) as r:
        body = r.read()
        assert r.headers["Content-Type"].startswith("text/html")
    assert b"http://" not in body and b"https://" not in body and b"<script src" not in body

    first = shown(browser)
    assert first["nbHits"] == len(records)
    assert first["facets"]["section"] == top(collections.Counter(r["section"] for r in records))

    # Typed letter by letter: after each letter, the page shows what the API answers.
    browser.evaluate("document.getElementById('q').focus()")
    typed = ""
    for letter in "network":
        typed += letter
        renders = shown(browser)["renders"]
        browser.type(letter)
        browser.wait_for(f"document.body.dataset.query === {json.dumps(typed)} && document.body.dataset.state === 'ready'")
        now = shown(browser)
        assert now["renders"] > renders
        api = rest(cluster, key, "POST", f"/1/indexes/{INDEX}/query",
                   {"query": typed, "hitsPerPage": 10, "facets": ["section", "priority", "architecture", "installedSize"],
                    "maxValuesPerFacet": 10})
        assert now["ids"] == [h["objectID"] for h in api["hits"]], typed
        assert now["nbHits"] == api["nbHits"], typed
        assert now["facets"]["section"] == api["facets"].get("section", {}), typed
    assert shown(browser)["nbHits"] > 0

    # Back to everything, then a click on a facet value: the disjunctive
    # facet keeps its counts without its own refinement.
    renders = shown(browser)["renders"]
    browser.evaluate("(() => { const q = document.getElementById('q'); q.value = ''; q.dispatchEvent(new Event('input')); })()")
    assert after(browser, renders)["nbHits"] == len(records)
    admin = [r for r in records if r.get("section") == "admin"]
    renders = shown(browser)["renders"]
    browser.evaluate("document.querySelector('#facets section[data-facet=section] label[data-value=admin] input').click()")
    now = after(browser, renders)
    assert now["nbHits"] == len(admin)
    assert now["facets"]["section"] == top(collections.Counter(r["section"] for r in records))
    assert now["facets"]["priority"] == top(collections.Counter(r["priority"] for r in admin if "priority" in r))

    # A second value of the disjunctive facet widens the search (OR).
    other = next(v for v in top(collections.Counter(r["section"] for r in records)) if v != "admin")
    renders = now["renders"]
    browser.evaluate(f"document.querySelector('#facets section[data-facet=section] label[data-value={json.dumps(other)}] input').click()")
    both = admin + [r for r in records if r.get("section") == other]
    now = after(browser, renders)
    assert now["nbHits"] == len(both)

    # The next page is the API's second page of the same search.
    renders = now["renders"]
    browser.evaluate("document.getElementById('next').click()")
    now = after(browser, renders)
    api = rest(cluster, key, "POST", f"/1/indexes/{INDEX}/query",
               {"query": "", "hitsPerPage": 10, "page": 1, "facetFilters": [["section:admin", f"section:{other}"]]})
    assert now["page"] == 1 and now["ids"] == [h["objectID"] for h in api["hits"]]

    # A numeric range on installedSize.
    sizes = sorted(r["installedSize"] for r in both if "installedSize" in r)
    least = sizes[len(sizes) // 3]
    big = [r for r in both if r.get("installedSize", -1) >= least]
    assert 3 <= len(big) < len(both)
    renders = now["renders"]
    browser.evaluate(f"(() => {{ const m = document.getElementById('range-min'); m.value = '{least}'; "
                     "m.dispatchEvent(new Event('change')); })()")
    now = after(browser, renders)
    assert now["nbHits"] == len(big) and now["page"] == 0

    # The replica sorts by size, largest first.
    renders = now["renders"]
    browser.evaluate("(() => { const s = document.getElementById('sort'); s.value = 'packages_by_size'; s.dispatchEvent(new Event('change')); })()")
    now = after(browser, renders)
    by_size = sorted(big, key=lambda r: -r["installedSize"])
    assert now["nbHits"] == len(big)
    size = {r["objectID"]: r["installedSize"] for r in big}
    assert [size[i] for i in now["ids"]] == [r["installedSize"] for r in by_size[:10]]

    # And a word typed on top of it all, for the screenshot's highlights.
    renders = now["renders"]
    browser.evaluate("document.getElementById('q').focus()")
    browser.type("lib")
    browser.wait_for("document.body.dataset.query === 'lib' && document.body.dataset.state === 'ready'")
    now = shown(browser)
    assert now["renders"] > renders
    assert browser.evaluate("document.querySelectorAll('.hit mark').length") > 0
    # Each refined value shows its count, even past the facet's top values.
    api = rest(cluster, key, "POST", "/1/indexes/packages_by_size/query",
               {"query": "lib", "hitsPerPage": 0, "facets": ["section"], "numericFilters": [f"installedSize>={least}"],
                "facetFilters": [["section:admin", f"section:{other}"]]})
    for value in ("admin", other):
        assert now["facets"]["section"][value] == api["facets"]["section"].get(value, 0), value

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "search-page.png"
    shot.unlink(missing_ok=True)
    browser.screenshot(shot)
    assert shot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\nsearch page screenshot: {shot}")
