// pathlock console page (docs/console.md). Every string from the server
// (paths, owners, operation names, labels) is attacker-controlled: the DOM
// is built with createElement + textContent only, never innerHTML.
"use strict";

const PAGE = 500;  // locks per page of the tree
const st = {
  info: null, ns: "", locks: [], next: "", waiters: [], open: new Set(["/"]), closed: new Set(),
  blockers: new Set(), nsNext: "", timer: null, limits: null,
};

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else if (k === "style") for (const [p, x] of Object.entries(v)) e.style.setProperty(p, x);
    else e[k] = v;
  }
  for (const kid of kids) if (kid !== null && kid !== undefined)
    e.append(typeof kid === "string" || typeof kid === "number" ? document.createTextNode(String(kid)) : kid);
  return e;
}
const $ = (id) => document.getElementById(id);

function showError(msg) {
  const box = $("error");
  box.textContent = msg || "";
  box.hidden = !msg;
}

async function api(path, init) {
  const res = await fetch(path, init);
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch (e) { body = { error: text }; }
  if (!res.ok) throw new Error(`${res.status}: ${body.error || text}`);
  return body;
}
const q = (params) => new URLSearchParams(params).toString();

function secs(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60000)} min`;
}

function opColor(op) {
  const ops = st.info ? st.info.matrix.ops.map((o) => o.name) : [];
  let i = ops.indexOf(op);
  if (i < 0) i = [...op].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
  return `hsl(${(i * 137) % 360} 55% 42%)`;
}

// ---- namespaces -----------------------------------------------------------
async function loadNamespaces(more) {
  const page = await api("/api/namespaces?" + q({ limit: 100, ...(more ? { after: st.nsNext } : {}) }));
  const list = $("ns-list");
  if (!more) list.replaceChildren();
  for (const ns of page.namespaces) {
    const a = el("a", { href: "#ns=" + encodeURIComponent(ns), "data-ns": ns }, ns);
    const worst = page.limits && page.limits[ns] ? fullest(page.limits[ns]) : null;
    if (worst) a.append(el("span", { class: "use " + worst.level, title: worst.text }, worst.short));
    if (ns === st.ns) a.classList.add("current");
    list.append(el("li", {}, a));
  }
  st.nsNext = page.next;
  $("ns-more").hidden = !page.next;
  return page.namespaces;
}

// ---- limits per namespace (docs/operations.md#limits-per-namespace) ------
// Each limit in force with its use: {name, used, max}; the owner's is the
// owner with the most locks.
function limitRows(s) {
  const rows = [];
  const e = s.effective;
  if (e.locks !== null) rows.push({ name: "locks", used: s.use.locks, max: e.locks });
  if (e.places !== null) rows.push({ name: "places in line", used: s.use.places, max: e.places });
  if (e.owner_locks !== null)
    rows.push({ name: s.use.owner ? `locks of ${s.use.owner}` : "locks per owner", used: s.use.owner_locks, max: e.owner_locks });
  return rows;
}
function levelOf(r) { return r.used >= r.max ? "full" : r.used >= 0.8 * r.max ? "near" : "ok"; }
// The limit nearest to its end, as a badge for the namespace list; null when none is set.
function fullest(s) {
  const rows = limitRows(s);
  if (!rows.length) return null;
  const r = rows.reduce((a, b) => (b.used / Math.max(b.max, 1) > a.used / Math.max(a.max, 1) ? b : a));
  return { level: levelOf(r), short: `${r.used}/${r.max}`, text: `${r.name}: ${r.used} of ${r.max}` };
}
function renderLimits() {
  const box = $("limits");
  box.replaceChildren();
  if (!st.ns || !st.limits) return;
  const rows = limitRows(st.limits);
  const whose = st.limits.own ? "its own" : "the default";
  if (!rows.length) { box.append(el("span", { class: "muted" }, `No limits (${whose}).`)); return; }
  box.append(el("span", { class: "muted" }, `Limits (${whose}): `));
  for (const r of rows) {
    const pct = Math.min(100, Math.round((100 * r.used) / Math.max(r.max, 1)));
    box.append(el("span", { class: "limit " + levelOf(r), "data-limit": r.name },
      `${r.name} ${r.used} of ${r.max}`, el("span", { class: "bar" }, el("span", { style: { width: pct + "%" } }))));
  }
}

function markCurrentNamespace() {
  for (const a of document.querySelectorAll("#ns-list a")) a.classList.toggle("current", a.dataset.ns === st.ns);
}

// A lock's or a waiter's paths ({role: path}, docs/json.md) in its
// operation's role order.
function targetList(item) {
  const op = st.info.matrix.ops.find((o) => o.name === item.op);
  const roles = op ? op.roles : Object.keys(item.targets);
  return roles.filter((r) => r in item.targets).map((role) => ({ role, path: item.targets[role] }));
}

// ---- the lock tree --------------------------------------------------------
function buildTree() {
  const root = { name: "/", path: "/", kids: new Map(), here: [], count: 0 };
  for (const lock of st.locks) {
    for (const t of targetList(lock)) {
      let node = root;
      node.count++;
      for (const part of t.path.split("/").filter((p) => p !== "")) {
        const path = (node.path === "/" ? "" : node.path) + "/" + part;
        if (!node.kids.has(part)) node.kids.set(part, { name: part, path, kids: new Map(), here: [], count: 0 });
        node = node.kids.get(part);
        node.count++;
      }
      node.here.push({ lock, role: t.role });
    }
  }
  return root;
}

function waitersByBlocker() {
  const by = new Map();
  for (const w of st.waiters)
    for (const b of w.blocked_by) {
      if (!by.has(b.id)) by.set(b.id, []);
      if (!by.get(b.id).includes(w)) by.get(b.id).push(w);
    }
  return by;
}

function lockRow(lock, role, waitersOf) {
  const row = el("div", { class: "lock", "data-lock-id": lock.id, style: { "--c": opColor(lock.op) } },
    el("span", { class: "badge" }, `${lock.op} · ${role}`),
    el("span", { class: "owner" }, lock.owner),
    el("span", { class: "meta" }, `fence ${lock.fence} · holds ${lock.holds} · lease left ${secs(lock.expires_in_ms)}`),
    el("span", { class: "meta" }, lock.id));
  if (targetList(lock).length > 1)
    row.append(el("span", { class: "path" }, targetList(lock).map((t) => `${t.role} ${t.path}`).join("  →  ")));
  if (st.blockers.has(lock.id)) row.classList.add("blocker");
  if (st.info.admin) row.append(forceButton(lock));
  const frag = el("div", {}, row);
  for (const w of waitersOf.get(lock.id) || [])
    frag.append(el("div", { class: "waiting", "data-waiter-id": w.id },
      `${w.owner} waits to ${waitsTo(w)} ${targetList(w).map((t) => t.path).join(" → ")} (waited ${secs(w.waited_ms)})`));
  return frag;
}

function forceButton(lock) {
  const box = el("span", {});
  const ask = el("button", { type: "button", class: "danger force" }, "force release");
  ask.addEventListener("click", () => {
    const yes = el("button", { type: "button", class: "danger confirm-yes" }, "yes, release it");
    const no = el("button", { type: "button" }, "cancel");
    box.replaceChildren(el("span", { class: "confirm" }, `Release lock ${lock.id} of ${lock.owner}?`, yes, no));
    no.addEventListener("click", () => box.replaceChildren(ask));
    yes.addEventListener("click", async () => {
      try {
        const r = await api("/api/force-release", {
          method: "POST", headers: { "X-Pathlock-Console": "1", "Content-Type": "application/x-www-form-urlencoded" },
          body: q({ ns: st.ns, id: lock.id }),
        });
        showError(r.released ? "" : `lock ${lock.id} was no longer held`);
      } catch (e) { showError(e.message); }
      await refresh();
    });
  });
  box.append(ask);
  return box;
}

function renderNode(node, waitersOf) {
  const d = el("details", { "data-path": node.path });
  d.append(el("summary", {}, el("span", { class: "folder" }, node.path === "/" ? "/" : node.name),
    el("span", { class: "n" }, `${node.count} loaded lock${node.count === 1 ? "" : "s"} here and below` +
      (node.path === "/" && st.next ? " (more to load)" : ""))));
  const fill = () => {
    if (d.dataset.filled) return;
    d.dataset.filled = "1";
    const body = el("div", { class: "node-body" });
    for (const h of node.here) body.append(lockRow(h.lock, h.role, waitersOf));
    for (const name of [...node.kids.keys()].sort()) body.append(renderNode(node.kids.get(name), waitersOf));
    d.append(body);
  };
  d.addEventListener("toggle", () => {
    if (d.open) { st.open.add(node.path); st.closed.delete(node.path); fill(); }
    else { st.open.delete(node.path); st.closed.add(node.path); }
  });
  // Open: what the user opened, and small folders (few locks below) unless
  // the user closed them; big folders open only when asked (lazy).
  if (st.open.has(node.path) || (node.count <= 20 && !st.closed.has(node.path))) { d.open = true; fill(); }
  return d;
}

function renderTree() {
  const tree = $("tree");
  if (!st.ns) { tree.replaceChildren(el("p", { class: "muted" }, "Choose a namespace.")); return; }
  const root = buildTree();
  tree.replaceChildren(renderNode(root, waitersByBlocker()));
  if (st.locks.length === 0) tree.append(el("p", { class: "muted" }, "No locks held."));
  $("locks-more").hidden = !st.next;
  $("counts").textContent = `${st.locks.length} lock${st.locks.length === 1 ? "" : "s"} shown${st.next ? " (more to load)" : ""}` +
    ` · ${st.waiters.length} waiter${st.waiters.length === 1 ? "" : "s"}`;
}

// What a waiter waits to do: its operation, or for a waiting conversion
// (docs/design.md#conversion) the lock it converts and the new operation.
function waitsTo(w) {
  return w.converts ? `convert lock ${w.converts} to ${w.op}` : w.op;
}

function renderWaiters() {
  const list = $("waiters");
  list.replaceChildren();
  if (!st.waiters.length) list.append(el("li", { class: "muted" }, "Nobody waits."));
  for (const w of st.waiters) {
    const by = el("ul", { class: "blocked-by" });
    for (const b of w.blocked_by)
      by.append(el("li", { "data-blocker-id": b.id },
        el("span", { class: "badge", style: { "--c": opColor(b.op) } }, b.kind === "waiter" ? `waiter · ${b.op}` : b.op),
        " ", el("b", {}, b.owner), " ", el("span", { class: "path" }, b.path)));
    if (!w.blocked_by.length) by.append(el("li", { class: "muted" }, "nothing blocks it now"));
    list.append(el("li", { "data-waiter-id": w.id },
      el("b", {}, w.owner), ` waits to ${waitsTo(w)} `, el("span", { class: "path" }, targetList(w).map((t) => t.path).join(" → ")),
      el("span", { class: "meta" }, ` · waited ${secs(w.waited_ms)} · blocked by:`), by));
  }
}

async function loadLocks(more) {
  if (!st.ns) return;
  // A refresh reloads as many locks as are shown (one page when few).
  const limit = more ? PAGE : Math.min(10000, Math.max(PAGE, st.locks.length));
  const page = await api("/api/locks?" + q({ ns: st.ns, limit, ...(more ? { after: st.next } : {}) }));
  st.locks = more ? st.locks.concat(page.locks) : page.locks;
  st.next = page.next;
  st.waiters = (await api("/api/waiters?" + q({ ns: st.ns }))).waiters;
  st.limits = await api("/api/limits?" + q({ ns: st.ns }));
}

async function refresh() {
  try {
    if (!$("page-locks").hidden) {
      await loadLocks(false);
      renderTree();
      renderLimits();
      renderWaiters();
    } else if (!$("page-metrics").hidden) await loadMetrics();
    $("status").textContent = `${st.info.backend} · matrix ${st.info.matrix.name} ${st.info.matrix.version}` +
      ` · ${st.info.admin ? "admin" : "read-only"} · updated ${new Date().toLocaleTimeString()}`;
  } catch (e) { showError(e.message); }
}

async function chooseNamespace(ns) {
  st.ns = ns; st.limits = null; st.locks = []; st.next = ""; st.waiters = []; st.blockers = new Set(); st.open = new Set(["/"]); st.closed = new Set();
  $("ns-title").textContent = ns ? `Namespace ${ns}` : "No namespace chosen";
  $("why-answer").replaceChildren();
  markCurrentNamespace();
  showError("");
  await refresh();
}

// ---- why is this blocked --------------------------------------------------
function whyPaths() {
  const op = st.info.matrix.ops.find((o) => o.name === $("why-op").value);
  const box = $("why-paths");
  const old = [...box.querySelectorAll("input")].map((i) => i.value);
  box.replaceChildren();
  op.roles.forEach((role, i) =>
    box.append(el("label", {}, `${role} path`, el("input", { name: "path", value: old[i] || "", placeholder: "/a/b" }))));
}

async function askWhy(ev) {
  ev.preventDefault();
  const out = $("why-answer");
  const params = new URLSearchParams({ ns: st.ns, op: $("why-op").value });
  for (const i of $("why-paths").querySelectorAll("input")) params.append("path", i.value);
  try {
    const r = await api("/api/why?" + params.toString());
    showError("");
    st.blockers = new Set(r.blockers.map((b) => b.id));
    for (const b of r.blockers) {  // open the folders down to each blocker
      let p = "";
      st.open.add("/");
      for (const part of b.path.split("/").filter((x) => x)) { p += "/" + part; st.open.add(p); st.closed.delete(p); }
    }
    const list = el("ul", {});
    if (!r.blockers.length) list.append(el("li", { class: "ok" }, "Nothing blocks it: it would be granted now."));
    for (const b of r.blockers)
      list.append(el("li", { "data-blocker-id": b.id },
        el("span", { class: "bad" }, b.kind === "waiter" ? "waiting request " : "held lock "), el("b", {}, b.id),
        ` of ${b.owner}: ${b.op} ${b.role} `, el("span", { class: "path" }, b.path),
        ` (${b.relation}, refuses ${b.requested_role} ${b.requested_path})`));
    if (r.truncated) list.append(el("li", { class: "muted" }, "… and more"));
    out.replaceChildren(list);
    renderTree();
  } catch (e) { out.replaceChildren(el("p", { class: "bad" }, e.message)); }
}

// ---- metrics --------------------------------------------------------------
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// Where the grid's counts come from: the engines scraped (--scrape), each
// with its state, and the pairs naming operations this matrix lacks.
function renderSources(grid) {
  const n = grid.sources.length;
  $("heat-from").textContent = grid.counted_by === "sources"
    ? `Refusals reported by ${grid.reporting} of ${plural(n, "engine")} (their /metrics, pulled every 5 s),` +
      " summed by operation name."
    : "Counted by this console (its own engine and its “why” dry runs): it scrapes no engine" +
      " (start it with --scrape URL to draw the services' refusals).";
  $("sources-box").hidden = !n;
  $("sources").replaceChildren(...grid.sources.map((s) => {
    const when = s.pulled_ms_ago === null ? "not pulled yet" : `pulled ${secs(s.pulled_ms_ago)} ago in ${s.took_ms} ms`;
    const li = el("li", { "data-source": s.url, "data-state": s.state },
      el("span", { class: `state ${s.state}` }, s.state), " ", el("span", { class: "path" }, s.url),
      el("span", { class: "meta" }, ` · ${when} · ${plural(s.refusals, "refusal")} in the grid` +
        (s.unknown_refusals ? ` · ${s.unknown_refusals} naming operations this matrix lacks` : "")));
    if (s.state === "error")
      li.append(el("div", { class: "bad source-error" }, s.error + (s.ok_ms_ago === null
        ? " (nothing counted from it yet)" : ` (its counts are from its last good pull, ${secs(s.ok_ms_ago)} ago)`)));
    else if (s.state === "ok" && !s.family_seen)
      li.append(el("div", { class: "muted" }, "its text has no pathlock_refusals_total: is it a pathlock exporter?"));
    return li;
  }));
  $("unknown-ops").hidden = !grid.unknown_ops.length;
  const rows = grid.unknown_ops.map((u) => el("tr", {}, el("td", {}, u.op), el("td", {}, u.held_op), el("td", {}, String(u.count))));
  if (grid.unknown_ops_left_off) rows.push(el("tr", {}, el("td", { colSpan: 3 }, `… and ${grid.unknown_ops_left_off} more pairs`)));
  $("unknown-rows").replaceChildren(...rows);
}

async function loadMetrics() {
  const [text, grid] = await Promise.all([fetch("/metrics").then((r) => r.text()), api("/api/grid")]);
  $("prom").textContent = text;
  const max = Math.max(1, ...grid.refusals.flat());
  const sym = { same: "=", held_ancestor: "↑", held_descendant: "↓" };
  const from = grid.counted_by === "sources" ? `reported by ${plural(grid.reporting, "engine")}` : "counted by this console";
  const table = el("table", { class: "heat" });
  const head = el("tr", {}, el("th", {}, "requested \\ held"));
  grid.ops.forEach((o) => head.append(el("th", { title: o.label }, o.name)));
  table.append(head);
  grid.ops.forEach((o, i) => {
    const tr = el("tr", {}, el("th", { class: "row", title: o.label }, o.name));
    grid.ops.forEach((h, j) => {
      const n = grid.refusals[i][j], rels = grid.rules[i][j];
      const td = el("td", { class: rels.length ? "denied" : "allowed", "data-refusals": n,
        title: `${o.name} requested, ${h.name} held: ${n} refusal(s) ${from}; refused when ${rels.join(", ") || "never"}` },
        el("span", { class: "count" }, n ? String(n) : ""), rels.map((r) => sym[r]).join("") || "·");
      if (n) td.style.background = `rgba(208, 52, 44, ${0.15 + 0.75 * n / max})`;
      tr.append(td);
    });
    table.append(tr);
  });
  $("heat").replaceChildren(table);
  renderSources(grid);
}

function showTab(name) {
  for (const b of document.querySelectorAll("nav .tab")) b.classList.toggle("active", b.dataset.tab === name);
  for (const page of document.querySelectorAll("main > .page")) page.hidden = page.id !== `page-${name}`;
  refresh();
}

async function start() {
  try {
    st.info = await api("/api/info");
    for (const o of st.info.matrix.ops)
      $("why-op").append(el("option", { value: o.name, title: o.label }, o.name));
    $("why-op").addEventListener("change", whyPaths);
    whyPaths();
    $("why-form").addEventListener("submit", askWhy);
    for (const b of document.querySelectorAll("nav .tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
    $("ns-more").addEventListener("click", () => loadNamespaces(true).catch((e) => showError(e.message)));
    $("locks-more").addEventListener("click", async () => {
      try { await loadLocks(true); renderTree(); renderWaiters(); } catch (e) { showError(e.message); }
    });
    window.addEventListener("hashchange", () => chooseNamespace(nsFromHash()));
    const first = await loadNamespaces(false);
    await chooseNamespace(nsFromHash() || first[0] || "");
    st.timer = setInterval(() => { if ($("live").checked) refresh(); }, 3000);
  } catch (e) { showError(e.message); }
}
function nsFromHash() {
  const m = /^#ns=(.*)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : "";
}
start();
