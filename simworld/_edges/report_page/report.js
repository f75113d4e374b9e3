"use strict";
// simworld report page. Every value shown comes from the data embedded in this file and is put into the page
// as text (never as HTML): agents' arguments and results are untrusted. Episode details are stored in
// gzip-compressed chunks and decompressed only when an episode of that chunk is opened.
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const doc = D.doc;
  const R = D.rows;
  const N = R.scenario.length;
  const PAGE = 100;

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v);
      }
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  const $ = (id) => document.getElementById(id);
  const pct = (r) => (100 * r).toFixed(1) + "%";
  const fix3 = (x) => Number(x).toFixed(3);
  const json = (v) => JSON.stringify(v, null, 1);
  const epName = (s, seed, trial) => s + " seed " + seed + (trial ? " trial " + trial : "");

  // ---- summary -------------------------------------------------------------------------------------------
  const run = doc.run, ov = doc.overall;
  $("run-path").textContent = run.path;
  $("run-meta").textContent = "agent " + run.agent + " \u00b7 status " + run.status +
    (run.seeds ? " \u00b7 " + run.seeds.length + " seed(s)" : "") + (run.split ? " \u00b7 split " + run.split : "") +
    (run.trials > 1 ? " \u00b7 trials " + run.trials : "") +
    (run.contracts && run.contracts.length ? " \u00b7 contract " + run.contracts.map((c) => c || "none").join(", ") : "");
  if (run.note) $("banner").append(el("div", { class: "banner", "data-testid": "incomplete", text: "Incomplete run: " + run.note }));
  if (run.bad_lines.length) $("banner").append(el("div", { class: "banner", text: run.bad_lines.length + " result line(s) that are not JSON were skipped." }));
  $("n-episodes").textContent = ov.episodes;
  $("n-passed").textContent = ov.passed;
  $("n-failed").textContent = ov.failed;
  $("n-rate").textContent = pct(ov.pass_rate);
  $("n-mean").textContent = fix3(ov.mean_total);
  $("n-errors").textContent = ov.harness_errors;
  const passk = Object.entries(doc.pass_hat_k);
  if (passk.length) {
    $("passk-card").hidden = false;
    $("n-passk").textContent = passk.map(([k, v]) => k.replace("pass^", "") + ": " + fix3(v)).join("  ");
  }

  function bars(target, items, failing) {
    for (const it of items) {
      const bar = el("div", { class: failing ? "bar fail" : "bar" }, el("span"));
      bar.firstChild.style.width = (100 * it.frac).toFixed(2) + "%";
      const label = el("span", { class: "label", title: it.label, text: it.label });
      if (it.onclick) { label.style.cursor = "pointer"; label.addEventListener("click", it.onclick); }
      target.append(label, bar, el("span", { class: "mute", text: it.note }));
    }
  }
  bars($("chart-category"), doc.by_category.map((c) => ({
    label: c.name, frac: c.pass_rate, note: c.passed + "/" + c.episodes + " (" + pct(c.pass_rate) + ")",
    onclick: () => { setFilter("f-category", c.name); }
  })), false);
  const modes = doc.failure_modes.slice(0, 15);
  const maxFail = modes.length ? modes[0].failed : 1;
  bars($("chart-modes"), modes.map((m) => ({
    label: m.check, frac: m.failed / maxFail, note: m.failed + "/" + m.runs,
    onclick: () => { setFilter("f-check", m.check); setFilter("f-status", "failed"); }
  })), true);
  if (!modes.length) $("chart-modes").append(el("span", { class: "mute", text: "none: every check passed" }));
  if (doc.failure_modes.length > 15) $("chart-modes").append(el("span", { class: "mute", text: "... " + (doc.failure_modes.length - 15) + " more (filter by failed check below)" }));

  const catOf = {};
  D.scenarios.forEach((s, i) => { catOf[s] = D.categories[i]; });
  const scTable = $("by-scenario").tBodies[0];
  for (const s of doc.by_scenario) {
    scTable.append(el("tr", null, el("td", { text: s.name }), el("td", { text: catOf[s.name] || "unknown" }),
      el("td", { class: "num", text: s.episodes }), el("td", { class: "num", text: s.passed }),
      el("td", { class: "num", text: pct(s.pass_rate) }), el("td", { class: "num", text: fix3(s.mean_total) })));
  }

  // ---- episode table ---------------------------------------------------------------------------------------
  const index = new Map();  // "scenario|seed|trial" -> row number
  for (let i = 0; i < N; i++) index.set(D.scenarios[R.scenario[i]] + "|" + R.seed[i] + "|" + R.trial[i], i);

  function fill(select, values) { for (const v of values) select.append(el("option", { value: v, text: v })); }
  fill($("f-category"), [...new Set(D.categories)].sort());
  fill($("f-scenario"), [...D.scenarios].sort());
  fill($("f-check"), doc.failure_modes.map((m) => m.check));
  const checkIndex = new Map(D.checks.map((c, i) => [c, i]));

  let sortKey = null, sortDir = 1, page = 0, view = [], openRow = -1;
  function value(i, key) {
    switch (key) {
      case "scenario": return D.scenarios[R.scenario[i]];
      case "outcome": return D.outcomes[R.outcome[i]] || "";
      case "passed": return R.error[i] ? 2 : R.passed[i];
      default: return R[key][i];
    }
  }
  function refilter() {
    const st = $("f-status").value, cat = $("f-category").value, sc = $("f-scenario").value;
    const ck = $("f-check").value, seedText = $("f-seed").value.trim();
    const ci = ck ? checkIndex.get(ck) : -1;
    const seed = seedText === "" ? null : Number(seedText);
    view = [];
    for (let i = 0; i < N; i++) {
      if (st === "failed" && R.passed[i]) continue;
      if (st === "passed" && !R.passed[i]) continue;
      if (st === "error" && !R.error[i]) continue;
      const sid = D.scenarios[R.scenario[i]];
      if (sc && sid !== sc) continue;
      if (cat && D.categories[R.scenario[i]] !== cat) continue;
      if (ck && !R.failed[i].includes(ci)) continue;
      if (seed !== null && R.seed[i] !== seed) continue;
      view.push(i);
    }
    if (sortKey) {
      view.sort((a, b) => {
        const x = value(a, sortKey), y = value(b, sortKey);
        return (x < y ? -1 : x > y ? 1 : a - b) * sortDir;
      });
    }
    page = 0;
    $("match-count").textContent = view.length + " of " + N + " episode(s)";
    draw();
  }
  function draw() {
    const body = $("episodes").tBodies[0];
    const pages = Math.max(1, Math.ceil(view.length / PAGE));
    page = Math.min(page, pages - 1);
    $("page").textContent = "page " + (page + 1) + " of " + pages;
    $("prev").disabled = page === 0;
    $("next").disabled = page >= pages - 1;
    const rows = [];
    for (const i of view.slice(page * PAGE, (page + 1) * PAGE)) {
      const res = R.error[i] ? el("span", { class: "error", text: "ERROR" }) :
        R.passed[i] ? el("span", { class: "pass", text: "PASS" }) : el("span", { class: "fail", text: "FAIL" });
      const failed = R.failed[i].map((c) => D.checks[c]);
      const tr = el("tr", { class: i === openRow ? "ep open" : "ep", "data-row": i, onclick: () => openEpisode(i) },
        el("td", { text: D.scenarios[R.scenario[i]] }), el("td", { class: "num", text: R.seed[i] }),
        el("td", { class: "num", text: R.trial[i] }), el("td", { text: D.outcomes[R.outcome[i]] || "-" }),
        el("td", null, res), el("td", { class: "num", text: fix3(R.total[i]) }),
        el("td", { class: "num", text: R.steps[i] }),
        el("td", { class: "mute", text: failed.slice(0, 3).join(", ") + (failed.length > 3 ? " +" + (failed.length - 3) : "") }));
      rows.push(tr);
    }
    body.replaceChildren(...rows);
  }
  function setFilter(id, v) { $(id).value = v; refilter(); $("episodes").scrollIntoView(); }
  for (const id of ["f-status", "f-category", "f-scenario", "f-check"]) $(id).addEventListener("change", refilter);
  $("f-seed").addEventListener("input", refilter);
  $("prev").addEventListener("click", () => { page--; draw(); });
  $("next").addEventListener("click", () => { page++; draw(); });
  for (const th of document.querySelectorAll("#episodes th.sort")) {
    th.addEventListener("click", () => {
      const k = th.dataset.key;
      sortDir = sortKey === k ? -sortDir : 1;
      sortKey = k;
      refilter();
    });
  }

  // ---- episode details, decompressed lazily ---------------------------------------------------------------
  const chunks = new Map();
  async function chunk(c) {
    if (!chunks.has(c)) {
      chunks.set(c, (async () => {
        const b64 = document.getElementById("chunk-" + c).textContent.trim();
        const bin = atob(b64);
        const bytes = new Uint8Array(bin.length);
        for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        return (await new Response(stream).text()).split("\n");
      })());
    }
    return chunks.get(c);
  }
  async function details(i) {
    const lines = await chunk(Math.floor(i / D.chunk));
    const d = JSON.parse(lines[1 + i % D.chunk]);  // line 0: the system messages the chunk's transcripts share
    if (d.transcript.system !== null) d.transcript.system = JSON.parse(lines[0])[d.transcript.system];
    return d;
  }

  function table(head, rows) {
    return el("table", null, el("thead", null, el("tr", null, ...head.map((h) => el("th", { text: h })))),
      el("tbody", null, ...rows.map((r) => el("tr", null, ...r.map((c) => el("td", null, c))))));
  }
  function pre(v) { return el("pre", { text: typeof v === "string" ? v : json(v) }); }
  function findings(title, list) {
    if (!list || !list.length) return null;
    return el("div", null, el("h3", { text: title + " (" + list.length + ")" }), pre(list));
  }

  // The transcript: the system message (folded: it is long), the request, then each turn in order (the agent's
  // text, each call with its result), the failed checks beside the turn they name, and the end.
  function failedList(list) {
    if (!list.length) return null;
    return el("ul", { class: "failed" }, ...list.map((c) => el("li", null, el("b", { class: "fail", text: c.name }), " " + c.detail)));
  }
  function who(label, seq) {
    return el("div", { class: "who" }, label, seq === undefined ? null : el("span", { class: "mute", text: " seq " + seq }));
  }
  function turnView(t) {
    let body;
    if (t.kind === "crash") {
      body = [who("crash"), el("div", { class: "mute",
        text: "The agent crashed at its call " + t.at_call + "; a fresh agent took over from the session log." })];
    } else if (t.kind === "say") {
      body = [who("assistant", t.seq), el("div", { class: "say", "data-testid": "say", text: t.args.text })];
    } else {
      const what = t.kind === "invalid" ? "action (not a tool call)" : t.tool;
      body = [who("call", t.seq), el("div", null,
        el("b", { "data-testid": t.kind === "invalid" ? "invalid" : "call", text: what }), " ", el("span", { class: t.status === "ok" ? "pass" : "fail", text: t.status }),
        t.lost ? el("span", { class: "mute", text: " (the session log lost it)" }) : null,
        el("span", { class: "mute", text: " \u00b7 " + t.at }),
        el("details", null, el("summary", { text: "arguments" }), pre(t.args)),
        el("details", null, el("summary", { text: "result" }), pre(t.result)))];
    }
    return el("div", { class: "turn " + t.kind + (t.failed.length ? " bad" : "") }, ...body, failedList(t.failed));
  }
  function transcript(t) {
    const box = el("div", { class: "transcript", "data-testid": "transcript" });
    box.append(el("h3", { text: "transcript" + (t.turns ? " (" + t.turns.length + " turn(s))" : "") }));
    if (t.turns === null) box.append(el("p", { class: "mute", text: "(" + t.problem + ")" }));
    else {
      box.append(el("details", { class: "system" }, el("summary", { text: "system: the conversation's rules, then the policy (" +
        t.system.length + " characters; contract " + (t.contract || "none") + ")" }), pre(t.system)));
      box.append(el("div", { class: "turn user" }, who("user"), el("div", { class: "say", "data-testid": "request", text: t.request })));
      for (const turn of t.turns) box.append(turnView(turn));
    }
    const e = t.end;
    box.append(el("div", { class: "turn end", "data-testid": "end" }, who("end"),
      el("div", null, "outcome ", el("b", { text: String(e.outcome) }), " \u00b7 stop reason ", el("b", { text: String(e.stop_reason) })),
      failedList(e.failed)));
    return box;
  }

  async function openEpisode(i) {
    openRow = i;
    for (const tr of document.querySelectorAll("#episodes tr.ep")) tr.classList.toggle("open", Number(tr.dataset.row) === i);
    const box = $("detail");
    box.replaceChildren(el("p", { class: "mute", text: "loading..." }));
    let d;
    try { d = await details(i); } catch (e) {
      box.replaceChildren(el("p", { class: "fail", text: "could not read this episode's details: " + e })); return;
    }
    if (openRow !== i) return;
    const L = d.line;
    const res = L.harness_error ? el("span", { class: "error", text: "HARNESS ERROR" }) :
      L.passed ? el("span", { class: "pass", text: "PASS" }) : el("span", { class: "fail", text: "FAIL" });
    const parts = Object.entries(L.parts || {}).map(([k, v]) => k + " " + v).join(", ");
    const out = [
      el("h2", { "data-testid": "episode-title" }, epName(L.scenario, L.seed, L.trial || 0) + " ", res),
      el("div", { class: "kv" }, "outcome ", el("b", { text: String(L.outcome) }), " \u00b7 stop reason ",
        el("b", { text: String(L.stop_reason) }), " \u00b7 score ", el("b", { text: fix3(L.total) }),
        " \u00b7 agent ", el("b", { text: String(L.agent) })),
      el("div", { class: "kv mute", text: "parts: " + parts }),
    ];
    if (L.error) out.push(el("h3", { text: "agent error" }), pre(L.error));
    if (L.harness_error) out.push(el("h3", { text: "harness error" }), pre(L.harness_error));
    out.push(transcript(d.transcript));
    const checks = [...(L.checks || [])].sort((a, b) => Number(a.passed) - Number(b.passed));
    const failedN = checks.filter((c) => !c.passed).length;
    out.push(el("h3", { text: "checks (" + failedN + " failed of " + checks.length + ")" }),
      el("div", { "data-testid": "checks" }, table(["check", "result", "detail"], checks.map((c) => [
        c.name, c.passed ? el("span", { class: "pass", text: "pass" }) : el("span", { class: "fail", text: "FAIL" }),
        c.detail]))));
    const diff = L.state_diff || [];
    out.push(el("h3", { text: "state diff against the nearest valid end state (" + diff.length + ")" }),
      diff.length ? el("div", { "data-testid": "state-diff" }, table(["path", "expected", "actual"],
        diff.map((x) => [el("code", { text: x.path }), json(x.expected), json(x.actual)])))
        : el("p", { class: "mute", text: "none: the end state matches a valid one" }));
    for (const [title, key] of [["forbidden changes", "forbidden_changes"], ["unauthorised actions", "unauthorised_actions"],
      ["wrong recipients", "wrong_recipients"], ["unsupported figures", "unsupported_figures"],
      ["false claims", "false_claims"], ["order violations", "order_violations"], ["hook errors", "hook_errors"]]) {
      const f = findings(title, L[key]);
      if (f) out.push(f);
    }
    out.push(el("h3", { text: "counters" }), pre(L.counters || {}));
    box.replaceChildren(...out);
    history.replaceState(null, "", "#" + encodeURIComponent(L.scenario + "|" + L.seed + "|" + (L.trial || 0)));
  }

  // ---- comparison ------------------------------------------------------------------------------------------
  const cmp = doc.compare;
  if (cmp) {
    $("compare").hidden = false;
    $("compare-summary").append(el("p", { "data-testid": "compare-summary",
      text: "Baseline " + cmp.baseline + ": " + cmp.regressions + " regression(s) (pass \u2192 fail), " + cmp.fixes +
        " fix(es) (fail \u2192 pass) over " + cmp.common + " common episode(s); passed " + cmp.passed_before + " \u2192 " +
        cmp.passed_after + ", mean score " + fix3(cmp.mean_total_before) + " \u2192 " + fix3(cmp.mean_total_after) + "." }));
    if (cmp.different_grids) $("compare-summary").append(el("p", { class: "banner", text: "The runs differ (" + cmp.different_grids + "); only their common episodes are compared." }));
    if (cmp.different_contracts) $("compare-summary").append(el("p", { class: "banner", "data-testid": "contract-note",
      text: "The conversation's rules differ (" + cmp.different_contracts + "): the agents were told different rules, so the scores may not mean the same." }));
    if (cmp.baseline_note) $("compare-summary").append(el("p", { class: "banner", text: "Baseline: " + cmp.baseline_note }));
    const pf = (p) => p ? el("span", { class: "pass", text: "PASS" }) : el("span", { class: "fail", text: "FAIL" });
    const body = $("flips").tBodies[0];
    for (const c of cmp.changes.slice(0, 500)) {
      const i = index.get(c.scenario + "|" + c.seed + "|" + c.trial);
      body.append(el("tr", { class: "ep", onclick: () => { if (i !== undefined) openEpisode(i); $("detail").scrollIntoView(); } },
        el("td", { class: c.change === "regression" ? "fail" : c.change === "fix" ? "pass" : "", text: c.change }),
        el("td", { text: epName(c.scenario, c.seed, c.trial) }), el("td", null, pf(c.before.passed), " " + fix3(c.before.total)),
        el("td", null, pf(c.after.passed), " " + fix3(c.after.total)), el("td", { class: "num", text: (c.delta >= 0 ? "+" : "") + fix3(c.delta) }),
        el("td", { class: "mute", text: c.checks.map((x) => x.check + " " + x.before + "\u2192" + x.after).join(", ") })));
    }
    if (cmp.changes.length > 500) body.append(el("tr", null, el("td", { colspan: 6, class: "mute", text: "... " + (cmp.changes.length - 500) + " more (simworld report --json lists all)" })));
  }

  refilter();
  if (location.hash.length > 1) {
    const i = index.get(decodeURIComponent(location.hash.slice(1)));
    if (i !== undefined) openEpisode(i);
  }
  document.body.dataset.ready = "1";
})();
