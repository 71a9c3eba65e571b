// Context Service dashboard: live updates and small enhancements. No framework: the pages
// are rendered by the server and work without this script; it keeps them current.
//
// One WebSocket per page (/ws/live/?topic=...). On connect the server sends a snapshot,
// then typed events; on reconnect a fresh snapshot replaces whatever was missed. Events
// carry the same shapes as snapshots, so applying them to a stale snapshot gives a fresh one.
"use strict";

const Live = {
  state: { rows: {}, pending: {} },
  socket: null,
  attempts: 0,
  handlers: {},

  start() {
    const topic = document.body.dataset.liveTopic;
    if (!topic) return;
    this.topic = topic;
    this.ids = document.body.dataset.liveIds || "";
    this.indicator = document.getElementById("live-indicator");
    this.connect();
  },

  connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ topic: this.topic });
    if (this.ids) query.set("ids", this.ids);
    const socket = new WebSocket(`${scheme}://${location.host}/ws/live/?${query}`);
    this.socket = socket;
    this.show("connecting", "connecting…");
    socket.onopen = () => { this.attempts = 0; this.show("live", "● live"); };
    socket.onmessage = (message) => this.receive(JSON.parse(message.data));
    socket.onclose = () => {
      this.show("offline", "○ reconnecting…");
      const delay = Math.min(1000 * 2 ** this.attempts++, 15000);
      setTimeout(() => this.connect(), delay);
    };
  },

  show(state, text) {
    if (!this.indicator) return;
    // Hidden in the page: without JavaScript it would say "connecting…" for ever.
    this.indicator.hidden = false;
    this.indicator.dataset.state = state;
    this.indicator.textContent = text;
  },

  receive(message) {
    if (message.type === "snapshot") {
      this.state = { rows: {}, pending: {}, ...message.data };
      (this.handlers.snapshot || (() => {}))(this.state);
      return;
    }
    const handler = this.handlers[message.type];
    if (handler) handler(message.data);
  },
};
window.Live = Live;

// --- shared pieces --------------------------------------------------------------------------

function setBar(element, ready, total) {
  const bar = element.querySelector('[data-field="bar"]');
  if (!bar) return;
  bar.querySelector(".fill").style.width = `${total ? Math.round((100 * ready) / total) : 0}%`;
  bar.querySelector('[data-field="ready"]').textContent = `${ready}/${total}`;
  bar.title = `${ready}/${total} ready`;
}

function setPhase(element, phase) {
  const badge = element.querySelector('[data-field="phase"]');
  if (!badge) return;
  badge.textContent = phase;
  badge.className = `badge phase-${phase}`;
}

function renderRow(row) {
  const element = document.querySelector(`[data-id="${row.id}"]`);
  if (!element) return false;
  setBar(element, row.readyReplicas, row.replicas);
  setPhase(element, row.phase);
  return true;
}

function csrfToken(form) {
  const input = form.querySelector('input[name="csrfmiddlewaretoken"]');
  return input ? input.value : "";
}

// --- allocations list and detail -------------------------------------------------------------

// The list: a row in the table is updated in place; an allocation that is new, or changed
// phase (it may now match the filters, or no longer), brings the table again from the
// server, for the same filters and page, so that the server alone decides what is listed.
function allocationListHandlers() {
  let timer = null;
  const refreshTable = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      await refreshFragment("allocation-table");
      const table = document.getElementById("allocations");
      const total = document.getElementById("allocation-total");
      if (table && total) total.textContent = table.dataset.total;
    }, 300);
  };
  const onRow = (row) => {
    const before = Live.state.rows[String(row.id)];
    Live.state.rows[String(row.id)] = row;
    if (!renderRow(row) || !before || before.phase !== row.phase) refreshTable();
  };
  return {
    // Also after a reconnect: what was missed meanwhile may add or remove rows.
    snapshot(state) { Object.values(state.rows).forEach(renderRow); refreshTable(); },
    "allocation.created": onRow,
    "allocation.changed": onRow,
  };
}

function allocationHandlers() {
  const onRow = (row) => {
    Live.state.rows[String(row.id)] = row;
    renderRow(row);
  };
  return {
    snapshot(state) { Object.values(state.rows).forEach(renderRow); },
    "allocation.created": onRow,
    "allocation.changed": (row) => {
      onRow(row);
      const reason = document.querySelector('[data-field="reason"]');
      if (reason) {
        reason.textContent = `${row.reason} ${row.message}`.trim();
        reason.hidden = !reason.textContent;
      }
      refreshFragment("timeline");
      refreshObjects();
    },
  };
}

// One request's page: whatever happens to it (a signoff, an edit, a decision, a message
// sent, what ran), the page's content comes again from the server.
function approvalPageHandlers() {
  const refresh = () => refreshFragment("approval-body");
  return {
    snapshot: refresh,
    "approval.changed": refresh,
    "approval.decided": refresh,
    "approval.ran": refresh,
  };
}

async function refreshFragment(id) {
  const target = document.getElementById(id);
  if (!target || !target.dataset.src) return;
  const response = await fetch(target.dataset.src, { credentials: "same-origin" });
  if (response.ok) target.innerHTML = await response.text();  // our own server-rendered HTML
}

let objectsTimer = null;
function refreshObjects() {
  clearTimeout(objectsTimer);
  objectsTimer = setTimeout(loadObjects, 300);
}

async function loadObjects() {
  const target = document.getElementById("objects");
  if (!target) return;
  let data;
  try {
    const response = await fetch(target.dataset.src, { credentials: "same-origin" });
    data = await response.json();
  } catch (error) {
    data = { error: "unavailable", message: String(error), objects: [] };
  }
  target.replaceChildren();
  if (data.error) {
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = `Could not read the cluster: ${data.message}`;
    target.append(p);
  }
  if (!data.objects.length && !data.error) {
    const p = document.createElement("p");
    p.className = "muted";
    p.textContent = "The allocation owns no objects in the cluster.";
    target.append(p);
  }
  for (const item of data.objects) {
    const details = document.createElement("details");
    details.className = "object";
    const summary = document.createElement("summary");
    summary.textContent = `${item.kind} ${item.name} — ${item.status}`;
    const pre = document.createElement("pre");
    pre.textContent = item.yaml;
    details.append(summary, conditionsTable(item.conditions || []), pre);
    target.append(details);
  }
}

// Why an object is (not) ready, without reading its YAML: its status conditions.
function conditionsTable(conditions) {
  const table = document.createElement("table");
  table.className = "table conditions";
  if (!conditions.length) {
    table.innerHTML = '<tbody><tr><td class="muted">No conditions reported yet.</td></tr></tbody>';
    return table;
  }
  const head = table.createTHead().insertRow();
  for (const name of ["Condition", "Status", "Reason", "Message", "Since"]) {
    const th = document.createElement("th");
    th.textContent = name;
    head.append(th);
  }
  const body = table.createTBody();
  for (const c of conditions) {
    const row = body.insertRow();
    for (const value of [c.type, c.status, c.reason, c.message, c.lastTransitionTime]) {
      row.insertCell().textContent = value || "—";
    }
    if (c.type === "Ready" && c.status === "False") row.className = "condition-false";
  }
  return table;
}

// --- approvals queue ---------------------------------------------------------------------------

const MEDIA = { email: "E-mail", webhook: "Webhook", slack: "Slack" };
const SENDING = { delivered: "delivered", pending: "sending", failed: "failed" };

// The same words as the server's card (frontend/templatetags/approval_cards.py).
function notificationLine(request, event) {
  return (request.notifications || [])
    .filter((n) => n.event === event)
    .map((n) => `${n.target} (${MEDIA[n.medium] || n.medium}, ${SENDING[n.status] || n.status})`)
    .join(", ");
}

function notifiedAt(request, event) {
  const first = (request.notifications || []).find((n) => n.event === event);
  return first ? utcTime(first.at) : "";
}

function utcTime(iso) {
  return `${new Date(iso).toISOString().slice(11, 19)} UTC`;
}

function fillCard(card, request) {
  card.id = `approval-${request.id}`;
  card.dataset.id = request.id;
  card.dataset.deadline = request.deadline;
  card.dataset.kind = request.operation.kind;
  const field = (name) => card.querySelector(`[data-field="${name}"]`);
  field("risk").textContent = request.risk;
  field("risk").className = `badge risk-${request.risk}`;
  field("kind").textContent = request.operation.kind;
  field("agent").textContent = request.agentInstance ? `${request.agentType} / ${request.agentInstance}` : request.agentType;
  field("context").textContent = request.contextId;
  field("allocation-wrap").textContent = request.allocation ? `· allocation ${request.allocation}` : "";
  field("unenforced").hidden = (request.execution || {}).isolation !== "none";
  field("operation").textContent = request.normalised;
  const approvals = request.approvals || [];
  const signoffs = field("signoffs");
  signoffs.hidden = (request.approvalsRequired || 1) < 2;
  signoffs.textContent = `${approvals.length} of ${request.approvalsRequired} approvals` +
    approvals.map((a) => ` · ${a.by}`).join("");
  const notes = field("notes");
  notes.replaceChildren(...(request.riskNotes || []).map((note) => {
    const li = document.createElement("li");
    li.textContent = note;
    return li;
  }));
  notes.hidden = !(request.riskNotes || []).length;
  // What a decision from this card decides: the version it shows (a decision on an older
  // one is refused, docs/approvals.md).
  field("version").value = request.version || "";
  field("edit").hidden = !request.edit;
  if (request.edit) {
    field("edit-by").textContent = request.edit.by;
    field("edit-operation").textContent = request.edit.normalised;
  }
  const parts = field("parts");
  parts.replaceChildren();
  for (const part of request.evaluation.parts || []) {
    const tr = document.createElement("tr");
    const text = document.createElement("td");
    const code = document.createElement("code");
    code.textContent = part.text;
    text.append(code);
    const decision = document.createElement("td");
    const badge = document.createElement("span");
    badge.className = `badge decision-${part.decision}`;
    badge.textContent = part.decision;
    decision.append(badge);
    const why = document.createElement("td");
    why.className = "muted";
    why.textContent = `${part.rule || part.sources_entry || ""} ${part.reason}`;
    tr.append(text, decision, why);
    parts.append(tr);
  }
  const told = notificationLine(request, "approval.created");
  field("notified").hidden = !told;
  field("notified").textContent = `Notified at ${notifiedAt(request, "approval.created")}: ${told}`;
  field("escalated").hidden = !request.escalatedAt;
  if (request.escalatedAt) {
    const escalated = notificationLine(request, "approval.escalated") || "nobody (no one to tell)";
    field("escalated").textContent = `Escalated at ${utcTime(request.escalatedAt)} to ${escalated}`;
  }
  const form = card.querySelector("form.decision");
  form.action = `/approvals/${request.id}/decide/`;
  const similar = card.querySelector("details.similar");
  similar.dataset.similarSrc = `/approvals/${request.id}/similar/`;
  similar.hidden = request.approvalsRequired > 1;
  const edit = card.querySelector("details.edit");
  edit.dataset.checkSrc = `/approvals/${request.id}/edit-check/`;
  // An edit comes first or not at all: once someone approved, it is approved as it stands.
  edit.hidden = Boolean(request.edit) || approvals.length > 0;
  const inputs = { shell: "command", file: "path", network: "host" };
  const input = edit.querySelector(`[name="${inputs[request.operation.kind]}"]`);
  if (input && !input.dataset.touched) input.value = request.operation[inputs[request.operation.kind]] || "";
  wireCard(card);
}

function wireCard(card) {
  const form = card.querySelector("form.decision");
  if (form && !form.dataset.wired) {
    form.dataset.wired = "1";
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = new FormData(form);
      if (event.submitter) body.set(event.submitter.name, event.submitter.value);
      const response = await fetch(form.action, {
        method: "POST", body, credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": csrfToken(form) },
      });
      const answer = await response.json().catch(() => ({ message: response.statusText }));
      // Decided: gone from the queue. Half-approved (two-person rule): the card stays, and
      // the change event brings who approved.
      if (response.ok && answer.status !== "pending") removeCard(card.dataset.id);
      if (!response.ok) alert(answer.message);
    });
  }
  wireEdit(card, form);
  const similar = card.querySelector("details.similar");
  if (similar && !similar.dataset.wired) {
    similar.dataset.wired = "1";
    const scope = similar.querySelector('select[name="scope"]');
    // The count depends on the scope: ask again whenever the reviewer changes it.
    const preview = async () => {
      if (!similar.open || !similar.dataset.similarSrc) return;
      const url = `${similar.dataset.similarSrc}?scope=${encodeURIComponent(scope.value)}`;
      const response = await fetch(url, { credentials: "same-origin" });
      const data = await response.json();
      similar.querySelector('[data-field="similar-rule"]').textContent = data.rule || "(none: approve once)";
      similar.querySelector('[data-field="similar-count"]').textContent =
        data.rule ? `would have matched ${data.matches} earlier request(s) in this scope` : "";
    };
    similar.addEventListener("toggle", preview);
    scope.addEventListener("change", preview);
  }
}

// Edit and approve: only the field of the operation's kind is shown; as the reviewer types,
// the rules judge the edit (a deny rule still wins; the button says so before it is sent).
function wireEdit(card, form) {
  const edit = card.querySelector("details.edit");
  if (!edit || edit.dataset.wired) return;
  edit.dataset.wired = "1";
  const kind = card.dataset.kind;
  edit.querySelectorAll("[data-for-kind]").forEach((input) => {
    input.hidden = input.dataset.forKind !== kind;
    input.addEventListener("input", () => { input.dataset.touched = "1"; soon(); });
  });
  const verdict = edit.querySelector('[data-field="edit-check"]');
  const button = edit.querySelector('button[value="approve_edited"]');
  let timer = null;
  const check = async () => {
    if (!edit.dataset.checkSrc) return;
    const body = new FormData(form);
    const response = await fetch(edit.dataset.checkSrc, {
      method: "POST", body, credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrfToken(form) },
    });
    const answer = await response.json().catch(() => ({ message: response.statusText }));
    button.disabled = !response.ok;
    verdict.classList.toggle("error", !response.ok);
    verdict.textContent = response.ok
      ? `The rules: ${answer.evaluation.decision} · risk ${answer.risk}${(answer.riskNotes || []).map((n) => ` · ${n}`).join("")}`
      : answer.message;
  };
  function soon() { clearTimeout(timer); timer = setTimeout(check, 250); }
  edit.addEventListener("toggle", () => { if (edit.open) check(); });
}

function removeCard(id) {
  delete Live.state.pending[id];
  const card = document.getElementById(`approval-${id}`);
  if (card) card.remove();
  updateQueueCount();
}

function addCard(request) {
  Live.state.pending[request.id] = request;
  if (document.getElementById(`approval-${request.id}`)) return;
  const template = document.getElementById("card-template");
  const queue = document.getElementById("queue");
  if (!template || !queue) return;
  const card = template.content.firstElementChild.cloneNode(true);
  fillCard(card, request);
  queue.append(card);
  updateQueueCount();
  tickDeadlines();  // the time left at once, not at the next tick
}

function updateQueueCount() {
  const count = document.querySelectorAll("#queue article.approval").length;
  const counter = document.getElementById("pending-count");
  if (counter) counter.textContent = count;
  const empty = document.getElementById("queue-empty");
  if (empty) empty.hidden = count > 0;
}

function approvalHandlers() {
  return {
    snapshot(state) {
      const ids = new Set(Object.keys(state.pending));
      document.querySelectorAll("#queue article.approval").forEach((card) => {
        if (!ids.has(card.dataset.id)) card.remove();
      });
      Object.values(state.pending).forEach((request) => {
        const card = document.getElementById(`approval-${request.id}`);
        if (card) fillCard(card, request);
        else addCard(request);
      });
      updateQueueCount();
    },
    "approval.created": addCard,
    "approval.changed": (request) => {
      // A decided request changes too (its decision's messages are sent): not the queue's.
      if (request.status !== "pending") { removeCard(request.id); return; }
      Live.state.pending[request.id] = request;
      const card = document.getElementById(`approval-${request.id}`);
      if (card) fillCard(card, request);
      else addCard(request);
    },
    "approval.decided": (request) => removeCard(request.id),
  };
}

function tickDeadlines() {
  const now = Date.now();
  document.querySelectorAll("article.approval[data-deadline]").forEach((card) => {
    const left = Math.max(0, Math.round((Date.parse(card.dataset.deadline) - now) / 1000));
    const label = card.querySelector('[data-field="time-left"]');
    if (!label) return;
    label.textContent = left ? `${Math.floor(left / 60)}m ${String(left % 60).padStart(2, "0")}s left` : "expired";
    label.classList.toggle("urgent", left < 60);
  });
}

// --- overview ------------------------------------------------------------------------------------

function overviewHandlers() {
  const refresh = () => Live.socket && Live.socket.readyState === 1 && Live.socket.send(JSON.stringify({ type: "resync" }));
  let timer = null;
  const soon = () => { clearTimeout(timer); timer = setTimeout(refresh, 500); };
  return {
    snapshot(state) {
      for (const [phase, count] of Object.entries(state.counts || {})) {
        const element = document.querySelector(`[data-count="${phase}"]`);
        if (element) element.textContent = count;
      }
      const pending = document.querySelector('[data-count="pending-approvals"]');
      if (pending) pending.textContent = state.pending;
      if (window.Charts) window.Charts.render(state.charts);
    },
    "allocation.created": soon, "allocation.changed": soon,
    "approval.created": soon, "approval.decided": soon,
  };
}

// --- wiring ---------------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  const topic = document.body.dataset.liveTopic || "";
  if (topic === "allocations") Live.handlers = allocationListHandlers();
  else if (topic.startsWith("allocation:")) Live.handlers = allocationHandlers();
  else if (topic === "approvals") Live.handlers = approvalHandlers();
  else if (topic.startsWith("approval:")) Live.handlers = approvalPageHandlers();
  else if (topic === "overview") {
    Live.handlers = overviewHandlers();
    // Warm pools are resized by beat, not by an event this page hears: look again now and then.
    setInterval(() => Live.socket && Live.socket.readyState === 1 && Live.socket.send(JSON.stringify({ type: "resync" })), 30000);
  }
  Live.start();

  document.querySelectorAll("article.approval").forEach(wireCard);
  tickDeadlines();
  setInterval(tickDeadlines, 1000);
  loadObjects();

  document.querySelectorAll("[data-copy]").forEach((button) => {
    button.addEventListener("click", () => {
      const source = document.querySelector(button.dataset.copy);
      navigator.clipboard.writeText(source.textContent.trim()).then(() => { button.textContent = "Copied"; });
    });
  });
  document.querySelectorAll("form.confirm").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!confirm(form.dataset.confirm)) event.preventDefault();
    });
  });
  const allocationForm = document.getElementById("allocation-form");
  if (allocationForm) {
    const sync = () => {
      const chosen = allocationForm.querySelector('input[name="strategy"]:checked');
      allocationForm.querySelectorAll("[data-for]").forEach((group) => {
        group.hidden = !chosen || !group.dataset.for.split(" ").includes(chosen.value);
      });
    };
    allocationForm.addEventListener("change", sync);
    sync();
  }
});
