// host-sim studio (API.md section 22). Plain ES module, no build step, nothing from the network.
// Every text that comes from a session, a mod or a model is set with textContent, never as markup.

const $ = (id) => document.getElementById(id);
const state = { pending: null, page: 200, session: null, sessions: [], turns: [], active: -1, options: [], streaming: "" };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function say(text) { $("status").textContent = text; }

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

// -- sessions: a lineage tree (forks and spawns under their parent, anchors shown) -----------------
async function loadSessions() {
  const data = await api("GET", "/api/sessions");
  state.sessions = data.sessions;
  const byParent = new Map();
  const ids = new Set(data.sessions.map((s) => s.id));
  for (const s of data.sessions) {
    const parent = s.parent && ids.has(s.parent) ? s.parent : null;
    if (!byParent.has(parent)) byParent.set(parent, []);
    byParent.get(parent).push(s);
  }
  const draw = (parent, level) => {
    const items = [];
    for (const s of (byParent.get(parent) || []).slice().reverse()) {
      const label = (s.title || s.id) + (s.kind === "root" ? "" : ` (${s.kind}${s.anchor !== undefined ? " at turn " + s.anchor : ""})`);
      const button = el("button", { type: "button", "data-session": s.id, text: label, on: { click: () => select(s.id) } });
      if (state.session === s.id) button.setAttribute("aria-current", "true");
      const item = el("li", { role: "treeitem", "aria-level": String(level) }, button);
      const kids = draw(s.id, level + 1);
      if (kids.length) item.append(el("ul", { role: "group" }, ...kids));
      items.push(item);
    }
    return items;
  };
  $("sessions").replaceChildren(...draw(null, 1));
  if (data.truncated) $("sessions").append(el("li", { text: `(only the newest ${data.sessions.length} sessions are shown)` }));
}

async function select(id) {
  state.session = id;
  state.page = 200;
  state.streaming = "";
  $("live").textContent = "";
  const entries = [...document.querySelectorAll("#sessions button[data-session]")];
  const known = entries.some((b) => b.dataset.session === id);
  for (const b of entries) if (b.dataset.session === id) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
  await Promise.all([known ? null : loadSessions(), loadTurns(), loadRecords()]);
  $("message").focus();
}

// -- turns ------------------------------------------------------------------------------------
async function loadTurns() {
  if (!state.session) return;
  const data = await api("GET", `/api/sessions/${encodeURIComponent(state.session)}/turns?limit=${state.page}`);
  $("session-title").textContent = `Session ${data.session.title || data.session.id}`;
  const items = data.turns.map(drawTurn);
  if (data.total > data.turns.length) {
    items.unshift(el("li", {}, el("button", { type: "button", text: `Show earlier turns (${data.total - data.turns.length} more)`, on: { click: () => {
      state.page += 200;
      loadTurns().catch(fail);
    } } })));
  }
  $("turns").replaceChildren(...items);
}

function drawTurn(t) {
  const meta = el("p", { class: "meta", text: `turn ${t.id} · #${t.ordinal} · ${t.author} · ${t.started_at} · ${t.status}` });
  const body = [];
  if (t.erased) body.push(el("p", { class: "erased", text: "(forgotten)" }));
  else {
    if (t.text !== null) body.push(el("p", { class: "prompt", text: t.text }));
    for (const call of t.tool_calls) body.push(el("p", { class: "meta", text: `tool call ${call.tool} (${call.id})` }));
    for (const w of t.widgets) body.push(el("figure", { "aria-label": `Widget ${w.widget_id}` },
      el("figcaption", { class: "meta", text: `widget ${w.widget_id}` }),
      w.error !== null ? el("p", { role: "alert", text: w.error }) : el("pre", { class: "widget", text: w.text })));
    if (t.reply !== null) body.push(el("p", { class: "reply", text: t.reply }));
    if (t.error !== null) body.push(el("p", { role: "alert", text: t.error }));
  }
  if (t.retracted !== null) body.push(el("p", { class: "retracted", text: `retracted: ${t.retracted}` }));
  const article = el("article", { "aria-label": `Turn ${t.ordinal}` }, meta, ...body);
  if (t.status === "completed") {
    const panel = el("div", { class: "panel" });
    const button = (name, fn) => { const b = el("button", { type: "button", text: name, on: { click: () => fn(t, panel, b).catch(fail) } }); return b; };
    article.append(el("div", { class: "actions" },
      button("Fork here", forkHere), button("Provenance", provenance), button("Forget…", forget), button("Retract…", retract)), panel);
  }
  return el("li", {}, article);
}

async function forkHere(t) {
  const session = await api("POST", `/api/turns/${encodeURIComponent(t.id)}/fork`);
  say(`forked at turn ${t.ordinal}: session ${session.id}`);
  await select(session.id);
}

function lines(title, items) {
  return el("section", {}, el("h3", { text: title }), el("ul", {}, ...items.map((x) => el("li", { text: x }))));
}

async function provenance(t, panel) {
  const data = await api("GET", `/api/turns/${encodeURIComponent(t.id)}/provenance`);
  const f = data.forward, b = data.backward;
  panel.replaceChildren(el("div", { role: "region", "aria-label": "Provenance" },
    lines("Backward (what it read)", b.read_from.map((r) => `session ${r.session_id} turn ${r.turn_id} (#${r.ordinal})`)),
    lines("Forward (what rests on it)", [
      ...f.turns.map((r) => `turn ${r.turn_id} in session ${r.session_id} (#${r.ordinal})`),
      ...f.sessions.map((s) => `session ${s}`),
    ]),
    recordButtons("Memory records resting on it", f.records)));
}

// -- memory records (section 20): a session's records, and a record walked back to its words --------------
function recordButton(id, kind) {
  return el("li", {}, el("button", { type: "button", text: `Record ${id} (${kind})`, on: { click: () => showRecord(id).catch(fail) } }));
}

function recordButtons(title, refs) {
  return el("section", {}, el("h3", { text: title }), el("ul", {}, ...refs.map((r) => recordButton(r.record_id, r.kind))));
}

async function loadRecords() {
  if (!state.session) return;
  const data = await api("GET", `/api/sessions/${encodeURIComponent(state.session)}/records`);
  $("records").replaceChildren(...data.records.map((r) => recordButton(r.id, r.kind)));
}

async function showRecord(id) {
  const data = await api("GET", `/api/records/${encodeURIComponent(id)}/provenance`);
  const r = data.record, b = data.backward;
  const state_ = r.erased ? "(erased)" : r.retracted !== null ? `retracted: ${r.retracted}` : "";
  const region = el("div", { role: "region", "aria-label": `Record ${r.id}`, tabindex: "-1" },
    el("h3", { text: `Record ${r.id} (${r.kind}) in session ${r.session_id}` }),
    el("p", { class: "prompt", text: r.text }), state_ ? el("p", { class: "retracted", text: state_ }) : null,
    lines("Read from (its words)", b.read_from.map((t) => `turn ${t.turn_id} in session ${t.session_id} (#${t.ordinal})`)),
    recordButtons("Derived from", b.records),
    recordButtons("Resting on it", data.forward.records));
  $("details").replaceChildren(region);
  region.focus();
}

async function forget(t, panel, opener) {
  const plan = await api("POST", `/api/turns/${encodeURIComponent(t.id)}/forget`, { erase: false });
  const cancel = el("button", { type: "button", text: "Keep it", on: { click: () => { panel.replaceChildren(); opener.focus(); } } });
  const erase = el("button", { type: "button", text: "Erase", on: { click: async () => {
    try {
      await api("POST", `/api/turns/${encodeURIComponent(t.id)}/forget`, { erase: true });
      say(`forgot turn ${t.id}`);
      await Promise.all([loadTurns(), loadRecords()]);
      $("message").focus();
    } catch (error) { fail(error); }
  } } });
  panel.replaceChildren(el("div", { role: "region", "aria-label": "Erasure plan" },
    lines("Forgetting erases these turns", plan.turns.map((r) => `turn ${r.turn_id} in session ${r.session_id} (#${r.ordinal})`)),
    lines("in these sessions", plan.sessions), lines("and these spawns", plan.spawns),
    lines("and these memory records", plan.records.map((r) => `record ${r.record_id} (${r.kind})`)), erase, cancel));
  erase.focus();
}

async function retract(t, panel) {
  const reason = el("input", { type: "text", id: `reason-${t.id}`, "aria-label": "Reason" });
  const go = el("button", { type: "button", text: "Retract", on: { click: async () => {
    try {
      await api("POST", `/api/turns/${encodeURIComponent(t.id)}/retract`, { reason: reason.value });
      await loadTurns();
    } catch (error) { fail(error); }
  } } });
  panel.replaceChildren(el("div", { role: "region", "aria-label": "Retraction" }, reason, go));
  reason.focus();
}

// -- pending actions and standing rules --------------------------------------------------------------------
// state.pending: session id -> its waiting actions. Read whole once, then a session at a time as the host reports.
async function loadPending() {
  const data = await api("GET", "/api/pending");
  state.pending = new Map();
  for (const a of data.actions) {
    if (!state.pending.has(a.session_id)) state.pending.set(a.session_id, []);
    state.pending.get(a.session_id).push(a);
  }
  drawPending();
  document.body.dataset.pending = "loaded";
}

async function loadSessionPending(session) {
  const data = await api("GET", `/api/sessions/${encodeURIComponent(session)}/pending`);
  if (!state.pending) return;
  if (data.actions.length) state.pending.set(session, data.actions); else state.pending.delete(session);
  drawPending();
}

function drawPending() {
  $("pending").replaceChildren(...[...state.pending.values()].flat().map((a) => {
    const reason = el("input", { type: "text", "aria-label": `Reason for ${a.type}` });
    const done = async () => { await Promise.all([loadSessionPending(a.session_id), loadTurns(), loadRules()]); $("pending-h").focus(); };
    const decide = (verb) => async () => {
      try {
        await api("POST", `/api/actions/${encodeURIComponent(a.id)}/${verb}`, { reason: reason.value });
        await done();
      } catch (error) { fail(error); }
    };
    const always = async () => {  // the AG-UI app answers the interrupt: confirm, and allow this kind for good
      try {
        await resume(a.session_id, { interruptId: a.id, status: "resolved", payload: { approved: true, always: true, reason: reason.value || null } });
        await done();
      } catch (error) { fail(error); }
    };
    return el("li", { "aria-label": `Action ${a.type} in ${a.session}` },
      el("p", { text: `${a.type} from ${a.mod_id} in session ${a.session}` }), el("pre", { text: JSON.stringify(a.payload, null, 2) }), reason,
      el("button", { type: "button", text: "Confirm", on: { click: decide("confirm") } }),
      el("button", { type: "button", text: "Allow always", "aria-description": `confirm, and allow every ${a.type} from now on`, on: { click: always } }),
      el("button", { type: "button", text: "Dismiss", on: { click: decide("dismiss") } }));
  }));
}

async function resume(session, answer) {
  const run = { threadId: session, runId: `studio-${Date.now()}`, state: {}, tools: [], context: [], forwardedProps: {}, messages: [], resume: [answer] };
  const response = await fetch("/agui", { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(run), credentials: "same-origin" });
  const text = await response.text();
  if (!response.ok) throw new Error(JSON.parse(text).error);
  const failed = text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5))).find((e) => e.type === "RUN_ERROR");
  if (failed) throw new Error(failed.message);
}

async function loadRules() {
  const data = await api("GET", "/api/approvals");
  $("rules").replaceChildren(...data.rules.map((r) => el("li", {},
    el("span", { text: `${r.action_type}${r.tool ? " " + r.tool : ""}${r.session_id ? " in " + r.session_id : ""} ` }),
    el("button", { type: "button", "aria-label": `Revoke ${r.action_type}`, text: "Revoke", on: { click: async () => {
      try { await api("POST", `/api/approvals/${encodeURIComponent(r.id)}/revoke`, {}); await loadRules(); } catch (error) { fail(error); }
    } } }))));
}

// -- views ------------------------------------------------------------------------------------------------
async function loadViews() {
  const data = await api("GET", "/api/views");
  $("view-id").replaceChildren(...data.views.map((v) => el("option", { value: v, text: v })));
}

async function renderView() {
  $("view-error").textContent = "";
  $("view-output").textContent = "";
  let data;
  try { data = JSON.parse($("view-data").value); } catch (error) { $("view-error").textContent = `not JSON: ${error.message}`; return; }
  const result = await api("POST", `/api/views/${encodeURIComponent($("view-id").value)}/render`, { data });
  if (result.error !== null) $("view-error").textContent = result.error;
  else $("view-output").textContent = result.text;
}

// -- the message box: typeahead and sending through AG-UI ---------------------------------------------------
function showOptions(options) {
  state.options = options;
  state.active = -1;
  const list = $("completions");
  list.replaceChildren(...options.map((o, i) => el("li", {
    role: "option", id: `option-${i}`, "aria-selected": "false",
    text: o.argument !== null ? `/${o.name} ${o.argument}` : `/${o.name}${o.argument_hint ? " " + o.argument_hint : ""} — ${o.description}`,
    on: { mousedown: (event) => { event.preventDefault(); pick(i); } },
  })));
  list.hidden = options.length === 0;
  $("message").setAttribute("aria-expanded", String(options.length > 0));
  $("message").removeAttribute("aria-activedescendant");
}

function highlight(index) {
  state.active = index;
  for (const [i, node] of [...$("completions").children].entries()) node.setAttribute("aria-selected", String(i === index));
  if (index >= 0) $("message").setAttribute("aria-activedescendant", `option-${index}`);
}

function pick(index) {
  const o = state.options[index];
  $("message").value = o.argument !== null ? `/${o.name} ${o.argument}` : `/${o.name} `;
  showOptions([]);
  $("message").focus();
  complete();
}

let asked = 0;
async function complete() {
  const text = $("message").value;
  if (!text.startsWith("/") || text.startsWith("//")) { showOptions([]); return; }
  const mine = ++asked;
  const data = await api("GET", `/api/completions?text=${encodeURIComponent(text)}`);
  if (mine === asked && $("message").value === text) showOptions(data.completions);
}

function onKey(event) {
  const count = state.options.length;
  if (count === 0) return;
  if (event.key === "ArrowDown") { event.preventDefault(); highlight((state.active + 1) % count); }
  else if (event.key === "ArrowUp") { event.preventDefault(); highlight((state.active - 1 + count) % count); }
  else if (event.key === "Enter" && state.active >= 0) { event.preventDefault(); pick(state.active); }
  else if (event.key === "Escape") { showOptions([]); }
}

async function send(event) {
  event.preventDefault();
  const text = $("message").value;
  if (!text.trim()) return;
  if (!state.session) {
    const created = await api("POST", "/api/sessions", {});
    await select(created.id);
  }
  $("message").value = "";
  showOptions([]);
  const run = {
    threadId: state.session, runId: `studio-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    state: {}, tools: [], context: [], forwardedProps: {},
    messages: [{ id: `m-${Date.now()}`, role: "user", content: text }],
  };
  $("live").textContent = "";
  say("running…");
  const response = await fetch("/agui", { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(run), credentials: "same-origin" });
  if (!response.ok) { fail(new Error((await response.json()).error)); return; }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of frame.split("\n")) if (line.startsWith("data:")) agui(JSON.parse(line.slice(5)));
    }
  }
  await Promise.all([loadTurns(), loadSessionPending(state.session)]);
}

function agui(event) {
  if (event.type === "RUN_STARTED" && event.threadId && event.threadId !== state.session) { state.session = event.threadId; loadSessions().catch(fail); }
  else if (event.type === "TEXT_MESSAGE_CONTENT") { $("live").textContent += event.delta; }
  else if (event.type === "TOOL_CALL_START") { $("live").textContent += `\n[tool call ${event.toolCallName}]\n`; }
  else if (event.type === "RUN_FINISHED") { say("done"); }
  else if (event.type === "RUN_ERROR") { say(`error: ${event.message}`); }
}

function fail(error) { say(`error: ${error.message}`); }

// -- live: the host's events ----------------------------------------------------------------------------------
function listen() {
  const source = new EventSource("/api/events");
  source.onopen = () => { document.body.dataset.live = "true"; };
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.kind === "session_created" || event.kind === "session_deleted") loadSessions().catch(fail);
    if (event.session_id && ["turn_finished", "command_finished", "turn_erased"].includes(event.kind)) loadSessionPending(event.session_id).catch(fail);
    if (event.kind === "session_deleted" && state.pending && state.pending.delete(event.session_id)) drawPending();
    if (event.kind === "notification") $("notifications").prepend(el("li", { text: `${event.title ?? ""} (${event.session_id})` }));
    if (event.session_id && event.session_id === state.session) {
      if (["turn_finished", "turn_erased", "turn_retracted", "notification", "command_finished"].includes(event.kind)) loadTurns().catch(fail);
      if (event.kind === "turn_finished" || event.kind === "memory_recorded" || event.kind === "turn_erased") loadRecords().catch(fail);
    }
  };
}

$("composer").addEventListener("submit", (event) => send(event).catch(fail));
$("message").addEventListener("input", () => complete().catch(fail));
$("message").addEventListener("keydown", onKey);
$("new-session").addEventListener("click", async () => { try { const s = await api("POST", "/api/sessions", {}); await select(s.id); } catch (error) { fail(error); } });
$("render-view").addEventListener("click", () => renderView().catch(fail));
if (new URLSearchParams(location.search).has("token")) history.replaceState(null, "", "/");
Promise.all([loadSessions(), loadRules(), loadViews()]).then(() => { listen(); document.body.dataset.ready = "true"; return loadPending(); }).catch(fail);
