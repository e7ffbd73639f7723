// Flotilla web UI: reads the service's JSON API and renders one page per
// path under /ui/. No framework, no network beyond the service.
"use strict";

const TOKEN_KEY = "flotilla.token"; // sessionStorage: this tab only
const main = () => document.getElementById("main");
const live = (text) => { document.getElementById("live").textContent = text; };
let timers = [];
let streamAbort = null;

// el builds an element: el("td", {class: "num"}, "text", child, …).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
const enc = encodeURIComponent;
const pct = (x) => (100 * (x || 0)).toFixed(1) + "%";
const num = (n) => (n || 0).toLocaleString("en-US");
const when = (t) => (t ? new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "—");
const ago = (t) => {
  if (!t) return "never";
  const s = Math.max(0, Math.round((Date.now() - new Date(t)) / 1000));
  return s < 60 ? s + " s ago" : s < 3600 ? Math.round(s / 60) + " min ago" : Math.round(s / 3600) + " h ago";
};
function stateBadge(s) { return el("span", { class: "state " + s, text: s }); }

// ---- the API ------------------------------------------------------------

class Refused extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function headers() {
  const t = sessionStorage.getItem(TOKEN_KEY);
  return t ? { Authorization: "Bearer " + t } : {};
}

async function api(path) {
  const r = await fetch(path, { headers: headers(), cache: "no-store" });
  if (r.ok) return r.json();
  let msg = r.status + " " + r.statusText;
  try { msg = (await r.json()).error || msg; } catch (_) { /* not JSON */ }
  throw new Refused(r.status, msg);
}

// show renders a page's content, or its refusal: 401 asks for a token,
// any other refusal is said on the page, with no data.
async function show(render) {
  try {
    await render();
  } catch (e) {
    stopAll();
    if (e instanceof Refused && e.status === 401) return askToken(e.message);
    const box = el("div", { class: "alert", role: "alert", id: "refusal" },
      e instanceof Refused ? `The service refused: ${e.message} (HTTP ${e.status}).` : `Failed: ${e.message}`);
    main().replaceChildren(box);
    if (e instanceof Refused && e.status === 403 && sessionStorage.getItem(TOKEN_KEY)) {
      main().append(el("p", {}, "This token may not read this. ",
        el("button", { type: "button", onclick: () => { sessionStorage.removeItem(TOKEN_KEY); route(); } }, "Use another token")));
    }
  }
}

function askToken(why) {
  const had = sessionStorage.getItem(TOKEN_KEY);
  const input = el("input", { type: "password", id: "token", name: "token", autocomplete: "off", "aria-describedby": "token-why", required: true });
  const form = el("form", { class: "login", id: "login", onsubmit: (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    route();
  } },
  el("h1", { text: "Token" }),
  el("p", { id: "token-why" }, had ? `The service did not take the token: ${why}.` :
    "This service asks for a bearer token. It is kept for this tab only (sessionStorage) and sent with each call."),
  el("label", { for: "token", text: "Bearer token" }), input,
  el("button", { type: "submit", text: "Open" }));
  if (had) form.prepend(el("div", { class: "alert", role: "alert", id: "refusal", text: "The service refused the token: " + why }));
  main().replaceChildren(form);
  input.focus();
}

function stopAll() {
  timers.forEach(clearInterval);
  timers = [];
  if (streamAbort) { streamAbort.abort(); streamAbort = null; }
}
function every(ms, fn) { timers.push(setInterval(() => fn().catch(() => live("update failed; retrying")), ms)); }

// ---- tables and keys ----------------------------------------------------

// table builds a table; rows are arrays of cells (a cell is a node, text
// or {v, class}); href(i) is where Enter on row i goes.
function table(id, cols, rows, href) {
  const thead = el("thead", {}, el("tr", {}, cols.map((c) =>
    el("th", { scope: "col", class: c.num ? "num" : null, title: c.title }, c.label))));
  const tbody = el("tbody", {}, rows.map((r, i) => el("tr", { "data-href": href ? href(i) : null },
    r.map((c, j) => el("td", { class: cols[j].num ? "num" : (c && c.cls) || null }, c && c.v !== undefined ? c.v : c)))));
  return el("table", { id, class: "keys" }, thead, tbody);
}

let pager = null; // {next(), prev()} of the page's paged table

function moveSelection(delta) {
  const t = document.querySelector("table.keys");
  if (!t) return;
  const rows = [...t.tBodies[0].rows];
  if (!rows.length) return;
  let i = rows.findIndex((r) => r.classList.contains("selected"));
  rows.forEach((r) => r.classList.remove("selected"));
  i = i < 0 ? (delta > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, i + delta));
  rows[i].classList.add("selected");
  const a = rows[i].querySelector("a");
  (a || rows[i]).focus({ preventScroll: true });
  rows[i].scrollIntoView({ block: "nearest" });
}

document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(ev.target.tagName);
  if (typing) {
    if (ev.key === "Escape") ev.target.blur();
    return;
  }
  const go = (p) => { location.href = p; };
  switch (ev.key) {
    case "j": case "ArrowDown": moveSelection(1); ev.preventDefault(); break;
    case "k": case "ArrowUp": moveSelection(-1); ev.preventDefault(); break;
    case "Enter": {
      const r = document.querySelector("table.keys tr.selected");
      if (r && r.dataset.href && ev.target.tagName !== "A" && ev.target.tagName !== "BUTTON") { go(r.dataset.href); ev.preventDefault(); }
      break;
    }
    case "n": if (pager) pager.next(); break;
    case "p": if (pager) pager.prev(); break;
    case "g": go("/ui/"); break;
    case "c": go("/ui/clusters"); break;
    case "y": go("/ui/cycles"); break;
    case "/": document.getElementById("jump-id").focus(); ev.preventDefault(); break;
  }
});

// ---- shares -------------------------------------------------------------

function shareBar(st) {
  const w = (x) => Math.min(100, 100 * (x || 0)).toFixed(1) + "%";
  return el("span", { class: "bar", role: "img",
    "aria-label": `share ${pct(st.share)}, fair share ${pct(st.fairShare)}, adjusted fair share ${pct(st.adjustedFairShare)}` },
  el("span", { class: "fill", style: null, "data-w": w(st.share) }),
  el("span", { class: "fair", "data-l": w(st.fairShare) }),
  el("span", { class: "adj", "data-l": w(st.adjustedFairShare) }));
}

// sizeBars applies the bars' widths (set through the CSSOM: the page's
// content security policy allows no inline style attributes).
function sizeBars(root) {
  root.querySelectorAll(".bar .fill").forEach((e) => { e.style.width = e.dataset.w; });
  root.querySelectorAll(".bar .fair, .bar .adj").forEach((e) => { e.style.left = e.dataset.l; });
}

function spark(history) {
  const W = 120, H = 24, NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("class", "spark"); svg.setAttribute("width", W); svg.setAttribute("height", H);
  svg.setAttribute("role", "img");
  const h = history || [];
  svg.setAttribute("aria-label", h.length ? `share over the last hour, ${h.length} samples, last ${pct(h[h.length - 1].share)}` : "no history yet");
  if (h.length) {
    const max = 1.15 * Math.max(0.05, ...h.map((p) => Math.max(p.share, p.fairShare, p.adjustedFairShare)));
    const t1 = new Date(h[h.length - 1].time).getTime(), t0 = t1 - 3600e3;
    const y = (v) => (H - 2 - (v / max) * (H - 4)).toFixed(1);
    // One sample is drawn as a level line over the hour.
    const pts = (f) => h.length === 1 ? `1,${y(f(h[0]))} ${W - 1},${y(f(h[0]))}` : h.map((p) => {
      const x = ((new Date(p.time).getTime() - t0) / 3600e3) * (W - 2) + 1;
      return x.toFixed(1) + "," + y(f(p));
    }).join(" ");
    for (const [cls, f] of [["fair", (p) => p.fairShare], ["adj", (p) => p.adjustedFairShare], ["share", (p) => p.share]]) {
      const pl = document.createElementNS(NS, "polyline");
      pl.setAttribute("class", cls);
      pl.setAttribute("points", pts(f));
      svg.append(pl);
    }
  }
  return svg;
}

// poolShares is a queue's or group's standing in each pool: a line per
// pool, "pool share / fair / adjusted".
function poolShares(pools) {
  if (!pools || !pools.length) return "—";
  return el("span", { class: "pools" }, pools.map((p) => el("span", { class: "pool-line", "data-pool": p.pool },
    el("b", { text: p.pool }), ` ${pct(p.share)} / ${pct(p.fairShare)} / ${pct(p.adjustedFairShare)}`)));
}

// poolSparks is a queue's or group's last hour in each pool, a line per
// pool (the first pool's history alone without per-pool ones).
function poolSparks(n) {
  const ph = n.poolHistory || [];
  if (!ph.length) return spark(n.history);
  return el("span", { class: "pools" }, ph.map((p) => el("span", { class: "pool-spark", "data-pool": p.pool },
    el("b", { text: p.pool }), " ", spark(p.history))));
}

const legend = () => el("div", { class: "legend" },
  el("span", {}, el("i", { class: "l-share" }), "share"),
  el("span", {}, el("i", { class: "l-fair" }), "fair share"),
  el("span", {}, el("i", { class: "l-adj" }), "adjusted fair share"));

// ---- pages --------------------------------------------------------------

async function overviewPage() {
  const render = async () => {
    const ov = await api("/v1/overview");
    const byParent = new Map();
    const add = (parent, node) => { if (!byParent.has(parent)) byParent.set(parent, []); byParent.get(parent).push(node); };
    ov.groups.forEach((g) => add(g.parent || "", { kind: "group", ...g }));
    ov.queues.forEach((q) => add(q.parent || "", { kind: "queue", ...q }));
    // With several pools each queue and group has a share per pool (the
    // columns before are the first pool's where it has jobs).
    const multiPool = [...ov.queues, ...ov.groups].some((n) => (n.status.pools || []).length > 0);
    const rows = [], hrefs = [];
    const walk = (parent, depth) => {
      for (const n of (byParent.get(parent) || []).sort((a, b) => a.name.localeCompare(b.name))) {
        const st = n.status;
        const pad = "\u2003".repeat(depth) + (n.kind === "group" ? "▾ " : "");
        const name = n.kind === "queue"
          ? el("span", {}, pad, el("a", { href: "/ui/queues/" + enc(n.name), text: n.name }), st.cordoned ? [" ", stateBadge("cordoned")] : null)
          : el("span", { title: "group" }, pad + n.name);
        const row = [name, pct(st.share), pct(st.fairShare), pct(st.adjustedFairShare), shareBar(st), multiPool ? poolSparks(n) : spark(n.history),
          num(st.queued), n.kind === "queue" ? num(st.leased) : "—", num(st.running)];
        if (multiPool) row.splice(5, 0, poolShares(st.pools));
        rows.push(row);
        hrefs.push(n.kind === "queue" ? "/ui/queues/" + enc(n.name) : null);
        if (n.kind === "group") walk(n.name, depth + 1);
      }
    };
    walk("", 0);
    const cols = [{ label: "Queue / group" }, { label: "Share", num: 1 }, { label: "Fair", num: 1, title: "fair share" },
      { label: "Adjusted", num: 1, title: "adjusted fair share" }, { label: "Share vs fair" }, { label: "Last hour" },
      { label: "Queued", num: 1 }, { label: "Leased", num: 1 }, { label: "Running", num: 1 }];
    if (multiPool) cols.splice(5, 0, { label: "Per pool", title: "share / fair share / adjusted fair share in each pool's last cycle" });
    const c = ov.lastCycle;
    const page = [el("h1", { text: "Queues" }),
      el("div", { class: "cards" },
        el("div", { class: "card" }, "Queues", el("b", { id: "n-queues", text: num(ov.queues.length) })),
        el("div", { class: "card" }, "Cycles", el("b", { text: num(ov.cycles) })),
        el("div", { class: "card" }, "Last cycle", el("b", { text: c ? c.durationMs.toFixed(1) + " ms" : "—" })),
        el("div", { class: "card" }, "Leased / preempted", el("b", { text: c ? `${num(c.leased)} / ${num(c.preempted)}` : "—" }))),
      legend(),
      table("queues", cols, rows, (i) => hrefs[i])];
    if (ov.next) page.push(el("p", { class: "muted", text: "More queues than one page shows." }));
    const sel = document.querySelector("table.keys tr.selected");
    const selIdx = sel ? sel.sectionRowIndex : -1;
    main().replaceChildren(...page);
    document.querySelectorAll("#queues tbody tr").forEach((r, i) => { if (!hrefs[i]) r.classList.add("group-row"); });
    if (selIdx >= 0) { const r = document.querySelectorAll("#queues tbody tr")[selIdx]; if (r) r.classList.add("selected"); }
    sizeBars(main());
    live("updated " + new Date().toLocaleTimeString());
  };
  await render();
  every(5000, render);
}

async function queuePage(name) {
  const q = await api("/v1/queues/" + enc(name));
  const st = q.status || {};
  const cursors = [""];
  let at = 0;
  const head = [el("h1", {}, "Queue ", el("span", { class: "mono", text: name })),
    el("div", { class: "cards" },
      el("div", { class: "card" }, "State", el("b", {}, st.cordoned ? stateBadge("cordoned") : el("span", { class: "state alive", text: "open" }))),
      el("div", { class: "card" }, "Queued", el("b", { text: num(st.queued) })),
      el("div", { class: "card" }, "Leased", el("b", { text: num(st.leased) })),
      el("div", { class: "card" }, "Running", el("b", { text: num(st.running) })),
      el("div", { class: "card" }, "Share / fair / adjusted", el("b", { text: `${pct(st.share)} / ${pct(st.fairShare)} / ${pct(st.adjustedFairShare)}` }))),
    el("dl", { class: "facts" },
      el("dt", { text: "Parent group" }), el("dd", { text: q.parent || "(root)" }),
      el("dt", { text: "Priority factor" }), el("dd", { text: q.priorityFactor || 1 }),
      el("dt", { text: "Cordoned" }), el("dd", { text: st.cordoned ? "yes: its queued jobs are not leased" : "no" }))];
  const body = el("div");
  main().replaceChildren(...head, el("h2", { text: "Job sets" }), body);
  const load = async () => {
    const p = await api(`/v1/queues/${enc(name)}/jobsets?limit=100&after=${enc(cursors[at])}`);
    // A set whose jobs all ended is marked so, its live counts dashes.
    const rows = p.jobSets.map((s) => [el("a", { href: `/ui/jobsets/${enc(name)}/${enc(s.name)}`, text: s.name }),
      s.ended ? stateBadge("ended") : stateBadge("active"),
      s.ended ? "—" : num(s.queued), s.ended ? "—" : num(s.leased), s.ended ? "—" : num(s.running)]);
    const prev = el("button", { type: "button", disabled: at === 0, onclick: () => pager.prev() }, "◀ Previous");
    const next = el("button", { type: "button", disabled: !p.next, onclick: () => pager.next() }, "Next ▶");
    cursors[at + 1] = p.next || null;
    body.replaceChildren(
      rows.length ? table("jobsets", [{ label: "Job set" }, { label: "Jobs", title: "active: some are queued, leased or running; ended: all have ended" },
        { label: "Queued", num: 1 }, { label: "Leased", num: 1 }, { label: "Running", num: 1 }],
        rows, (i) => `/ui/jobsets/${enc(name)}/${enc(p.jobSets[i].name)}`) : el("p", { class: "muted", text: "This queue has no job set." }),
      el("div", { class: "toolbar" }, prev, next));
  };
  pager = { next: () => { if (cursors[at + 1]) { at++; show(load); } }, prev: () => { if (at > 0) { at--; show(load); } } };
  await load();
  every(10000, load);
}

async function jobSetPage(queue, set) {
  const params = new URLSearchParams(location.search);
  let state = params.get("state") || "", sort = params.get("sort") || "submitted";
  let cursors = [""], at = 0;
  const counts = el("div", { class: "cards" });
  // The ended states are read from the service's store, by submit time
  // only.
  const ENDED = ["succeeded", "failed", "cancelled", "preempted"];
  const stateSel = el("select", { id: "state", "aria-label": "state" },
    el("optgroup", { label: "live" }, ["", "queued", "leased", "running"].map((s) => el("option", { value: s, selected: s === state }, s || "all live states"))),
    el("optgroup", { label: "ended" }, ENDED.map((s) => el("option", { value: s, selected: s === state }, s))));
  const sortSel = el("select", { id: "sort", "aria-label": "sort" },
    [["submitted", "submit time"], ["priority", "priority, then submit time"]].map(([v, t]) => el("option", { value: v, selected: v === sort }, t)));
  const sortable = () => {
    const ended = ENDED.includes(stateSel.value);
    if (ended) sortSel.value = "submitted";
    sortSel.disabled = ended;
  };
  sortable();
  sort = sortSel.value;
  const info = el("span", { id: "page-info", class: "muted" });
  const prev = el("button", { type: "button", id: "prev", onclick: () => pager.prev() }, "◀ Previous");
  const next = el("button", { type: "button", id: "next", onclick: () => pager.next() }, "Next ▶");
  const body = el("div");
  const restart = () => {
    sortable();
    state = stateSel.value; sort = sortSel.value; cursors = [""]; at = 0;
    const u = new URLSearchParams(); if (state) u.set("state", state); if (sort !== "submitted") u.set("sort", sort);
    history.replaceState(null, "", location.pathname + (u.toString() ? "?" + u : ""));
    show(load);
  };
  stateSel.addEventListener("change", restart);
  sortSel.addEventListener("change", restart);
  main().replaceChildren(
    el("h1", {}, "Job set ", el("span", { class: "mono", text: set }), " of ", el("a", { href: "/ui/queues/" + enc(queue), text: queue })),
    counts,
    el("div", { class: "toolbar" }, el("label", {}, "State ", stateSel), el("label", {}, "Sort by ", sortSel), prev, next, info),
    body);
  // gen numbers the loads: a load that a later one overtook (a refresh
  // while the person pages on) shows nothing.
  let gen = 0;
  const load = async (refresh) => {
    const mine = ++gen;
    if (refresh !== true) prev.disabled = next.disabled = true; // until this page is in
    const u = new URLSearchParams({ limit: "100", sort });
    if (state) u.set("state", state);
    if (cursors[at]) u.set("cursor", cursors[at]);
    const p = await api(`/v1/queues/${enc(queue)}/jobsets/${enc(set)}/jobs?${u}`);
    if (mine !== gen) return;
    const c = p.counts;
    counts.replaceChildren(
      el("div", { class: "card" }, stateBadge("queued"), el("b", { id: "count-queued", text: num(c.queued) })),
      el("div", { class: "card" }, stateBadge("leased"), el("b", { id: "count-leased", text: num(c.leased) })),
      el("div", { class: "card" }, stateBadge("running"), el("b", { id: "count-running", text: num(c.running) })),
      // The ended jobs per state, when the service's store counts them.
      ...(p.endedCounts ? ENDED.map((s) => el("div", { class: "card" }, stateBadge(s), el("b", { id: "count-" + s, text: num(p.endedCounts[s]) }))) : []));
    cursors[at + 1] = p.next || null;
    prev.disabled = at === 0; next.disabled = !p.next;
    const first = at * 100 + 1;
    info.textContent = p.jobs.length ? `page ${at + 1}: jobs ${num(first)}–${num(first + p.jobs.length - 1)}${p.partial ? " (the service stopped at its bound; Next goes on)" : ""}` : "no jobs";
    // Ended jobs have a Finished column: when each ended.
    const ended = ENDED.includes(state);
    const rows = p.jobs.map((j) => [el("a", { href: "/ui/jobs/" + enc(j.id), class: "mono", text: j.id }),
      el("span", {}, stateBadge(j.state), j.cancelRequested ? " (cancel requested)" : ""), num(j.priority), when(j.submitted),
      ...(ended ? [when(j.finished)] : []), num(j.attempts), j.cluster || "—", j.node || "—"]);
    body.replaceChildren(table("jobs", [{ label: "Job" }, { label: "State" }, { label: "Priority", num: 1 }, { label: "Submitted" },
      ...(ended ? [{ label: "Finished" }] : []),
      { label: "Attempts", num: 1 }, { label: "Cluster" }, { label: "Node" }], rows, (i) => "/ui/jobs/" + enc(p.jobs[i].id)));
    live("updated " + new Date().toLocaleTimeString());
  };
  pager = { next: () => { if (cursors[at + 1]) { at++; show(load); } }, prev: () => { if (at > 0) { at--; show(load); } } };
  await load();
  every(10000, () => load(true));
}

async function jobPage(id) {
  const status = async () => (await api("/v1/jobs?explain=true&id=" + enc(id))).jobs[0];
  let j = await status();
  const facts = el("dl", { class: "facts", id: "job-facts" });
  const explain = el("table", { class: "explain", id: "explain" });
  const evBody = el("tbody");
  const fill = () => {
    facts.replaceChildren(
      el("dt", { text: "State" }), el("dd", { id: "job-state" }, stateBadge(j.state)),
      el("dt", { text: "Queue / job set" }), el("dd", {}, el("a", { href: "/ui/queues/" + enc(j.queue), text: j.queue }), " / ",
        el("a", { href: `/ui/jobsets/${enc(j.queue)}/${enc(j.jobSet)}`, text: j.jobSet })),
      el("dt", { text: "Attempts" }), el("dd", { text: j.attempts }),
      el("dt", { text: "Cluster / node" }), el("dd", { text: j.cluster ? `${j.cluster} / ${j.node || "—"}` : "—" }),
      el("dt", { text: "Reason" }), el("dd", { text: j.reason || "—" }));
    explain.replaceChildren(el("tbody", {}, explainRows(j).map(([l, v]) => el("tr", {}, el("th", { scope: "row", text: l }), el("td", { text: v })))));
  };
  fill();
  main().replaceChildren(el("h1", {}, "Job ", el("span", { class: "mono", text: id })), facts,
    el("div", { class: "split" },
      el("section", {}, el("h2", { text: "Events (live)" }),
        el("div", { class: "events" }, el("table", { id: "events" }, el("thead", {}, el("tr", {},
          ["Seq", "Time", "Event", "Cluster / node", "Reason"].map((h) => el("th", { scope: "col", text: h })))), evBody))),
      el("section", {}, el("h2", { text: "Why (status -v)" }), explain)));
  // The job set's log from a little before its end, kept to this job's
  // events, then followed as it grows.
  const page = await api(`/v1/queues/${enc(j.queue)}/jobsets/${enc(j.jobSet)}/jobs?limit=1`);
  const from = Math.max(1, page.lastSeq - 4999);
  let refresh = null;
  follow(j.queue, j.jobSet, from, (e) => {
    if (e.job !== id) return;
    evBody.append(el("tr", { class: "new", "data-type": e.type }, el("td", { class: "num", text: e.seq }), el("td", { text: when(e.time) }),
      el("td", {}, el("span", { class: "state " + stateOfEvent(e.type), text: e.type })),
      el("td", { text: e.cluster ? `${e.cluster} / ${e.node || "—"}` : "—" }), el("td", { text: e.reason || (e.exitCode ? "exit code " + e.exitCode : "") })));
    evBody.lastChild.scrollIntoView({ block: "nearest" });
    clearTimeout(refresh);
    refresh = setTimeout(() => status().then((s) => { j = s; fill(); }).catch(() => {}), 200);
  });
}

function stateOfEvent(t) {
  return { submitted: "queued", leased: "leased", running: "running", succeeded: "succeeded", failed: "failed",
    cancelled: "cancelled", preempted: "preempted", "cancel-requested": "cancelled" }[t] || "queued";
}

// explainRows is the long form of `flotilla status -v` (package explain's
// WriteText for a service job) as label/value rows.
function explainRows(j) {
  const rows = [];
  const row = (label, value) => rows.push([label, value]);
  const qty = (m) => {
    const names = Object.keys(m || {}).sort((a, b) => (a === b ? 0 : a === "cpu" ? -1 : b === "cpu" ? 1 : a < b ? -1 : 1));
    return names.length ? names.map((k) => `${k} ${m[k]}`).join(", ") : "nothing";
  };
  const cmpShare = (s, t) => (s - t < -0.0005 ? "below" : s - t > 0.0005 ? "above" : "at");
  let head = `${j.attempts} attempt(s)`;
  if (j.cluster) head += `, on ${j.cluster}/${j.node}`;
  if (j.cancelRequested) head += " (cancel requested)";
  row("job", `${j.state}, ${head}`);
  if (j.reason) row("summary", j.reason);
  row("queue", `${j.queue}, job set ${j.jobSet || '""'}`);
  const x = j.explain;
  if (!x) return rows;
  const p = x.priority;
  row("priority", `class ${p.class} (priority ${p.classPriority}), job priority ${p.priority} (lower runs first within a class)`);
  if (x.place) {
    const pl = x.place;
    let ahead = pl.partial ? `more than ${pl.ahead} ahead (counting stopped there), those requesting ${qty(pl.aheadRequests)}`
      : pl.ahead > 0 ? `${pl.ahead} ahead, requesting ${qty(pl.aheadRequests)} in total` : "none ahead";
    let at = String(pl.position);
    if (pl.partial) at = "past " + pl.ahead;
    else if (pl.gangIncomplete) { at = "last"; ahead += "; its gang is not all queued, and a queue offers a gang only whole"; }
    row("place", `${at} of ${pl.queued} queued in ${j.queue} now; ${ahead}`);
  }
  if (x.queueShare) {
    const q = x.queueShare;
    row("queue share", `${q.share.toFixed(3)} after the last cycle (${cmpShare(q.share, q.adjustedFairShare)} its adjusted fair share) against fair share ${q.fairShare.toFixed(3)}, adjusted fair share ${q.adjustedFairShare.toFixed(3)}, demand ${q.demand.toFixed(3)}; ${q.running} running, ${q.queued} queued`);
  }
  const u = x.unscheduled;
  if (u) {
    row("reason", u.code);
    if (u.sameAs) row("same as", `job ${u.sameAs}${u.sameAsQueue ? " of queue " + u.sameAsQueue : ""} (same requirements: its search stands for this one)`);
    if (u.gangMember) {
      const g = u.gangMember;
      row("gang member", `${g.job} does not fit where the gang came closest, after ${g.placedBefore}${g.members ? " of " + g.members : ""} members were placed`);
    }
    if (!u.nodeGroups) {
      if (u.message) row("why", u.message);
    } else {
      const fit = u.nodeGroups.reduce((n, g) => n - g.nodes, u.nodesSearched || 0);
      row("nodes", `${u.nodesSearched || 0} searched, ${Math.max(fit, 0)} fit`);
      for (const g of u.nodeGroups) {
        const label = g.nodes === 1 ? "  1 node" : `  ${g.nodes} nodes`;
        row(label, g.filter === "selector" ? `excluded: node selector ${g.detail} not matched`
          : g.filter === "taint" ? `excluded: taint ${g.detail} not tolerated`
          : g.filter === "cordoned" ? "excluded: cordoned"
          : g.filter ? `excluded: ${g.filter} ${g.detail || ""}`
          : g.whenEmpty ? `too small: short of ${g.shortOf} by at least ${g.short} even when empty`
          : `no room now: short of ${g.shortOf} by at least ${g.short}`);
      }
    }
  }
  if (x.flux) {
    const f = x.flux;
    row("flux priority", `${f.priority}: user ${f.user}, bank ${f.bank}; fair share ${f.fairShare.product.toFixed(1)}, bank ${f.bankTerm.product.toFixed(1)}, queue ${f.queueTerm.product.toFixed(1)}, urgency ${f.urgency.product.toFixed(1)}${f.override ? ", " + f.override : ""}`);
  }
  return rows;
}

// follow reads a job set's events from seq from on and follows new ones
// (GET …/events?watch=true: JSON lines), reconnecting from the last seq
// seen when the stream drops.
function follow(queue, set, from, onEvent) {
  const ctl = new AbortController();
  streamAbort = ctl;
  let next = from;
  const run = async () => {
    while (!ctl.signal.aborted) {
      try {
        const r = await fetch(`/v1/queues/${enc(queue)}/jobsets/${enc(set)}/events?watch=true&from=${next}`,
          { headers: headers(), signal: ctl.signal, cache: "no-store" });
        if (!r.ok) {
          let msg = r.status + ""; try { msg = (await r.json()).error; } catch (_) { /* */ }
          live("event stream refused: " + msg);
          if (r.status === 401 || r.status === 403) return;
        } else {
          live("following events");
          const reader = r.body.getReader();
          const dec = new TextDecoder();
          let buf = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true });
            let nl;
            while ((nl = buf.indexOf("\n")) >= 0) {
              const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
              if (!line.trim()) continue;
              const e = JSON.parse(line);
              next = e.seq + 1;
              onEvent(e);
            }
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
        live("event stream dropped; reconnecting");
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
  };
  run();
}

async function clustersPage() {
  const render = async () => {
    const cs = await api("/v1/clusters");
    const parts = [el("h1", { text: "Clusters" })];
    parts.push(cs.length ? table("clusters", [{ label: "Cluster" }, { label: "Pool" }, { label: "State" }, { label: "Nodes", num: 1 },
      { label: "Leased", num: 1 }, { label: "Running", num: 1 }, { label: "Last report" }],
    cs.map((c) => [el("a", { href: "#cluster-" + enc(c.name), text: c.name }), c.pool || "default",
      el("span", {}, stateBadge(c.alive ? "alive" : "dead"), c.alive ? "" : " (not reporting)", c.cordoned ? [" ", stateBadge("cordoned")] : null),
      num(c.nodes), num(c.leased), num(c.running), el("span", { title: when(c.reported) }, ago(c.reported))]),
    (i) => "#cluster-" + enc(cs[i].name)) : el("p", { class: "muted", text: "No cluster has reported." }));
    for (const c of cs) {
      const p = await api(`/v1/clusters/${enc(c.name)}/nodes?limit=200`);
      // Every resource of the node's total, 0 where none is left or taken.
      const res = (m, n) => Object.keys(n.total || {}).map((k) => `${k} ${(m || {})[k] || "0"}`).join(", ");
      parts.push(el("h2", { id: "cluster-" + enc(c.name) }, "Nodes of ", el("span", { class: "mono", text: c.name })),
        el("table", { class: "nodes" }, el("thead", {}, el("tr", {}, ["Node", "Jobs", "Free", "Allocated", "Total"].map((h) => el("th", { scope: "col", text: h })))),
          el("tbody", {}, p.nodes.map((n) => el("tr", {}, el("td", { class: "mono" }, n.name, n.unschedulable ? [" ", stateBadge("cordoned")] : null),
            el("td", { class: "num", text: n.jobs }), el("td", { text: res(n.free, n) }), el("td", { text: res(n.allocated, n) }), el("td", { text: res(n.total, n) }))))),
        p.next ? el("p", { class: "muted", text: "More nodes than one page shows." }) : null);
    }
    main().replaceChildren(...parts.filter(Boolean));
    live("updated " + new Date().toLocaleTimeString());
  };
  await render();
  every(10000, render);
}

async function cyclesPage() {
  const render = async () => {
    const p = await api("/v1/cycles?limit=50");
    const rows = p.cycles.map((c) => [num(c.seq), when(c.time), c.durationMs.toFixed(1), num(c.leased), num(c.preempted), num(c.expired),
      el("span", { class: "muted" }, (c.queues || []).filter((q) => q.leased || q.preempted)
        .map((q) => `${q.name}${q.pool ? " (" + q.pool + ")" : ""} +${q.leased}${q.preempted ? " −" + q.preempted : ""}`).join(", ") || "—")]);
    main().replaceChildren(el("h1", { text: "Last cycles" }),
      rows.length ? table("cycles", [{ label: "Cycle", num: 1 }, { label: "Time" }, { label: "Duration (ms)", num: 1 }, { label: "Leased", num: 1 },
        { label: "Preempted", num: 1 }, { label: "Expired", num: 1 }, { label: "Per queue (pool when several; leased, preempted)" }], rows) :
        el("p", { class: "muted", text: "No cycle has been decided yet (cycles run once a cluster reports)." }));
    live("updated " + new Date().toLocaleTimeString());
  };
  await render();
  every(2000, render);
}

// ---- routing ------------------------------------------------------------

function route() {
  stopAll();
  pager = null;
  let parts;
  try {
    parts = location.pathname.replace(/^\/ui\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  } catch (_) { // an escape that is not UTF-8 (%FF): no page of ours
    parts = ["?"];
  }
  let nav = "";
  let page;
  switch (parts[0]) {
    case undefined: nav = "overview"; page = overviewPage; break;
    case "queues": page = () => queuePage(parts[1]); nav = "overview"; break;
    case "jobsets": page = () => jobSetPage(parts[1], parts.slice(2).join("/")); nav = "overview"; break;
    case "jobs": page = () => jobPage(parts.slice(1).join("/")); break;
    case "clusters": nav = "clusters"; page = clustersPage; break;
    case "cycles": nav = "cycles"; page = cyclesPage; break;
    default: page = async () => { main().replaceChildren(el("div", { class: "alert", role: "alert", text: "No such page: " + location.pathname })); };
  }
  document.querySelectorAll("header nav a").forEach((a) => a.removeAttribute("aria-current"));
  document.querySelectorAll("header nav a").forEach((a) => { if (a.dataset.nav === nav) a.setAttribute("aria-current", "page"); });
  document.getElementById("signout").hidden = !sessionStorage.getItem(TOKEN_KEY);
  main().replaceChildren(el("p", { class: "muted", text: "Loading…" }));
  show(page);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("jump").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const id = document.getElementById("jump-id").value.trim();
    if (id) location.href = "/ui/jobs/" + enc(id);
  });
  document.getElementById("signout").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); route(); });
  route();
});
