/// The status page at `GET /`: one HTML document with its CSS and script
/// inline, no external assets (an operator's browser may reach the coordinator
/// and nothing else), polling `/stats` every two seconds.
///
/// Every figure it shows carries its raw value in `data-value` beside the
/// formatted text, so a test can compare the rendered page with `/stats`
/// (tests/python/test_http.py does, in headless Chromium).
enum StatusPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Limelight</title>
        <style>
        :root { --bg:#f6f7f9; --card:#fff; --ink:#1d2430; --muted:#667085; --line:#e4e7ec;
                --ok:#12805c; --ok-bg:#e3f5ec; --bad:#b42318; --bad-bg:#fdecea; --warn:#b54708; --warn-bg:#fef0c7; --accent:#3656d6; }
        * { box-sizing: border-box; }
        body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--ink); }
        header { display:flex; align-items:center; gap:16px; padding:14px 24px; background:#111827; color:#fff; }
        header h1 { font-size:18px; margin:0; font-weight:600; letter-spacing:.2px; }
        header .sub { color:#9ca3af; font-size:13px; }
        header .right { margin-left:auto; display:flex; gap:12px; align-items:center; font-size:13px; color:#d1d5db; }
        .pill { display:inline-block; padding:2px 10px; border-radius:999px; font-weight:600; font-size:12px; }
        .pill.ok { background:var(--ok-bg); color:var(--ok); } .pill.bad { background:var(--bad-bg); color:var(--bad); }
        .pill.warn { background:var(--warn-bg); color:var(--warn); }
        main { padding:20px 24px 40px; max-width:1400px; margin:0 auto; }
        .cards { display:grid; grid-template-columns:repeat(auto-fill, minmax(150px, 1fr)); gap:12px; margin-bottom:20px; }
        .card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 14px; }
        .card .label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.4px; }
        .card .value { font-size:24px; font-weight:650; margin-top:2px; font-variant-numeric:tabular-nums; }
        .card .detail { color:var(--muted); font-size:12px; margin-top:2px; font-variant-numeric:tabular-nums; }
        section { background:var(--card); border:1px solid var(--line); border-radius:10px; margin-bottom:20px; overflow:hidden; }
        section h2 { font-size:14px; margin:0; padding:10px 14px; border-bottom:1px solid var(--line); display:flex; gap:10px; align-items:baseline; }
        section h2 .count { color:var(--muted); font-weight:400; }
        table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
        th, td { text-align:left; padding:7px 14px; border-bottom:1px solid var(--line); white-space:nowrap; }
        th { font-size:12px; color:var(--muted); font-weight:600; background:#fafbfc; }
        td.num, th.num { text-align:right; }
        tr:last-child td { border-bottom:none; }
        tr.lost td { color:var(--muted); }
        .ids { color:var(--muted); font-size:12px; white-space:normal; }
        .bar { position:relative; height:6px; width:80px; background:var(--line); border-radius:3px; display:inline-block; vertical-align:middle; margin-left:6px; }
        .bar > span { position:absolute; left:0; top:0; bottom:0; border-radius:3px; background:var(--ok); }
        .bar.low > span { background:var(--warn); } .bar.critical > span { background:var(--bad); }
        #error { display:none; margin-bottom:16px; padding:10px 14px; border-radius:8px; background:var(--bad-bg); color:var(--bad); font-weight:600; }
        footer { color:var(--muted); font-size:12px; text-align:center; }
        </style>
        </head>
        <body>
        <header>
          <h1>Limelight</h1>
          <span class="sub">coordinator status</span>
          <div class="right">
            <span id="cluster-state" class="pill warn" data-value="">loading</span>
            <span>up <span id="uptime" data-value="">–</span></span>
            <span>updated <span id="updated">–</span></span>
          </div>
        </header>
        <main>
          <div id="error"></div>
          <div class="cards">
            <div class="card"><div class="label">Shards served</div><div class="value"><span id="served-shards" data-value="">–</span> / <span id="shard-count" data-value="">–</span></div><div class="detail" id="unserved"></div></div>
            <div class="card"><div class="label">Items</div><div class="value" id="total-items" data-value="">–</div><div class="detail" id="total-bytes" data-value=""></div></div>
            <div class="card"><div class="label">Publish rate</div><div class="value"><span id="publish-rate" data-value="">–</span></div><div class="detail">items/s · <span id="published-items" data-value="">–</span> items, <span id="rejected-items" data-value="">–</span> rejected</div></div>
            <div class="card"><div class="label">Query rate</div><div class="value"><span id="query-rate" data-value="">–</span></div><div class="detail">queries/s · <span id="queries-total" data-value="">–</span> total</div></div>
            <div class="card"><div class="label">Query latency p50</div><div class="value" id="latency-p50" data-value="">–</div><div class="detail">p95 <span id="latency-p95" data-value="">–</span> · p99 <span id="latency-p99" data-value="">–</span></div></div>
            <div class="card"><div class="label">First batch p50</div><div class="value" id="first-batch-p50" data-value="">–</div><div class="detail">over <span id="latency-samples" data-value="">–</span> queries</div></div>
            <div class="card"><div class="label">In flight</div><div class="value"><span id="queries-in-flight" data-value="">–</span></div><div class="detail">queries · <span id="publishes-in-flight" data-value="">–</span> publishes</div></div>
            <div class="card"><div class="label">Cancelled / timed out</div><div class="value"><span id="queries-cancelled" data-value="">–</span> / <span id="queries-timed-out" data-value="">–</span></div><div class="detail"><span id="errors" data-value="">–</span> error replies</div></div>
          </div>

          <section>
            <h2>Shards <span class="count" id="shards-count"></span></h2>
            <table>
              <thead><tr><th>Shard</th><th>State</th><th class="num">Items</th><th class="num">Database</th><th>Last write</th><th>Indexers</th><th>Query workers</th></tr></thead>
              <tbody id="shards"></tbody>
            </table>
          </section>

          <section>
            <h2>Workers <span class="count" id="workers-count"></span></h2>
            <table>
              <thead><tr><th>Worker</th><th>Role</th><th>State</th><th>Host</th><th class="num">PID</th><th class="num">Uptime</th><th class="num">Queue</th><th class="num">Batches</th><th class="num">Errors</th><th>Disk free</th><th class="num">Last seen</th><th>Shards</th></tr></thead>
              <tbody id="workers"></tbody>
            </table>
          </section>
          <footer>Raw figures: <a href="stats">/stats</a> (JSON) · <a href="metrics">/metrics</a> (Prometheus) · <a href="readyz">/readyz</a></footer>
        </main>
        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c]));
        const num = (n) => n == null ? "–" : Number(n).toLocaleString("en-US");
        function bytes(n) {
          if (n == null) return "–";
          const u = ["B", "KB", "MB", "GB", "TB"]; let i = 0; let v = n;
          while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
          return (i ? v.toFixed(1) : v) + " " + u[i];
        }
        function ms(v) { return v == null ? "–" : (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v)) + " ms"; }
        function duration(s) {
          if (s == null) return "–";
          s = Math.floor(s);
          if (s < 60) return s + "s";
          if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
          if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
          return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
        }
        // Ages are measured on the coordinator's clock (stats.time), so a browser
        // whose clock is off still shows them right.
        function ago(iso, now) {
          if (!iso) return "never";
          return duration(Math.max(0, Date.parse(now) - Date.parse(iso)) / 1000) + " ago";
        }
        function set(id, value, text) { const e = $(id); e.dataset.value = value == null ? "" : value; e.textContent = text; }
        function cell(field, value, text, cls) {
          return `<td${cls ? ` class="${cls}"` : ""} data-field="${field}" data-value="${value == null ? "" : esc(value)}">${text}</td>`;
        }
        function render(s) {
          const served = s.servedShards.length, ready = served === s.shardCount;
          const state = $("cluster-state");
          state.className = "pill " + (ready ? "ok" : "bad");
          state.dataset.value = ready ? "ready" : "degraded";
          state.textContent = ready ? "ready" : "degraded";
          set("uptime", s.uptimeSeconds, duration(s.uptimeSeconds));
          set("served-shards", served, served);
          set("shard-count", s.shardCount, s.shardCount);
          const unserved = s.shards.filter((x) => !x.served).map((x) => x.shard);
          $("unserved").textContent = unserved.length ? "unserved: " + unserved.join(", ") : "every shard served";
          set("total-items", s.items, num(s.items));
          const dbBytes = s.shards.reduce((t, x) => t + (x.databaseBytes || 0), 0);
          set("total-bytes", dbBytes, bytes(dbBytes) + " on disk");
          const c = s.counters || {};
          set("publish-rate", s.rates.publishItemsPerSecond, num(s.rates.publishItemsPerSecond));
          set("published-items", c["publish.items"] || 0, num(c["publish.items"] || 0));
          set("rejected-items", c["publish.rejected"] || 0, num(c["publish.rejected"] || 0));
          set("query-rate", s.rates.queriesPerSecond, num(s.rates.queriesPerSecond));
          set("queries-total", c["queries"] || 0, num(c["queries"] || 0));
          set("latency-p50", s.queryLatencyMs.p50, ms(s.queryLatencyMs.p50));
          set("latency-p95", s.queryLatencyMs.p95, ms(s.queryLatencyMs.p95));
          set("latency-p99", s.queryLatencyMs.p99, ms(s.queryLatencyMs.p99));
          set("latency-samples", s.queryLatencyMs.samples, num(s.queryLatencyMs.samples));
          set("first-batch-p50", s.firstBatchLatencyMs.p50, ms(s.firstBatchLatencyMs.p50));
          set("queries-in-flight", s.inFlight.queries, num(s.inFlight.queries));
          set("publishes-in-flight", s.inFlight.publishes, num(s.inFlight.publishes));
          set("queries-cancelled", c["queries.cancelled"] || 0, num(c["queries.cancelled"] || 0));
          set("queries-timed-out", c["queries.timedOut"] || 0, num(c["queries.timedOut"] || 0));
          set("errors", c["errors"] || 0, num(c["errors"] || 0));

          $("shards-count").textContent = `${served} of ${s.shardCount} served`;
          $("shards").innerHTML = s.shards.map((x) => `<tr data-shard="${x.shard}">` +
            cell("shard", x.shard, x.shard) +
            cell("state", x.served ? "served" : "unserved", `<span class="pill ${x.served ? "ok" : "bad"}">${x.served ? "served" : "unserved"}</span>`) +
            cell("items", x.items, num(x.items), "num") +
            cell("databaseBytes", x.databaseBytes, bytes(x.databaseBytes), "num") +
            cell("lastWrite", x.lastWrite, ago(x.lastWrite, s.time)) +
            cell("indexers", x.indexers.join(","), x.indexers.length ? esc(x.indexers.join(", ")) : `<span class="pill bad">none</span>`, "ids") +
            cell("queryWorkers", x.queryWorkers.join(","), x.queryWorkers.length ? esc(x.queryWorkers.join(", ")) : `<span class="pill bad">none</span>`, "ids") +
            "</tr>").join("");

          const all = s.workers.concat(s.lostWorkers || []);
          $("workers-count").textContent = `${s.workers.length} live` + ((s.lostWorkers || []).length ? `, ${s.lostWorkers.length} lost` : "");
          $("workers").innerHTML = all.map((w) => {
            const free = w.diskFreeBytes != null && w.diskSizeBytes ? w.diskFreeBytes / w.diskSizeBytes : null;
            const level = free == null ? "" : free < 0.10 ? "critical" : free < 0.20 ? "low" : "";
            const disk = free == null ? "–" : `${Math.round(free * 100)}%<span class="bar ${level}"><span style="width:${Math.round(free * 100)}%"></span></span>`;
            return `<tr data-worker="${esc(w.id)}" class="${w.state}">` +
              cell("id", w.id, esc(w.id)) +
              cell("role", w.role, w.role === "query" ? "query worker" : "indexer") +
              cell("state", w.state, `<span class="pill ${w.state === "live" ? "ok" : "bad"}">${w.state}</span>` + (w.lostReason ? ` <span class="ids">${esc(w.lostReason)}</span>` : "")) +
              cell("host", w.host, esc(w.host || "–")) +
              cell("pid", w.pid, w.pid == null ? "–" : w.pid, "num") +
              cell("uptimeSeconds", w.uptimeSeconds, duration(w.uptimeSeconds), "num") +
              cell("queueDepth", w.queueDepth, num(w.queueDepth), "num") +
              cell("batches", w.batches, num(w.batches), "num") +
              cell("errors", w.errors, num(w.errors), "num") +
              cell("diskFree", free == null ? null : free.toFixed(4), disk) +
              cell("lastSeenMsAgo", w.lastSeenMsAgo, w.lastSeenMsAgo < 1000 ? w.lastSeenMsAgo + " ms" : duration(w.lastSeenMsAgo / 1000), "num") +
              cell("shards", w.shards.join(","), w.shards.join(", "), "ids") +
              "</tr>";
          }).join("");
          $("updated").textContent = new Date().toLocaleTimeString("en-GB");
          document.body.dataset.loaded = "true";
        }
        async function poll() {
          try {
            const r = await fetch("stats", {cache: "no-store"});
            if (!r.ok) throw new Error("GET /stats answered " + r.status);
            render(await r.json());
            $("error").style.display = "none";
          } catch (e) {
            $("error").textContent = "Cannot read /stats: " + e.message + " (retrying)";
            $("error").style.display = "block";
            const state = $("cluster-state");
            state.className = "pill bad"; state.textContent = "unreachable"; state.dataset.value = "unreachable";
          }
        }
        poll();
        setInterval(poll, 2000);
        </script>
        </body>
        </html>
        """#
}
