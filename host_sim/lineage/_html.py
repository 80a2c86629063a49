"""``host-sim lineage --html FILE``: the session tree as one self-contained HTML page.

The page holds everything it needs (its CSS, its script and the data as JSON): it loads
nothing from the network. Each session is a row; its turns are dots along it at their
ordinals, so a fork's row starts right under the turn it was forked at (its anchor) and a
line joins the two: solid for a fork, dashed for a spawn (which attaches at the parent's
turn running when it was made, or the last one started before it). Failed turns are red, erased turns
hollow, running turns grey. Clicking a row shows that session's conversation, the turns
a fork inherited included (greyed). A search box filters rows by id or label.

The layout is computed here, without recursion: a fork chain 100,000 deep lays out like
a flat list.

Every text on the page (labels, tags, prompts, replies, errors, the title) is data, never
markup: it travels as JSON in a ``<script type="application/json">`` block, where ``<``,
``>``, ``&``, U+2028, U+2029 and lone surrogates are ``\\u`` escapes (so nothing in it can end
the block, open a comment or fail to encode), and the page's script shows it with
``textContent`` only. The template is filled in one pass, so a placeholder inside data is
never filled in. The page names no file path: a caller who wants one puts it in the title.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Sequence
from typing import Final, assert_never

from modular_sdk import (
    AiNotificationMessage,
    AiPromptMessage,
    CommandTrigger,
    ForkLineage,
    MemoryRecord,
    RootLineage,
    SessionId,
    SpawnLineage,
    ToolTrigger,
)

from ..stores._records import SessionRecord, TurnRecord
from ._render import conversation_lengths, describe_author

__all__ = ["DEFAULT_TITLE", "render_lineage_html"]

DEFAULT_TITLE: Final = "host-sim lineage"

_JsonRow = dict[str, object]


def _erased(turn: TurnRecord) -> bool:
    """Whether ``turn`` was forgotten (``host-sim forget``): its text is gone, its place stays."""
    return turn.erased_at is not None


def _turn_json(turn: TurnRecord) -> _JsonRow:
    message = turn.message
    if isinstance(message, AiNotificationMessage):
        kind, text = "notification", message.title + (f"\n{message.body}" if message.body else "")
    else:
        assert isinstance(message, AiPromptMessage)
        kind, text = "prompt", message.text
    if _erased(turn):
        text = ""
    return {
        "id": turn.id,
        "o": turn.ordinal,
        "who": describe_author(turn.author),
        "kind": kind,
        "text": text,
        "reply": None if _erased(turn) else turn.reply,
        "status": turn.status,
        "error": None if _erased(turn) else turn.error,
        "erased": _erased(turn),
    }


def _trigger(lineage: SpawnLineage) -> str:
    trigger = lineage.trigger
    match trigger:
        case CommandTrigger(mod_id=mod_id, command_id=command_id):
            return f"command /{command_id} of {mod_id}"
        case ToolTrigger(mod_id=mod_id, tool_name=tool_name):
            return f"tool {tool_name!r} of {mod_id}"
        case _:
            assert_never(trigger)


def layout(
    sessions: Sequence[SessionRecord], turns: Iterable[TurnRecord]
) -> list[_JsonRow]:
    """One row per session, parents before their forks and spawns (depth first, in
    creation order), with where each attaches to its parent. Iterative: no recursion."""
    by_id = {record.id: record for record in sessions}
    own: dict[SessionId, list[TurnRecord]] = {record.id: [] for record in sessions}
    for turn in turns:
        if turn.session_id in own:
            own[turn.session_id].append(turn)
    for listed in own.values():
        listed.sort(key=lambda t: t.ordinal)

    children: dict[SessionId, list[SessionId]] = {record.id: [] for record in sessions}
    roots: list[SessionId] = []
    for record in sessions:
        up = None if isinstance(record.lineage, RootLineage) else record.lineage.parent_session_id
        if up is not None and up in by_id and up != record.id:
            children[up].append(record.id)
        else:
            roots.append(record.id)

    order: list[SessionId] = []
    depth: dict[SessionId, int] = {}
    seen: set[SessionId] = set()
    for root in roots:
        stack = [(root, 0)]
        while stack:
            current, level = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            order.append(current)
            depth[current] = level
            stack.extend((child, level + 1) for child in reversed(children[current]))
    for record in sessions:  # a cycle no store should hold: still shown, as roots
        if record.id not in seen:
            seen.add(record.id)
            order.append(record.id)
            depth[record.id] = 0

    row_of = {session_id: index for index, session_id in enumerate(order)}
    offset: dict[SessionId, int] = {}  # where ordinal 0 of the row is drawn, in turn steps
    rows: list[_JsonRow] = []
    for session_id in order:
        record = by_id[session_id]
        lineage = record.lineage
        parent: SessionId | None
        anchor: int | None
        trigger: str | None = None
        match lineage:
            case RootLineage():
                kind, parent, anchor, start = "root", None, None, 0
            case ForkLineage(parent_session_id=parent, parent_turn_ordinal=anchor):
                kind, start = "fork", anchor + 1
            case SpawnLineage(parent_session_id=parent):
                kind, start = "spawn", 0
                trigger = _trigger(lineage)
                anchor = _spawn_anchor(lineage, own.get(parent, []))
            case _:
                assert_never(lineage)
        attached = parent is not None and parent in row_of
        base = offset[parent] if attached and parent is not None else 0
        # A fork continues its parent's conversation: same ordinals, same columns. A spawn
        # starts at ordinal 0 with an empty history: drawn from just after the turn that made it.
        offset[session_id] = base + (0 if kind != "spawn" else 1 if anchor is None else anchor + 1)
        listed = own[session_id]
        rows.append(
            {
                "id": session_id,
                "label": record.metadata.label if record.metadata is not None else None,
                "tags": dict(record.tags),
                "kind": kind,
                "parent": parent,
                "parentRow": row_of[parent] if attached and parent is not None else None,
                "anchor": anchor,
                "trigger": trigger,
                "depth": depth[session_id],
                "offset": offset[session_id],
                "start": start,
                "end": max([start - 1, *(t.ordinal for t in listed)]),
                "failed": sum(1 for t in listed if t.status == "failed"),
                "turns": [_turn_json(t) for t in listed],
            }
        )
    return rows


def _spawn_anchor(lineage: SpawnLineage, parent_turns: Sequence[TurnRecord]) -> int | None:
    """The parent's turn a spawn came from: the last one started at or before the spawn
    (``None`` when the parent had none). A spawn made by a tool call is made while its turn
    runs, so that is the turn; a command's spawn attaches after the chat's latest turn."""
    before = [t.ordinal for t in parent_turns if t.started_at <= lineage.spawned_at]
    return max(before) if before else None


def render_lineage_html(
    sessions: Sequence[SessionRecord],
    turns: Iterable[TurnRecord],
    *,
    title: str = DEFAULT_TITLE,
    records: Iterable[MemoryRecord] = (),
) -> str:
    """The page: ``sessions`` (in creation order) with their own ``turns`` and memory
    ``records`` (docs/memory.md), under ``title``.

    The page needs no network, and any text in the records or the title shows as that
    text (see the module docstring).
    """
    turns = list(turns)
    rows = layout(sessions, turns)
    counts = conversation_lengths(sessions, turns)
    made: dict[str, list[dict[str, object]]] = {}
    for record in records:
        made.setdefault(record.session_id, []).append(
            {
                "id": record.id,
                "kind": record.kind,
                "text": record.text,
                "erased": record.erased_at is not None,
                "retracted": record.retracted_at is not None,
            }
        )
    for row in rows:
        row["count"] = counts[SessionId(str(row["id"]))]
        row["records"] = made.get(str(row["id"]), [])
    data = json.dumps({"title": title, "sessions": rows}, ensure_ascii=False, separators=(",", ":"))
    shown = html.escape(_SURROGATE.sub("\ufffd", title))  # what shows before the script puts the exact title
    parts = {
        "TITLE": shown,
        "HEADING": shown,
        "STYLE": _STYLE,
        "SCRIPT": _SCRIPT,
        "DATA": _UNSAFE_IN_SCRIPT.sub(_unicode_escape, data),
    }
    return _PLACEHOLDER.sub(lambda found: parts[found[1]], _PAGE)  # one pass: data is never scanned


_PLACEHOLDER: Final = re.compile(r"@(TITLE|HEADING|STYLE|SCRIPT|DATA)@")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# In JSON these occur only inside strings, where a \u escape means the same character.
_UNSAFE_IN_SCRIPT: Final = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def _unicode_escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found[0]):04x}"


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>@STYLE@</style>
</head>
<body>
<header>
  <h1 id="heading">@HEADING@</h1>
  <div id="summary"></div>
  <input id="filter" type="search" placeholder="filter by id or label" aria-label="filter sessions">
  <div class="legend">
    <span><svg width="28" height="10"><line x1="0" y1="5" x2="28" y2="5" class="link fork"/></svg> fork at its anchor turn</span>
    <span><svg width="28" height="10"><line x1="0" y1="5" x2="28" y2="5" class="link spawn"/></svg> spawn</span>
    <span><svg width="12" height="12"><circle cx="6" cy="6" r="4" class="turn completed"/></svg> turn</span>
    <span><svg width="12" height="12"><circle cx="6" cy="6" r="4" class="turn failed"/></svg> failed</span>
    <span><svg width="12" height="12"><circle cx="6" cy="6" r="4" class="turn erased"/></svg> erased</span>
    <span><svg width="12" height="12"><circle cx="6" cy="6" r="4" class="turn running"/></svg> running</span>
    <span><svg width="12" height="12"><line x1="6" y1="1" x2="6" y2="11" class="turn empty"/></svg> no turns yet</span>
  </div>
</header>
<main>
  <div id="scroll"><div id="names"></div><div id="graph"></div></div>
  <aside id="transcript"><p class="hint">Click a session to read its conversation.</p></aside>
</main>
<script type="application/json" id="lineage-data">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""

_STYLE = """
:root { --row: 24px; --step: 18px; font-family: system-ui, sans-serif; font-size: 13px; color: #1d2430; }
body { margin: 0; display: flex; flex-direction: column; height: 100vh; }
header { padding: 8px 14px; border-bottom: 1px solid #d8dde6; display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; }
h1 { font-size: 16px; margin: 0; } h1 small { font-weight: normal; color: #667; }
#filter { padding: 3px 6px; width: 220px; }
.legend { display: flex; gap: 14px; color: #445; } .legend span { display: inline-flex; gap: 4px; align-items: center; }
main { flex: 1; display: flex; min-height: 0; }
#scroll { flex: 1; overflow: auto; display: flex; align-items: flex-start; }
#names { position: sticky; left: 0; background: #fff; z-index: 1; border-right: 1px solid #e3e6ec; min-width: 300px; }
.name { height: var(--row); line-height: var(--row); white-space: nowrap; cursor: pointer; padding-right: 10px; overflow: hidden; text-overflow: ellipsis; max-width: 420px; }
.name:hover, .name.selected { background: #eef3ff; }
.name .id { font-family: ui-monospace, monospace; color: #556; } .name .count { color: #889; }
.badge { display: inline-block; font-size: 10px; padding: 0 4px; border-radius: 3px; margin-right: 4px; line-height: 15px; }
.badge.root { background: #e6e9ef; } .badge.fork { background: #d7e6ff; color: #0b4bb3; } .badge.spawn { background: #f1ddff; color: #7b2bb0; }
.badge.failures { background: #ffe0de; color: #b3261e; }
#graph svg { display: block; }
.lane { stroke: #c5ccd8; stroke-width: 2; }
.link { fill: none; stroke-width: 1.6; } .link.fork { stroke: #2f6fdf; } .link.spawn { stroke: #9b4dd6; stroke-dasharray: 4 3; }
.turn { stroke-width: 1.5; cursor: pointer; }
.turn.completed { fill: #2f6fdf; stroke: #2f6fdf; } .turn.failed { fill: #d93025; stroke: #d93025; }
.turn.running { fill: #aab; stroke: #aab; } .turn.empty { fill: none; stroke: #8a8fa0; stroke-width: 2.5; stroke-linecap: round; } .turn.erased { fill: #fff; stroke: #667; stroke-dasharray: 2 1.5; }
.row.selected .lane { stroke: #2f6fdf; } .row.dim, .name.dim { opacity: .2; }
#transcript { width: 38%; min-width: 320px; border-left: 1px solid #d8dde6; overflow: auto; padding: 10px 14px; }
#transcript h2 { font-size: 14px; margin: 0 0 4px; } #transcript .meta { color: #556; margin-bottom: 8px; }
.tags { display: flex; flex-wrap: wrap; gap: 4px; margin-bottom: 8px; } .tag { background: #eef0f4; border-radius: 3px; padding: 0 5px; white-space: pre-wrap; }
.t { border-left: 3px solid #2f6fdf; padding: 4px 8px; margin: 6px 0; background: #f7f9fc; white-space: pre-wrap; }
.t.inherited { opacity: .6; } .t.failed { border-color: #d93025; } .t.erased { border-color: #667; font-style: italic; }
.t.notification { border-color: #e0a100; } .t .head { font-weight: 600; } .t .head .id { font-weight: 400; color: #667; font-family: monospace; user-select: all; } .t .reply { margin-top: 3px; color: #223; }
.t .error { color: #b3261e; } .hint { color: #667; }
"""

_SCRIPT = r"""
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("lineage-data").textContent);
  const sessions = data.sessions;
  document.title = data.title;
  document.getElementById("heading").textContent = data.title;
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const ROW = 24, STEP = 18, PAD = 14, NS = "http://www.w3.org/2000/svg";
  const x = (o) => PAD + o * STEP;
  const y = (row) => row * ROW + ROW / 2;
  const svgEl = (name, attrs) => {
    const el = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    return el;
  };
  let widest = 0;
  for (const s of sessions) widest = Math.max(widest, s.offset + Math.max(s.end, s.start));
  const svg = svgEl("svg", { width: x(widest) + PAD * 2, height: sessions.length * ROW, id: "tree" });
  const links = svgEl("g", { class: "links" });
  svg.appendChild(links);
  const names = document.getElementById("names");
  const rowEls = [];
  sessions.forEach((s, row) => {
    const g = svgEl("g", { class: "row " + s.kind, "data-session": s.id });
    const at = (o) => x(o + s.offset);
    const first = s.turns.length ? Math.min(s.start, s.turns[0].o) : s.start;
    g.appendChild(svgEl("line", { class: "lane", x1: at(first), y1: y(row), x2: at(Math.max(first, s.end)), y2: y(row) }));
    for (const t of s.turns) {
      const c = svgEl("circle", { class: "turn " + (t.erased ? "erased" : t.status), cx: at(t.o), cy: y(row), r: 5, "data-ordinal": t.o });
      const tip = svgEl("title", {});
      tip.textContent = "#" + t.o + " " + t.status + (t.erased ? ", erased" : "") + ": " + (t.text || "").slice(0, 80);
      c.appendChild(tip);
      g.appendChild(c);
    }
    if (!s.turns.length) {  // a bar, not a dot: a hollow dot is an erased turn
      const bar = svgEl("line", { class: "turn empty", x1: at(s.start), y1: y(row) - 5, x2: at(s.start), y2: y(row) + 5 });
      const tip = svgEl("title", {});
      tip.textContent = "no turns yet";
      bar.appendChild(tip);
      g.appendChild(bar);
    }
    g.addEventListener("click", () => show(s.id));
    svg.appendChild(g);
    if (s.parentRow !== null) {
      const parent = sessions[s.parentRow];
      const ax = x((s.anchor === null ? 0 : s.anchor) + parent.offset), ay = y(s.parentRow);
      const bx = at(s.start), by = y(row);
      const d = "M" + ax + "," + ay + " L" + ax + "," + (by - 6) + " Q" + ax + "," + by + " " + (ax + 6) + "," + by + " L" + bx + "," + by;
      const link = svgEl("path", { class: "link " + s.kind, d: d, "data-from": s.parent, "data-to": s.id });
      links.appendChild(link);
    }
    const name = document.createElement("div");
    name.className = "name";
    name.dataset.session = s.id;
    name.style.paddingLeft = (6 + Math.min(s.depth, 30) * 12) + "px";
    const badge = document.createElement("span");
    badge.className = "badge " + s.kind;
    badge.textContent = s.kind === "fork" ? "fork@" + s.anchor : s.kind;
    name.appendChild(badge);
    if (s.failed) {
      const f = document.createElement("span");
      f.className = "badge failures";
      f.textContent = s.failed + " failed";
      name.appendChild(f);
    }
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = (s.label ? "\u201c" + s.label + "\u201d " : "");
    name.appendChild(label);
    const id = document.createElement("span");
    id.className = "id";
    id.textContent = s.id;
    name.appendChild(id);
    if (typeof s.count === "number") {
      const count = document.createElement("span");
      count.className = "count";
      count.textContent = " \u00b7 " + s.count + (s.count === 1 ? " turn" : " turns");
      name.appendChild(count);
    }
    name.title = s.id + (s.trigger ? " (spawned by " + s.trigger + ")" : "");
    name.addEventListener("click", () => show(s.id));
    names.appendChild(name);
    rowEls.push([g, name, (s.id + " " + (s.label || "")).toLowerCase()]);
  });
  document.getElementById("graph").appendChild(svg);
  const forks = sessions.filter((s) => s.kind === "fork").length;
  const spawns = sessions.filter((s) => s.kind === "spawn").length;
  const failed = sessions.reduce((n, s) => n + s.failed, 0);
  document.getElementById("summary").textContent =
    sessions.length + " sessions: " + (sessions.length - forks - spawns) + " roots, " + forks + " forks, " + spawns + " spawns; " + failed + " failed turns";

  function conversation(s) {
    // The fork chain up to the first non-fork, then the turns each one shows: iterative.
    const chain = [s];
    while (chain[chain.length - 1].kind === "fork" && byId.has(chain[chain.length - 1].parent)) {
      chain.push(byId.get(chain[chain.length - 1].parent));
    }
    const out = [];
    for (let i = chain.length - 1; i >= 0; i--) {
      const limit = i > 0 ? chain[i - 1].anchor : Infinity;
      for (const t of chain[i].turns) if (t.o <= limit) out.push([chain[i], t]);
    }
    return out.filter(([owner, t]) => owner === s || t.o < s.start);
  }

  function show(id) {
    const s = byId.get(id);
    for (const [g, name] of rowEls) {
      const on = g.dataset.session === id;
      g.classList.toggle("selected", on);
      name.classList.toggle("selected", on);
    }
    const pane = document.getElementById("transcript");
    pane.replaceChildren();
    pane.dataset.session = id;
    const h = document.createElement("h2");
    h.textContent = (s.label ? s.label + " \u00b7 " : "") + s.id;
    pane.appendChild(h);
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = s.kind === "fork" ? "fork of " + s.parent + " at turn " + s.anchor
      : s.kind === "spawn" ? "spawned from " + s.parent + " by " + s.trigger : "root session";
    pane.appendChild(meta);
    const tags = Object.entries(s.tags);
    if (tags.length) {
      const list = document.createElement("div");
      list.className = "tags";
      for (const [key, value] of tags) {
        const tag = document.createElement("span");
        tag.className = "tag";
        tag.textContent = key + "=" + value;
        list.appendChild(tag);
      }
      pane.appendChild(list);
    }
    for (const [owner, t] of conversation(s)) {
      const div = document.createElement("div");
      div.className = "t " + t.kind + (owner === s ? "" : " inherited") + (t.status === "failed" ? " failed" : "") + (t.erased ? " erased" : "");
      div.dataset.ordinal = t.o;
      const head = document.createElement("div");
      head.className = "head";
      head.textContent = "#" + t.o + " [" + (t.kind === "notification" ? "notification from " : "") + t.who
        + (owner === s ? "" : ", inherited from " + owner.id) + "] ";
      const turnId = document.createElement("span");  // what host-sim forget and lineage --forward take
      turnId.className = "id";
      turnId.textContent = t.id;
      head.appendChild(turnId);
      div.appendChild(head);
      const body = document.createElement("div");
      body.textContent = t.erased ? "(erased)" : t.text;
      div.appendChild(body);
      if (t.status === "failed") {
        const e = document.createElement("div");
        e.className = "error";
        e.textContent = "FAILED: " + (t.error || "");
        div.appendChild(e);
      } else if (t.reply !== null && !t.erased) {
        const r = document.createElement("div");
        r.className = "reply";
        r.textContent = "model: " + t.reply;
        div.appendChild(r);
      } else if (t.status === "running") {
        div.appendChild(document.createTextNode("(running)"));
      }
      pane.appendChild(div);
    }
    if (s.records.length) {  // what memory made of this session (docs/memory.md), as text
      const h3 = document.createElement("h3");
      h3.textContent = "memory (" + s.records.length + ")";
      pane.appendChild(h3);
      for (const r of s.records) {
        const div = document.createElement("div");
        div.className = "record" + (r.erased ? " erased" : "") + (r.retracted ? " retracted" : "");
        div.textContent = r.id + " [" + r.kind + (r.retracted ? ", retracted" : "") + "] " + (r.erased ? "(erased)" : r.text);
        pane.appendChild(div);
      }
    }
    location.hash = encodeURIComponent(id);
  }

  document.getElementById("filter").addEventListener("input", (event) => {
    // Rows keep their places (the lines between them must still meet): others are dimmed.
    const q = event.target.value.trim().toLowerCase();
    let first = null;
    for (const [g, name, text] of rowEls) {
      const dim = q !== "" && !text.includes(q);
      g.classList.toggle("dim", dim);
      name.classList.toggle("dim", dim);
      if (!dim && q !== "" && first === null) first = name;
    }
    if (first !== null) first.scrollIntoView({ block: "center" });
  });
  let wanted = null;
  try { wanted = decodeURIComponent(location.hash.slice(1)); } catch (malformed) { /* a hand-edited #: show nothing */ }
  if (byId.has(wanted)) show(wanted);
  document.body.dataset.ready = "true";
})();
"""
