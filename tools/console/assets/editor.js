// The Matrix page of the console (docs/console.md#the-matrix-page): a
// product owner's editor for the compatibility matrix. The page keeps the
// matrix being edited as a JSON document; every check, diff, scaffold and
// "try it" is answered by the server with pathlock's own matrix code
// (/api/matrix/*), so what this page says is what `pathlock matrix lint` and
// `pathlock matrix diff` say. Matrix text is attacker-controlled like
// everything else: textContent only. Uses el, $, api and showError of app.js.
"use strict";

const ed = {
  baseText: "", baseName: "", name: "edited.json", text: "", doc: null, result: null, grid: null,
  sel: null, pending: null, pendingReason: "", seq: 0, opened: false,
};
const MARK = { allow: "√", deny: "×", unrelated: "/" };
const NEXT = { allow: "deny", deny: "unrelated", unrelated: "allow" };
const REL_WORDS = { same: "same path", held_ancestor: "requested inside held", held_descendant: "requested above held" };
const RULE_KEYS = ["verdict", "relation", "requested_role", "origin", "decision", "review"];
// Names come from the file: read and write only own properties (an
// operation may be called "constructor"; "__proto__" must not reach a prototype).
const own = (o, k) => (o && typeof o === "object" && Object.hasOwn(o, k) ? o[k] : undefined);
function setOwn(o, k, v) {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

async function post(path, body) {
  return api(path, {
    method: "POST", body: JSON.stringify(body),
    headers: { "Content-Type": "application/json", "X-Pathlock-Console": "1" },
  });
}

// The edited file's text. Every edit replaces only the value it changes, in
// place (/api/matrix/set), so the download keeps the opened file's layout and
// its diff against the opened file is the edited cells' lines.
function editedText() { return ed.text; }
function setText(text) {
  ed.text = text;
  try { ed.doc = JSON.parse(text); } catch (e) { ed.doc = null; }
}

// Replaces the value at `path` (keys from the top) with `value`, in the text.
async function setValue(path, value) {
  const res = await post("/api/matrix/set", { text: ed.text, name: ed.name, path, value });
  setText(res.text);
}

// ---- opening ------------------------------------------------------------
async function openText(text, name) {
  ed.baseText = text;
  ed.baseName = name;
  ed.name = name.split("/").pop() || "edited.json";
  ed.sel = null;
  ed.pending = null;
  setText(text);
  $("ed-source").textContent = name;
  if (!ed.doc || typeof ed.doc !== "object" || Array.isArray(ed.doc)) {
    ed.doc = null;
    ed.result = null;
    showEditorProblems([{ text: `${name}: not JSON: the file must hold one JSON object (matrix/README.md)` }]);
    $("ed-grid").replaceChildren();
    return;
  }
  await check();
}

async function openLoaded() {
  const f = await api("/api/matrix/loaded");
  if (!f.text) { showError(`the console's matrix file cannot be read (${f.error}); upload one instead`); return; }
  await openText(f.text, f.name);
}

function openUpload(ev) {
  const file = ev.target.files[0];
  if (!file) return;
  const reader = new FileReader();
  reader.onload = () => openText(String(reader.result), file.name).catch((e) => showError(e.message));
  reader.readAsText(file);
}

// ---- checking -----------------------------------------------------------
async function check() {
  const seq = ++ed.seq;
  const r = await post("/api/matrix/check", { base: ed.baseText, edited: editedText(), name: ed.name });
  if (seq !== ed.seq) return;  // an older answer arrived late
  ed.result = r;
  ed.grid = r.grid || rawGrid(ed.doc);
  $("ed-version").value = typeof own(ed.doc, "version") === "string" ? ed.doc.version : "";
  renderGrid();
  renderLint();
  renderDiff();
  renderCell();
  $("ed-json").textContent = editedText();
}

// An invalid file's grid as written (operation names and labels, each cell's
// JSON), so its problems still point at cells and a cell can be fixed here.
function rawGrid(doc) {
  const list = own(doc, "operations");
  const ops = (Array.isArray(list) ? list : [])
    .filter((o) => typeof own(o, "op") === "string")
    .map((o) => ({ name: o.op, label: typeof own(o, "label") === "string" ? o.label : "", example: "", roles: [] }));
  const rows = own(doc, "grid");
  const cells = ops.map((h) => ops.map((q) => {
    const v = own(own(rows, h.name), q.name);
    const text = v === undefined ? "(missing)" : JSON.stringify(v);
    return { raw: true, value: v, tone: "raw", pieces: [{ kind: "raw", text: text.length > 24 ? text.slice(0, 23) + "…" : text }] };
  }));
  return { raw: true, ops, cells, relations: [], legend: [] };
}

function problemsAt(list, op, cell) {
  return (list || []).filter((p) => p.op === op && (cell === undefined || p.cell === cell));
}

// ---- the grid -----------------------------------------------------------
function opHead(op, tag, cls) {
  return el(tag, { class: cls },
    el("span", { class: "label" }, op.label || op.name), el("span", { class: "name" }, op.name));
}

function renderGrid() {
  const g = ed.grid;
  const box = $("ed-grid");
  if (!g) { box.replaceChildren(); return; }
  const r = ed.result;
  const stale = !r.valid;  // an invalid file: its cells as written (rawGrid)
  const table = el("table", { class: "matrix" + (stale ? " stale" : ""), id: "ed-table" });
  const head = el("tr", {}, el("th", { class: "corner" }, "held ↓ requested →"));
  for (const op of g.ops) head.append(opHead(op, "th", "col"));
  table.append(el("thead", {}, head));
  const body = el("tbody");
  g.ops.forEach((held, h) => {
    const th = opHead(held, "th", "row");
    if (held.example) th.append(el("span", { class: "example" }, held.example));
    if (problemsAt(r.problems, held.name).some((p) => p.cell === undefined)) th.classList.add("problem");
    const tr = el("tr", {}, th);
    g.ops.forEach((req, q) => {
      const c = g.cells[h][q];
      const words = (c.words || []).join("\n");
      const td = el("td", { class: `cell tone-${c.tone}`, "data-held": held.name, "data-requested": req.name,
        tabIndex: 0, title: (words ? words + "\n" : "") + "click for the explanation and to edit" });
      for (const p of c.pieces) td.append(el("span", { class: `piece piece-${p.kind}` }, p.text));
      if (problemsAt(r.problems, held.name, req.name).length) td.classList.add("problem");
      if (problemsAt(r.warnings, held.name, req.name).length) td.classList.add("warned");
      if (ed.sel && ed.sel.held === held.name && ed.sel.requested === req.name) td.classList.add("selected");
      td.addEventListener("click", () => selectCell(held.name, req.name));
      td.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectCell(held.name, req.name); } });
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);
  box.replaceChildren(table);
  $("ed-legend").replaceChildren(...g.legend.map((e) =>
    el("span", { class: "legend-entry" }, el("span", { class: `piece piece-${e.kind}` }, e.sample), " ", e.meaning)));
}

function selectCell(held, requested) {
  ed.sel = { held, requested };
  ed.pending = null;
  ed.pendingReason = "";
  for (const td of document.querySelectorAll("#ed-table td.cell"))
    td.classList.toggle("selected", td.dataset.held === held && td.dataset.requested === requested);
  renderCell();
  $("ed-cell").scrollIntoView({ block: "nearest" });
}

function cellAt(held, requested) {
  const g = ed.grid;
  const h = g.ops.findIndex((o) => o.name === held), q = g.ops.findIndex((o) => o.name === requested);
  return h < 0 || q < 0 ? null : { h, q, held: g.ops[h], req: g.ops[q], cell: g.cells[h][q] };
}

// ---- one cell: explanation and editing ------------------------------------
function renderCell() {
  const box = $("ed-cell");
  const at = ed.sel && ed.grid ? cellAt(ed.sel.held, ed.sel.requested) : null;
  if (!at) { box.replaceChildren(el("p", { class: "muted" }, "Click a cell of the grid: its explanation and its rules show here.")); return; }
  const { held, req, cell } = at;
  if (cell.raw) { renderRawCell(box, held, req, cell); return; }
  if (!ed.pending) ed.pending = { held: held.name, requested: req.name, table: JSON.parse(JSON.stringify(cell.verdicts)) };
  const rels = ed.grid.relations;
  const kids = [el("h3", {}, `${held.name} held × ${req.name} requested`), cellReading(cell),
    el("pre", { class: "explain", id: "ed-explain" }, cell.explain)];
  for (const p of problemsAt(ed.result.problems, held.name, req.name)) kids.push(el("p", { class: "bad" }, p.text));
  const changed = [];
  held.roles.forEach((hr, i) => {
    const t = el("table", { class: "verdicts" });
    t.append(el("tr", {}, el("th", {}, `${req.name} role`), ...rels.map((rel) => el("th", {}, REL_WORDS[rel] || rel))));
    req.roles.forEach((rr, j) => {
      const tr = el("tr", {}, el("th", {}, rr.role));
      rels.forEach((rel, k) => {
        const v = ed.pending.table[i][j][k], was = cell.verdicts[i][j][k];
        if (v !== was) changed.push(i);
        const b = el("button", { type: "button", class: `verdict v-${v}` + (v !== was ? " changed" : ""),
          "data-role": hr.role, "data-requested-role": rr.role, "data-relation": rel,
          title: `${v}; click to cycle allow → deny → unrelated` }, `${MARK[v]} ${v}`);
        b.addEventListener("click", () => { ed.pending.table[i][j][k] = NEXT[v]; renderCell(); });
        tr.append(el("td", {}, b));
      });
      t.append(tr);
    });
    kids.push(el("h4", {}, `held ${hr.role} (${(hr.symbols || []).join(", ")})`), t);
  });
  const reason = el("input", { id: "ed-reason", type: "text", placeholder: "why (required; recorded as the rule's decision)" });
  reason.value = ed.pendingReason || "";
  const apply = el("button", { type: "button", id: "ed-apply" }, cell.review && !changed.length ? "decide as shown" : "apply");
  const can = () => reason.value.trim() !== "" && (changed.length > 0 || cell.review);
  apply.disabled = !can();
  reason.addEventListener("input", () => { ed.pendingReason = reason.value; apply.disabled = !can(); });
  apply.addEventListener("click", () => applyCell(at, reason.value.trim()).catch((e) => showError(e.message)));
  const revert = el("button", { type: "button" }, "undo changes");
  revert.addEventListener("click", () => { ed.pending = null; renderCell(); });
  kids.push(el("label", { class: "reason" }, "reason ", reason), el("div", { class: "actions" }, apply, revert),
    el("p", { class: "muted" }, changed.length || cell.review
      ? "Applying records the rule as the owner's (origin \"owner\") with your reason, and clears its review mark."
      : "Click a verdict to change it."));
  box.replaceChildren(...kids);
}

// The cell's notation and, beside it, the same cell in words.
function cellReading(cell) {
  const notation = el("div", { class: "notation", id: "ed-notation" },
    ...cell.pieces.map((p) => el("span", { class: `piece piece-${p.kind}` }, p.text)));
  const words = el("ul", { class: "words", id: "ed-words" }, ...(cell.words || []).map((w) => el("li", {}, w)));
  return el("div", { class: "reading" }, notation, words);
}

// A cell of an invalid file: its problems and its JSON, to fix by hand.
function renderRawCell(box, held, req, cell) {
  const text = el("textarea", { id: "ed-raw", rows: 8 });
  text.value = cell.value === undefined ? "" : JSON.stringify(cell.value, null, 1);
  const fix = el("button", { type: "button", id: "ed-raw-apply" }, "replace the cell");
  fix.addEventListener("click", () => {
    let value;
    try { value = JSON.parse(text.value); } catch (e) { showError(`the cell is not JSON: ${e.message}`); return; }
    replaceCell(held.name, req.name, value).then(check).then(() => showError(""), (e) => showError(e.message));
  });
  box.replaceChildren(el("h3", {}, `${held.name} held × ${req.name} requested`),
    ...problemsAt(ed.result.problems, held.name, req.name).map((p) => el("p", { class: "bad" }, p.text)),
    el("p", { class: "muted" }, "The file is not valid, so the grid shows each cell as written. Fix this cell's JSON (matrix/README.md, \"Cells\"):"),
    text, el("div", { class: "actions" }, fix));
}

// Writes one cell: in place when the file has it, else (a cell or row the
// file lacks) by adding it to the document and writing the whole document.
async function replaceCell(held, requested, value) {
  const row = own(own(ed.doc, "grid"), held);
  if (row && typeof row === "object" && !Array.isArray(row) && Object.hasOwn(row, requested)) {
    await setValue(["grid", held, requested], value);
    return;
  }
  if (!own(ed.doc, "grid") || typeof ed.doc.grid !== "object") setOwn(ed.doc, "grid", {});
  if (!own(ed.doc.grid, held) || typeof ed.doc.grid[held] !== "object") setOwn(ed.doc.grid, held, {});
  setOwn(ed.doc.grid[held], requested, value);
  setText(JSON.stringify(ed.doc, null, 2) + "\n");
}

function mostCommon(list) {
  const n = new Map();
  for (const v of list) n.set(v, (n.get(v) || 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1])[0][0];
}

// The simplest rule that gives `table` ([requested role][relation]): one
// verdict, or a verdict with "relation", or with "requested_role".
function ruleFrom(table, reqRoles, rels) {
  const flat = table.flat();
  const common = mostCommon(flat);
  if (flat.every((v) => v === common)) return { verdict: common };
  const byRel = (row, d) => {
    const o = {};
    row.forEach((v, k) => { if (v !== d) setOwn(o, rels[k], v); });
    return o;
  };
  if (table.every((row) => row.join() === table[0].join())) return { verdict: common, relation: byRel(table[0], common) };
  const byRole = {};
  table.forEach((row, j) => {
    if (row.every((v) => v === common)) return;
    const d = mostCommon(row), rel = byRel(row, d);
    setOwn(byRole, reqRoles[j].role, Object.keys(rel).length ? { verdict: d, relation: rel } : d);
  });
  return { verdict: common, requested_role: byRole };
}

const creditKey = (c) => `${c.origin}\u0000${c.decision || ""}`;
const creditFields = (c) => (c.decision ? { origin: c.origin, decision: c.decision } : { origin: c.origin });

// One held role's rule giving `table` ([requested role][relation]) with each
// verdict credited as `credits` says ({origin, decision}): the most common
// credit on the rule, every other verdict written out with its own. So an
// owner's reason goes only to the verdicts the owner changed.
function ruleWithCredits(table, credits, reqRoles, rels, fileOrigin) {
  const flat = credits.flat(), keys = flat.map(creditKey), top = mostCommon(keys);
  const rule = ruleFrom(table, reqRoles, rels);
  Object.assign(rule, creditFields(flat[keys.indexOf(top)]));
  credits.forEach((row, j) => {
    if (row.every((c) => creditKey(c) === top)) return;
    const pinned = (k) => (creditKey(row[k]) === top ? table[j][k] : { verdict: table[j][k], ...creditFields(row[k]) });
    if (reqRoles.length === 1) {  // the rule's own relations
      if (!rule.relation) rule.relation = {};
      rels.forEach((rel, k) => { if (creditKey(row[k]) !== top) setOwn(rule.relation, rel, pinned(k)); });
      return;
    }
    const d = mostCommon(table[j]), sub = { verdict: d, relation: {} };  // the role's own rule, every verdict
    rels.forEach((rel, k) => { if (table[j][k] !== d || creditKey(row[k]) !== top) setOwn(sub.relation, rel, pinned(k)); });
    if (!rule.requested_role) rule.requested_role = {};
    setOwn(rule.requested_role, reqRoles[j].role, sub);
  });
  const plain = Object.keys(rule).length === 2 && rule.origin === fileOrigin;
  return plain ? rule.verdict : rule;
}

// A cell as one rule per held role (a bare cell is copied to each role).
function perHeldRole(value, heldRoles) {
  const bare = typeof value === "string" ||
    (value && typeof value === "object" && Object.keys(value).some((k) => RULE_KEYS.includes(k)));
  if (!bare) return value;
  const o = {};
  for (const r of heldRoles) setOwn(o, r.role, JSON.parse(JSON.stringify(value)));
  return o;
}

// Writes the pending verdicts of the selected cell. Only the held roles with a
// changed verdict (or a rule marked for review, now decided) are rewritten;
// in them the owner's reason is credited to the changed verdicts (every
// verdict of a decided review) and the others keep where they came from.
async function applyCell(at, reason) {
  const { held, req, cell } = at;
  const rules = perHeldRole(own(own(ed.doc.grid, held.name), req.name), held.roles);
  const fileOrigin = typeof own(ed.doc, "origin") === "string" ? ed.doc.origin : "owner";
  const owner = { origin: "owner", decision: reason };
  held.roles.forEach((hr, i) => {
    const old = own(rules, hr.role);
    const marked = old && typeof old === "object" && Object.hasOwn(old, "review");
    const table = ed.pending.table[i];
    if (JSON.stringify(table) === JSON.stringify(cell.verdicts[i]) && !marked) return;
    const credits = table.map((row, j) => row.map((v, k) =>
      (marked || v !== cell.verdicts[i][j][k] ? owner : cell.credits[i][j][k])));
    setOwn(rules, hr.role, ruleWithCredits(table, credits, req.roles, ed.grid.relations, fileOrigin));
  });
  await replaceCell(held.name, req.name, rules);
  ed.pending = null;
  ed.pendingReason = "";
  await check();
}

// ---- lint and diff --------------------------------------------------------
function located(item, cls) {
  const li = el("li", { class: cls }, item.text);
  if (item.op && item.cell) {
    li.classList.add("link");
    li.tabIndex = 0;
    li.addEventListener("click", () => selectCell(item.op, item.cell));
  }
  return li;
}

function showEditorProblems(problems) {
  $("ed-lint").replaceChildren(el("p", { class: "bad" }, `${problems.length} problem(s): the file is not valid`),
    el("ul", {}, ...problems.map((p) => located(p, "bad"))));
}

function renderLint() {
  const r = ed.result;
  if (!r.valid) { showEditorProblems(r.problems); return; }
  const kids = [el("p", { class: "ok" }, `valid · ${r.warnings.length} warning(s)`)];
  if (r.version_problem) kids.push(el("p", { class: "bad", id: "ed-version-problem" }, r.version_problem));
  kids.push(el("ul", {}, ...r.warnings.map((w) => located(w, "warn"))));
  $("ed-lint").replaceChildren(...kids);
}

function renderDiff() {
  const r = ed.result;
  if (r.base_problems && r.base_problems.length) {
    $("ed-diff").replaceChildren(el("p", { class: "bad" },
      `no diff: the opened file is not valid (${r.base_problems.length} problem(s)); open or upload a valid one`),
      el("ul", {}, ...r.base_problems.map((p) => el("li", { class: "bad" }, p.text))));
    return;
  }
  const lines = r.diff || [];
  $("ed-diff").replaceChildren(...(lines.length
    ? [el("ul", {}, ...lines.map((l) => located(l, "diff-line")))]
    : [el("p", { class: "muted" }, r.valid ? "" : "no diff while the edited matrix is not valid")]));
}

// ---- add an operation -------------------------------------------------------
const words = (s) => s.split(",").map((x) => x.trim()).filter((x) => x);

async function addOperation(ev) {
  ev.preventDefault();
  if (!ed.doc) throw new Error("open a matrix first");
  const op = $("add-op").value.trim(), roles = words($("add-roles").value), symbols = words($("add-symbols").value);
  const text = editedText();
  const res = await post("/api/matrix/scaffold", {
    text, name: ed.name, op, roles, symbols: symbols.map((s) => s.split("/")),
    label: $("add-label").value.trim(), example: $("add-example").value.trim(),
  });
  if (editedText() !== text) throw new Error(`the matrix changed while ${op} was being added: add it again`);
  setText(res.text);
  $("add-form").reset();
  await check();
}

// ---- try it -------------------------------------------------------------------
async function tryIt(ev) {
  ev.preventDefault();
  if (!ed.doc) throw new Error("open a matrix first");
  const res = await post("/api/matrix/try", { base: ed.baseText, edited: editedText(), name: ed.name, scenario: $("try-text").value });
  const outcome = (run, i) => {
    if (run.error) return el("td", { class: "bad" }, run.error);
    const x = run.results[i];
    return el("td", { class: `outcome o-${x.outcome}` }, el("b", {}, x.outcome), x.reason ? " " + x.reason : "");
  };
  const t = el("table", { class: "try", id: "try-table" },
    el("tr", {}, el("th", {}, "step"), el("th", {}, "request"), el("th", {}, "loaded matrix"), el("th", {}, "edited matrix")));
  res.steps.forEach((s, i) => t.append(el("tr", {}, el("td", {}, String(i + 1)), el("td", { class: "req" }, s),
    outcome(res.loaded, i), outcome(res.edited, i))));
  $("try-answer").replaceChildren(t);
}

// ---- download -----------------------------------------------------------------
function download() {
  if (!ed.doc) { showError("open a matrix first"); return; }
  const blob = new Blob([editedText()], { type: "application/json" });
  const a = el("a", { href: URL.createObjectURL(blob), download: ed.name });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

function startEditor() {
  const guard = (f) => (ev) => Promise.resolve(f(ev)).then(() => showError(""), (e) => showError(e.message));
  $("ed-open-loaded").addEventListener("click", guard(openLoaded));
  $("ed-upload").addEventListener("change", openUpload);
  $("ed-download").addEventListener("click", download);
  $("ed-version").addEventListener("change", guard(async () => {
    if (!ed.doc) return;
    await setValue(["version"], $("ed-version").value);
    await check();
  }));
  $("add-form").addEventListener("submit", guard(addOperation));
  $("try-form").addEventListener("submit", guard(tryIt));
  // The console's matrix is opened when the Matrix page is first shown.
  $("tab-matrix").addEventListener("click", () => {
    if (ed.opened) return;
    ed.opened = true;
    openLoaded().catch((e) => showError(e.message));
  });
}
startEditor();
