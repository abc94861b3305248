/// The search page at `GET /search`: a search box over one index of the
/// REST API (``AlgoliaREST``), as Meilisearch's dashboard offers one, in one
/// HTML document with its CSS and script inline (no external assets, no
/// build step).
///
/// `/search?index=NAME&key=KEY&app=APP&range=ATTRIBUTE` opens it on an
/// index (the form at its top changes them, kept in the browser's local
/// storage). It searches as one types, with InstantSearch's requests: one
/// `POST /1/indexes/*/queries` holding the refined search and, per refined
/// disjunctive facet, the facet's own counts without its refinement. It shows
/// highlighted hits, the index's facets (`attributesForFaceting`, else every
/// facet, the first one disjunctive) with their counts, a numeric range on
/// the `range` attribute (else the first facet with statistics), pages, and
/// a sort selector over the index and its replicas.
///
/// The rendered state is in `data-` attributes (the body's `data-state`,
/// `data-query`, `data-page`, `data-nb-hits`; each hit's `data-object-id`;
/// each facet value's `data-count`), so a test in headless Chromium can
/// compare it with the API (tests/python/test_search_page.py).
enum SearchPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Limelight search</title>
        <style>
        :root { --bg:#f6f7f9; --card:#fff; --ink:#1d2430; --muted:#667085; --line:#e4e7ec; --accent:#3656d6; --mark:#fff1a8; }
        * { box-sizing:border-box; }
        body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--ink); }
        header { display:flex; flex-wrap:wrap; align-items:center; gap:10px; padding:12px 24px; background:#111827; color:#fff; }
        header h1 { font-size:18px; margin:0 12px 0 0; font-weight:600; }
        header input { background:#1f2937; border:1px solid #374151; color:#fff; border-radius:6px; padding:5px 8px; font:inherit; }
        header label { color:#9ca3af; font-size:12px; display:flex; gap:6px; align-items:center; }
        main { display:grid; grid-template-columns:260px 1fr; gap:20px; padding:20px 24px; max-width:1300px; margin:0 auto; }
        #q { width:100%; font-size:18px; padding:10px 14px; border:1px solid var(--line); border-radius:10px; outline:none; }
        #q:focus { border-color:var(--accent); box-shadow:0 0 0 3px #3656d622; }
        .bar { display:flex; align-items:center; gap:12px; margin:12px 0; color:var(--muted); }
        .bar select { margin-left:auto; padding:4px 8px; border-radius:6px; border:1px solid var(--line); font:inherit; }
        aside section { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:10px 12px; margin-bottom:12px; }
        aside h2 { font-size:12px; text-transform:uppercase; letter-spacing:.5px; color:var(--muted); margin:0 0 6px; }
        aside h2 small { text-transform:none; letter-spacing:0; font-weight:400; }
        aside label { display:flex; gap:6px; align-items:center; padding:2px 0; cursor:pointer; }
        aside .count { margin-left:auto; color:var(--muted); font-size:12px; background:#f2f4f7; border-radius:999px; padding:0 7px; }
        .range { display:flex; gap:6px; } .range input { width:50%; padding:4px 6px; border:1px solid var(--line); border-radius:6px; }
        ol#hits { list-style:none; margin:0; padding:0; }
        .hit { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 14px; margin-bottom:10px; }
        .hit h3 { margin:0 0 4px; font-size:16px; } .hit p { margin:0; color:#475467; }
        .hit .meta { color:var(--muted); font-size:12px; margin-top:6px; }
        mark { background:var(--mark); color:inherit; padding:0 1px; border-radius:2px; }
        nav.pages { display:flex; gap:10px; align-items:center; justify-content:center; margin:16px 0; }
        nav.pages button { padding:6px 14px; border-radius:6px; border:1px solid var(--line); background:#fff; cursor:pointer; font:inherit; }
        nav.pages button:disabled { opacity:.4; cursor:default; }
        #error { color:#b42318; }
        </style>
        </head>
        <body data-state="loading">
        <header>
          <h1>Limelight search</h1>
          <label>index <input id="index" size="14"></label>
          <label>app <input id="app" size="10"></label>
          <label>API key <input id="key" type="password" size="28"></label>
        </header>
        <main>
          <aside><div id="facets"></div>
            <section id="range-box" hidden><h2 id="range-name"></h2>
              <div class="range"><input id="range-min" type="number" placeholder="min"><input id="range-max" type="number" placeholder="max"></div>
            </section>
          </aside>
          <div>
            <input id="q" type="search" placeholder="Search…" autocomplete="off" autofocus>
            <div class="bar"><span id="stats"></span><span id="error"></span>
              <select id="sort" title="sort by"></select></div>
            <ol id="hits"></ol>
            <nav class="pages"><button id="prev">← Previous</button><span id="page"></span><button id="next">Next →</button></nav>
          </div>
        </main>
        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        const params = new URLSearchParams(location.search);
        const store = window.localStorage;
        const state = { index: params.get("index") || store.getItem("ll.index") || "",
          app: params.get("app") || store.getItem("ll.app") || "default",
          key: params.get("key") || store.getItem("ll.key") || "",
          sortIndex: null, facets: [], disjunctive: null, range: params.get("range"), refined: {},
          min: null, max: null, page: 0, nbPages: 0, seq: 0, shown: 0 };
        const PRE = "__ll-hl__", POST = "__/ll-hl__";
        for (const f of ["index", "app", "key"]) {
          $(f).value = state[f];
          $(f).addEventListener("change", () => { state[f] = $(f).value; store.setItem("ll." + f, state[f]); start(); });
        }
        function escapeHTML(s) { return String(s).replace(/[&<>"']/g, (c) => ({ "&":"&amp;", "<":"&lt;", ">":"&gt;", '"':"&quot;", "'":"&#39;" })[c]); }
        function marked(s) { return escapeHTML(s).split(escapeHTML(PRE)).join("<mark>").split(escapeHTML(POST)).join("</mark>"); }
        async function api(method, path, body) {
          const url = new URL(path, location.origin);
          url.searchParams.set("x-algolia-api-key", state.key);
          url.searchParams.set("x-algolia-application-id", state.app);
          // text/plain: a simple request, no preflight (as InstantSearch sends it).
          const r = await fetch(url, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { "Content-Type": "text/plain" } });
          const answer = await r.json();
          if (!r.ok) throw new Error(answer.message || r.statusText);
          return answer;
        }
        function encode(p) {
          return Object.entries(p).map(([k, v]) => k + "=" + encodeURIComponent(typeof v === "string" ? v : JSON.stringify(v))).join("&");
        }
        function filters(except) {
          const facetFilters = [];
          for (const [facet, values] of Object.entries(state.refined)) {
            if (facet === except || values.size === 0) continue;
            const group = [...values].map((v) => facet + ":" + v);
            if (facet === state.disjunctive) facetFilters.push(group); else facetFilters.push(...group);
          }
          const numericFilters = [];
          if (state.range && state.min !== null) numericFilters.push(state.range + ">=" + state.min);
          if (state.range && state.max !== null) numericFilters.push(state.range + "<=" + state.max);
          return { facetFilters, numericFilters };
        }
        async function start() {
          document.body.dataset.state = "loading";
          $("error").textContent = "";
          try {
            const settings = await api("GET", "/1/indexes/" + encodeURIComponent(state.index) + "/settings");
            state.facets = (settings.attributesForFaceting || []).map((f) => f.replace(/^(searchable|filterOnly|afterDistinct)\((.*)\)$/, "$2"));
            if (state.facets.length === 0) {
              const probe = await api("POST", "/1/indexes/*/queries", { requests: [{ indexName: state.index, params: encode({ query: "", hitsPerPage: 0, facets: ["*"], maxValuesPerFacet: 10 }) }] });
              const all = probe.results[0].facets || {};
              state.facets = Object.keys(all).filter((f) => Object.keys(all[f]).length > 1 && Object.keys(all[f]).length <= 50).sort().slice(0, 4);
              if (!state.range) state.range = Object.keys(probe.results[0].facets_stats || {}).sort()[0] || null;
            }
            state.disjunctive = state.facets[0] || null;
            const sort = $("sort");
            sort.innerHTML = "";
            for (const name of [state.index, ...(settings.replicas || []).map((r) => r.replace(/^virtual\((.*)\)$/, "$1"))]) {
              const o = document.createElement("option");
              o.value = name; o.textContent = name === state.index ? "relevance" : name;
              sort.appendChild(o);
            }
            state.sortIndex = state.index;
            await search();
          } catch (e) { $("error").textContent = e.message; document.body.dataset.state = "error"; }
        }
        async function search() {
          const seq = ++state.seq;
          const query = $("q").value;
          document.body.dataset.state = "searching";
          const index = state.sortIndex || state.index;
          const base = { query, highlightPreTag: PRE, highlightPostTag: POST, maxValuesPerFacet: 10 };
          const facets = state.range ? [...state.facets, state.range] : state.facets;
          const requests = [{ indexName: index, params: encode({ ...base, ...filters(null), facets, page: state.page, hitsPerPage: 10, attributesToSnippet: ["contentDescription:20", "description:20"] }) }];
          const refinedDisjunctive = state.disjunctive && (state.refined[state.disjunctive] || new Set()).size > 0;
          if (refinedDisjunctive) {
            requests.push({ indexName: index, params: encode({ ...base, ...filters(state.disjunctive), facets: [state.disjunctive], hitsPerPage: 0, page: 0 }) });
          }
          try {
            const answer = await api("POST", "/1/indexes/*/queries", { requests });
            if (seq !== state.seq) return;  // a later keystroke's answer is on its way
            const main = answer.results[0];
            const counts = Object.assign({}, main.facets || {});
            if (refinedDisjunctive) {
              // The facet's own counts, without its refinement; a refined value
              // past its top values takes its count from the refined search.
              const own = Object.assign({}, answer.results[1].facets[state.disjunctive] || {});
              const refinedCounts = (main.facets || {})[state.disjunctive] || {};
              for (const v of state.refined[state.disjunctive]) if (!(v in own)) own[v] = refinedCounts[v] || 0;
              counts[state.disjunctive] = own;
            }
            render(query, main, counts);
          } catch (e) {
            if (seq !== state.seq) return;
            $("error").textContent = e.message; document.body.dataset.state = "error";
          }
        }
        function render(query, r, counts) {
          state.nbPages = r.nbPages;
          $("stats").textContent = r.nbHits + (r.nbHits === 1 ? " result" : " results") + " · " + r.processingTimeMS + " ms";
          const hits = $("hits");
          hits.innerHTML = "";
          for (const h of r.hits) {
            const li = document.createElement("li");
            li.className = "hit"; li.dataset.objectId = h.objectID;
            const hl = h._highlightResult || {};
            const titleKey = ["title", "name", "displayName"].find((k) => hl[k] && typeof hl[k].value === "string");
            const title = titleKey ? marked(hl[titleKey].value) : escapeHTML(h.objectID);
            const sn = h._snippetResult || {};
            const bodyKey = ["contentDescription", "description"].find((k) => sn[k]);
            const body = bodyKey ? marked(sn[bodyKey].value) : (hl.displayName && titleKey !== "displayName" ? marked(hl.displayName.value) : "");
            const meta = state.facets.filter((f) => h[f] !== undefined).map((f) => escapeHTML(f) + ": " + escapeHTML(h[f])).join(" · ");
            li.innerHTML = "<h3>" + title + "</h3><p>" + body + "</p><div class=meta>" + meta + "</div>";
            hits.appendChild(li);
          }
          const box = $("facets");
          box.innerHTML = "";
          for (const facet of state.facets) {
            const section = document.createElement("section");
            section.dataset.facet = facet;
            section.innerHTML = "<h2>" + escapeHTML(facet) + (facet === state.disjunctive ? " <small>(any of)</small>" : "") + "</h2>";
            const values = Object.entries(counts[facet] || {});
            const refined = state.refined[facet] || new Set();
            for (const v of refined) if (!values.some(([x]) => x === v)) values.push([v, 0]);
            values.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
            for (const [value, n] of values) {
              const label = document.createElement("label");
              label.dataset.value = value; label.dataset.count = n;
              label.innerHTML = "<input type=checkbox" + (refined.has(value) ? " checked" : "") + "> <span>" + escapeHTML(value) + "</span><span class=count>" + n + "</span>";
              label.querySelector("input").addEventListener("change", (e) => {
                const set = state.refined[facet] || (state.refined[facet] = new Set());
                if (e.target.checked) set.add(value); else set.delete(value);
                state.page = 0; search();
              });
              section.appendChild(label);
            }
            box.appendChild(section);
          }
          const stats = (r.facets_stats || {})[state.range];
          $("range-box").hidden = !state.range;
          if (state.range) {
            $("range-name").textContent = state.range;
            if (stats) { $("range-min").placeholder = "min " + stats.min; $("range-max").placeholder = "max " + stats.max; }
          }
          $("page").textContent = r.nbPages ? "page " + (r.page + 1) + " of " + r.nbPages : "";
          $("prev").disabled = state.page <= 0;
          $("next").disabled = state.page + 1 >= r.nbPages;
          Object.assign(document.body.dataset, { state: "ready", query, page: String(r.page), nbHits: String(r.nbHits), renders: String(++state.shown) });
        }
        $("q").addEventListener("input", () => { state.page = 0; search(); });
        $("prev").addEventListener("click", () => { state.page = Math.max(0, state.page - 1); search(); });
        $("next").addEventListener("click", () => { state.page += 1; search(); });
        $("sort").addEventListener("change", () => { state.sortIndex = $("sort").value; state.page = 0; search(); });
        for (const [id, field] of [["range-min", "min"], ["range-max", "max"]]) {
          $(id).addEventListener("change", () => { const v = $(id).value; state[field] = v === "" ? null : Number(v); state.page = 0; search(); });
        }
        if (state.index && state.key) start(); else { document.body.dataset.state = "setup"; $("error").textContent = "name an index and an API key above"; }
        </script>
        </body>
        </html>
        """#
}
