// Sluice dashboard: renders the snapshots of /api/state and /api/events.
// Counters in a snapshot are cumulative; rates are the difference between
// two consecutive snapshots divided by the time between them.
"use strict";

const HISTORY_SECONDS = 300; // what the charts show
const prev = { t: 0, counters: new Map() }; // the last snapshot's counters
const rates = new Map(); // counter key -> its latest rate per second
let updates = 0;

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function fmtNum(n) {
  if (n == null || Number.isNaN(n)) return "–";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + "k";
  if (a >= 100 || Number.isInteger(n)) return String(Math.round(n));
  return n.toFixed(1);
}

function fmtBytes(n) {
  if (n == null || n < 0) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
}

function fmtPct(f) { return f == null ? "–" : Math.round(f * 100) + "%"; }
function fmtMs(ms) { return ms == null ? "–" : (ms >= 100 ? Math.round(ms) : ms.toFixed(1)) + " ms"; }

// rate records the counter key's value in this snapshot and returns its
// rate per second since the previous snapshot (the last rate known when
// the snapshots are too close together).
function rate(cur, key, value) {
  cur.set(key, value);
  const dt = (state.t - prev.t) / 1000;
  const before = prev.counters.get(key);
  if (before == null || dt <= 0) return rates.get(key) ?? 0;
  const r = Math.max(0, (value - before) / dt);
  rates.set(key, r);
  return r;
}

const state = { t: 0 };

function update(s) {
  state.t = Date.parse(s.time);
  if (state.t <= prev.t) return; // an older or repeated snapshot
  const cur = new Map();
  updates++;
  document.getElementById("sse-count").textContent = updates;
  document.getElementById("committed-epoch").textContent = s.committed_epoch;
  document.getElementById("in-flight").textContent = s.epochs_in_flight;
  const last = s.checkpoints.filter((c) => !c.failed).at(-1);
  document.getElementById("barrier-latency").textContent = last ? fmtMs(last.barrier_ms) : "–";
  document.getElementById("checkpoint-duration").textContent = last ? fmtMs(last.duration_ms) : "–";
  document.getElementById("state-cache").textContent =
    fmtBytes(s.state_cache_bytes) + (s.state_cache_limit_bytes > 0 ? " / " + fmtBytes(s.state_cache_limit_bytes) : "");

  renderCatalog(s);
  renderJobs(s, cur);
  renderSources(s, cur);
  renderSinks(s, cur);
  renderCheckpoints(s);
  renderStuck(s);

  // The server samples the history (server.Dashboard), so the charts
  // cover the last minutes from the moment the page opens.
  const since = state.t - HISTORY_SECONDS * 1000;
  const history = s.history.filter((h) => Date.parse(h.time) >= since);
  chart("chart-throughput", history.map((h) => [Date.parse(h.time), h.rows_per_second]));
  chart("chart-lag", history.map((h) => [Date.parse(h.time), h.lag]));
  chart("chart-barrier", s.checkpoints.filter((c) => !c.failed && Date.parse(c.started) >= state.t - HISTORY_SECONDS * 1000)
    .map((c) => [Date.parse(c.started), c.barrier_ms]));

  prev.t = state.t;
  prev.counters = cur;
}

function renderCatalog(s) {
  const body = document.querySelector("#catalog tbody");
  body.innerHTML = s.catalog.map((o) =>
    `<tr data-name="${esc(o.name)}" data-kind="${esc(o.kind)}"><td>${esc(o.name)}</td><td>${esc(o.kind)}</td>` +
    `<td>${esc(o.connector)}</td><td class="sql" title="${esc(o.sql)}">${esc(o.sql)}</td></tr>`).join("");
}

// layout places a job's nodes in layers: a node sits one layer right of
// the furthest node feeding it.
function layout(job) {
  const layer = new Map(job.nodes.map((n) => [n.id, 0]));
  for (let pass = 0; pass < job.nodes.length; pass++) {
    let moved = false;
    for (const e of job.edges) {
      const want = (layer.get(e.from) ?? 0) + 1;
      if (layer.has(e.to) && layer.get(e.to) < want) { layer.set(e.to, want); moved = true; }
    }
    if (!moved) break;
  }
  const rows = new Map();
  const pos = new Map();
  for (const n of job.nodes) {
    const l = layer.get(n.id);
    const r = rows.get(l) ?? 0;
    rows.set(l, r + 1);
    pos.set(n.id, { x: 10 + l * 230, y: 10 + r * 78 });
  }
  const width = 10 + (Math.max(0, ...layer.values()) + 1) * 230;
  const height = 10 + Math.max(1, ...rows.values()) * 78;
  return { pos, width, height };
}

const NODE_W = 180, NODE_H = 56;

function renderJobs(s, cur) {
  const root = document.getElementById("jobs");
  const seen = new Set();
  for (const job of s.jobs) {
    seen.add(job.name);
    let el = root.querySelector(`.job[data-job="${CSS.escape(job.name)}"]`);
    if (!el) {
      el = document.createElement("div");
      el.className = "job";
      el.dataset.job = job.name;
      root.appendChild(el);
    }
    const figs = new Map();
    for (const n of job.nodes) {
      const k = `op|${job.name}|${n.id}|`;
      figs.set(n.id, {
        in: rate(cur, k + "in", n.rows_in),
        out: rate(cur, k + "out", n.rows_out),
        busy: Math.min(1, rate(cur, k + "busy", n.busy_seconds)),
        bp: Math.min(1, rate(cur, k + "bp", n.backpressure_seconds)),
      });
    }
    const { pos, width, height } = layout(job);
    let svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" style="width:100%;max-width:${width}px;height:auto" role="img" aria-label="dataflow of ${esc(job.name)}">` +
      `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#7b8794"/></marker></defs>`;
    for (const e of job.edges) {
      const a = pos.get(e.from), b = pos.get(e.to);
      if (!a || !b) continue;
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
      const mx = (x1 + x2) / 2;
      const r = figs.get(e.from)?.out ?? 0;
      svg += `<path class="edge" data-from="${esc(e.from)}" data-to="${esc(e.to)}" d="M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 2},${y2}" marker-end="url(#arrow)"/>`;
      svg += `<text class="edge-label" x="${mx}" y="${(y1 + y2) / 2 - 4}" text-anchor="middle">${fmtNum(r)}/s</text>`;
    }
    for (const n of job.nodes) {
      const p = pos.get(n.id), f = figs.get(n.id);
      const fill = n.kind === "Upstream" ? "#e9ecef" : `hsl(${Math.round(130 - 130 * f.bp)},${Math.round(55 + 20 * f.bp)}%,${Math.round(88 - 18 * f.bp)}%)`;
      const label = n.name.length > 26 ? n.name.slice(0, 25) + "…" : n.name;
      const second = n.kind === "Upstream" ? "relation" :
        `${fmtNum(n.kind === "Source" || n.kind === "TableSource" ? f.out : f.in)} rows/s` + (n.has_state ? ` · ${fmtBytes(n.state_bytes)}` : "");
      svg += `<g class="node" data-op="${esc(n.id)}" data-kind="${esc(n.kind)}" transform="translate(${p.x},${p.y})">` +
        `<title>${esc(n.id)} (${esc(n.kind)}): busy ${fmtPct(f.busy)}, backpressured ${fmtPct(f.bp)}</title>` +
        `<rect width="${NODE_W}" height="${NODE_H}" fill="${fill}"/>` +
        `<text class="name" x="8" y="19">${esc(label)}</text>` +
        `<text class="fig" x="8" y="37">${esc(second)}</text>` +
        `<text class="fig" x="8" y="51">${n.kind === "Upstream" ? "" : "busy " + fmtPct(f.busy) + " · bp " + fmtPct(f.bp)}</text></g>`;
    }
    svg += "</svg>";
    const rowsHTML = job.nodes.filter((n) => n.kind !== "Upstream").map((n) => {
      const f = figs.get(n.id);
      return `<tr data-op="${esc(n.id)}" data-kind="${esc(n.kind)}"><td>${esc(n.name)}</td><td>${esc(n.kind)}</td>` +
        `<td class="num rows-in-rate" data-value="${f.in}">${fmtNum(f.in)}</td>` +
        `<td class="num rows-out-rate" data-value="${f.out}">${fmtNum(f.out)}</td>` +
        `<td class="num rows-out" data-value="${n.rows_out}">${fmtNum(n.rows_out)}</td>` +
        `<td class="num busy">${fmtPct(f.busy)}</td><td class="num backpressure">${fmtPct(f.bp)}</td>` +
        `<td class="num state-bytes">${n.has_state ? fmtBytes(n.state_bytes) : ""}</td>` +
        `<td class="num state-keys">${n.has_state ? fmtNum(n.state_keys) : ""}</td>` +
        `<td class="num">${n.has_state ? fmtPct(n.cache_hit_ratio) : ""}</td></tr>`;
    }).join("");
    el.innerHTML =
      `<h3>${esc(job.name)}<span class="kind">${esc(job.kind)}</span><span class="status ${job.status === "failed" ? "failed" : ""}">${esc(job.status)}</span></h3>` +
      (job.error ? `<div class="error">${esc(job.error)}</div>` : "") +
      `<div class="graph">${svg}</div>` +
      `<table class="ops"><thead><tr><th>Operator</th><th>Kind</th><th class="num">Rows in/s</th><th class="num">Rows out/s</th><th class="num">Rows out</th>` +
      `<th class="num">Busy</th><th class="num">Backpressure</th><th class="num">State</th><th class="num">Keys</th><th class="num">Cache hits</th></tr></thead>` +
      `<tbody>${rowsHTML}</tbody></table>`;
  }
  for (const el of [...root.querySelectorAll(".job")]) {
    if (!seen.has(el.dataset.job)) el.remove();
  }
}

function renderSources(s, cur) {
  const rows = s.sources.map((src) => {
    const r = rate(cur, `src|${src.job}|${src.source}`, src.rows);
    const bp = Math.min(1, rate(cur, `srcbp|${src.job}|${src.source}`, src.backpressure_seconds));
    const behind = src.lag.reduce((a, l) => a + l.behind, 0);
    const lagText = src.lag.length === 0 ? "–" : src.lag.length === 1 ? fmtNum(behind) :
      fmtNum(behind) + " (" + src.lag.map((l) => `${esc(l.partition)}: ${fmtNum(l.behind)}`).join(", ") + ")";
    return `<tr data-source="${esc(src.source)}" data-job="${esc(src.job)}"><td>${esc(src.job)}</td><td>${esc(src.source)}</td>` +
      `<td class="num">${fmtNum(src.rows)}</td><td class="num rows-rate" data-value="${r}">${fmtNum(r)}</td>` +
      `<td class="num lag" data-value="${behind}">${lagText}</td><td class="num">${fmtPct(bp)}</td>` +
      `<td class="num">${fmtNum(src.late)}</td><td class="num">${fmtNum(src.bad)}</td></tr>`;
  });
  document.querySelector("#sources tbody").innerHTML = rows.join("");
}

function renderSinks(s, cur) {
  document.querySelector("#sinks tbody").innerHTML = s.sinks.map((k) => {
    const r = rate(cur, `sink|${k.name}`, k.written);
    const ok = k.status === "running" && !k.last_error;
    return `<tr data-sink="${esc(k.name)}"><td>${esc(k.name)}</td><td>${esc(k.connector)}</td><td>${esc(k.delivery)}</td>` +
      `<td class="effective">${esc(k.effective)}</td><td>${esc(k.weakest_link)}</td>` +
      `<td class="num">${k.logged_epoch}</td><td class="num delivered-epoch">${k.delivered_epoch}</td>` +
      `<td class="num pending-epochs">${k.pending_epochs}</td><td class="num written" data-value="${k.written}">${fmtNum(k.written)}</td>` +
      `<td class="num">${fmtNum(r)}</td><td class="num">${k.retries}</td><td class="num">${k.errors}</td>` +
      `<td class="${ok ? "ok" : "bad"}" title="${esc(k.last_error)}">${esc(k.status)}${k.last_error ? ": " + esc(k.last_error) : ""}</td></tr>`;
  }).join("");
}

function renderCheckpoints(s) {
  document.querySelector("#checkpoints tbody").innerHTML = s.checkpoints.slice(-12).reverse().map((c) =>
    `<tr data-epoch="${c.epoch}"><td class="num">${c.epoch}</td><td>${esc(new Date(c.started).toLocaleTimeString())}</td>` +
    `<td class="num">${fmtMs(c.barrier_ms)}</td><td class="num">${fmtMs(c.commit_ms)}</td><td class="num">${fmtMs(c.duration_ms)}</td>` +
    `<td class="num">${fmtBytes(c.bytes)}</td><td class="${c.failed ? "bad" : "ok"}">${c.failed ? "failed" : "committed"}</td></tr>`).join("");
}

// renderStuck shows the stuck-barrier report (server.DashboardState's
// stuck_barrier): the epoch held, the operators holding it, with the
// innermost functions of their goroutines and the goroutine profile, and
// those behind it. Hidden while no epoch is stuck.
function renderStuck(s) {
  const sec = document.getElementById("stuck-barrier");
  const b = s.stuck_barrier;
  sec.hidden = !b;
  if (!b) return;
  sec.dataset.epoch = b.epoch;
  let summary = `Epoch <b class="stuck-epoch">${b.epoch}</b> has waited ${fmtMs(b.waiting_ms)}: `;
  if (b.collectors_remaining === 0) {
    summary += `every operator passed its barrier; the commit is slow` + (b.commit ? ` (${esc(b.commit)} for ${fmtMs(b.commit_ms)})` : "") + ".";
  } else {
    summary += `${b.holding.length} operator(s) hold it, ${b.behind.length} wait behind them.`;
  }
  document.getElementById("stuck-summary").innerHTML = summary;
  const row = (o, holding) =>
    `<tr class="${holding ? "holding" : "behind"}" data-job="${esc(o.job)}" data-operator="${esc(o.operator)}">` +
    `<td>${esc(o.job)}</td><td>${esc(o.operator)}</td><td>${esc(o.kind)}</td>` +
    `<td class="${holding ? "bad" : ""}">${esc(o.phase)}${holding ? " (holding)" : " (behind)"}</td><td class="num">${o.passed_epoch}</td>` +
    `<td class="top">${esc(o.top)}${o.goroutines ? `<details><summary>goroutines</summary><pre>${esc(o.goroutines)}</pre></details>` : ""}</td></tr>`;
  document.querySelector("#stuck-ops tbody").innerHTML =
    b.holding.map((o) => row(o, true)).join("") + b.behind.map((o) => row(o, false)).join("");
}

// chart draws points [t, v] as a line over the last HISTORY_SECONDS.
function chart(id, points) {
  const W = 400, H = 110, P = 4;
  const el = document.getElementById(id);
  const t1 = state.t, t0 = t1 - HISTORY_SECONDS * 1000;
  const max = Math.max(1e-9, ...points.map((p) => p[1]));
  const x = (t) => P + ((t - t0) / (t1 - t0)) * (W - 2 * P);
  const y = (v) => H - 14 - (v / max) * (H - 30);
  const line = points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
  const area = points.length ? `${x(points[0][0]).toFixed(1)},${H - 14} ${line} ${x(points.at(-1)[0]).toFixed(1)},${H - 14}` : "";
  const lastV = points.length ? points.at(-1)[1] : null;
  el.innerHTML = `<svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none">` +
    `<line x1="${P}" y1="${H - 14}" x2="${W - P}" y2="${H - 14}" stroke="#d8dee4"/>` +
    (points.length ? `<polygon class="area" points="${area}"/><polyline class="line" points="${line}"/>` : "") +
    `<text x="${P}" y="10">max ${fmtNum(points.length ? max : null)}</text>` +
    `<text x="${W - P}" y="10" text-anchor="end">now ${fmtNum(lastV)}</text>` +
    `<text x="${P}" y="${H - 2}">-${HISTORY_SECONDS / 60} min</text><text x="${W - P}" y="${H - 2}" text-anchor="end">now</text></svg>`;
}

function connect() {
  const conn = document.getElementById("conn");
  const es = new EventSource("api/events" + location.search);
  es.onopen = () => { conn.textContent = "live"; conn.className = "conn live"; };
  es.onmessage = (ev) => update(JSON.parse(ev.data));
  es.onerror = () => { conn.textContent = "reconnecting…"; conn.className = "conn down"; };
}

fetch("api/state").then((r) => r.json()).then(update).catch(() => {}).finally(connect);
