// rein dashboard: refreshes the overview from /api/overview. Every number
// arrives pre-formatted by the server, so what the script shows matches the
// server-rendered page. User text is only ever set with textContent.
"use strict";

(function () {
  const body = document.body;
  if (!body || body.dataset.page !== "overview") {
    return;
  }
  const api = body.dataset.api || "/api/overview";
  const every = Math.max(100, parseInt(body.dataset.pollMs, 10) || 5000);
  // The sparkline box (dashboard.TrendWidth × TrendHeight).
  const TREND_W = 120;
  const TREND_H = 24;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) {
      e.className = cls;
    }
    if (text !== undefined && text !== null) {
      e.textContent = String(text);
    }
    return e;
  }

  function setText(testid, text) {
    const e = document.querySelector('[data-testid="' + testid + '"]');
    if (e && e.textContent !== text) {
      e.textContent = text;
    }
  }

  // fill replaces a container's children with one row per item, or an
  // "empty" row when there are none, when the items changed.
  function fill(testid, items, row, emptyText, cols) {
    const box = document.querySelector('[data-testid="' + testid + '"]');
    if (!box) {
      return;
    }
    // Leave unchanged content alone: no flicker, no lost selection, and
    // links stay the same nodes while someone clicks them.
    const sig = JSON.stringify(items || []);
    if (box.dataset.sig === sig) {
      return;
    }
    box.dataset.sig = sig;
    const rows = (items || []).map(row);
    if (rows.length === 0 && emptyText) {
      if (box.tagName === "TBODY") {
        const tr = el("tr", "empty");
        const td = el("td", "", emptyText);
        td.colSpan = cols;
        tr.appendChild(td);
        rows.push(tr);
      } else {
        rows.push(el("li", "empty", emptyText));
      }
    }
    box.replaceChildren(...rows);
  }

  function tr(attr, key, cells) {
    const r = el("tr");
    r.setAttribute(attr, key);
    for (const [cls, text] of cells) {
      r.appendChild(el("td", cls, text));
    }
    return r;
  }

  // spark sets a sparkline's points and tooltip.
  function spark(testid, points, title) {
    const svg = document.querySelector('[data-testid="' + testid + '"]');
    if (!svg) {
      return;
    }
    const line = svg.querySelector("polyline");
    if (line && line.getAttribute("points") !== points) {
      line.setAttribute("points", points);
    }
    const t = svg.querySelector("title");
    if (t && t.textContent !== title) {
      t.textContent = title;
    }
  }

  function render(o) {
    setText("updated-at", o.updated_text);
    setText("coverage", o.coverage);
    setText("activation-rate", o.activation_rate.text);
    setText("activated-count", o.activated.text);
    setText("judged-total", o.judged.text);
    setText("decisions-total", o.decisions.text);
    setText("failed-count", o.failed.text);
    setText("failure-rate", o.failure_rate.text);
    setText("dead-letters", o.dead_letters.text);
    const dep = document.querySelector('[data-testid="deployment"]');
    if (dep && o.deployment) {
      for (const [cls, text] of [["rate", o.deployment.activation_rate.text], ["activated", o.deployment.activated.text],
        ["judged", o.deployment.judged.text], ["failed", o.deployment.failed.text], ["note", o.deployment.note || ""]]) {
        const e = dep.querySelector("." + cls);
        if (e && e.textContent !== text) {
          e.textContent = text;
        }
      }
    }
    spark("trend-rate", o.trend.rate, o.trend.rate_text + " (" + o.trend.bucket_text + ")");
    spark("trend-decisions", o.trend.decisions, o.trend.decisions_text + " (" + o.trend.bucket_text + ")");
    fill("alarms", o.alarms, (a) => {
      const p = el("p", "alarm", a.text);
      p.setAttribute("role", "alert");
      p.dataset.alarm = a.kind;
      return p;
    });
    fill("problems", o.problems, (p) => el("li", "", p));
    fill("outcomes", o.outcomes, (c) =>
      tr("data-outcome", c.name, [["name", c.name], ["num count", c.text]]));
    fill("error-types", o.error_types, (s) => {
      const r = tr("data-error-type", s.name, [["name", ""], ["num count", s.count.text], ["num rate", s.rate.text]]);
      const a = el("a", "type-link", s.name);
      a.href = s.url;
      r.querySelector(".name").appendChild(a);
      return r;
    }, "no activations yet", 3);
    fill("tenants", o.tenants, (t) => {
      const r = tr("data-tenant", t.name, [["name", ""], ["num decisions", t.decisions.text],
        ["num activated", t.activated.text], ["num rate", t.rate.text]]);
      const a = el("a", "tenant-link", t.name);
      a.href = t.url;
      r.querySelector(".name").appendChild(a);
      return r;
    }, "no decisions yet", 4);
    fill("consumers", o.consumers, (c) => {
      const r = tr("data-consumer", c.stream + "/" + c.name, [["stream", c.stream], ["name", c.name],
        ["num pending", c.pending.text], ["num ack-pending", c.ack_pending.text],
        ["num max-ack-pending", c.max_ack_pending.text], ["num oldest-pending", c.oldest_pending.text]]);
      if (c.stalled) {
        r.className = "stalled";
      }
      return r;
    }, "no consumers", 6);
    setText("flow-coverage", o.flow_coverage);
    fill("flows", o.flows, (f) => {
      const r = tr("data-flow", f.stream, [["stream", f.stream], ["num messages", f.messages.text],
        ["num rate", f.rate.text], ["trend", ""], ["direction", f.direction]]);
      const ns = "http://www.w3.org/2000/svg";
      const svg = document.createElementNS(ns, "svg");
      svg.setAttribute("class", "spark");
      svg.setAttribute("viewBox", "0 0 " + TREND_W + " " + TREND_H);
      svg.setAttribute("width", TREND_W);
      svg.setAttribute("height", TREND_H);
      svg.setAttribute("role", "img");
      svg.setAttribute("aria-label", "messages per bucket");
      const title = document.createElementNS(ns, "title");
      title.textContent = f.trend_text;
      const line = document.createElementNS(ns, "polyline");
      line.setAttribute("points", f.trend);
      svg.append(title, line);
      r.querySelector(".trend").appendChild(svg);
      return r;
    }, "no streams", 5);
    fill("conversations", o.conversations, (c) => {
      const r = tr("data-conversation", c.tenant + "/" + c.conversation, [["time", ""], ["name", ""],
        ["num turn", c.turn], ["outcome", c.outcome], ["error-type", c.error_type || ""]]);
      r.dataset.outcome = c.outcome;
      const t = el("time", "", c.time_text);
      t.setAttribute("datetime", c.time);
      r.querySelector(".time").appendChild(t);
      const a = el("a", "conversation-link", c.tenant + " / " + c.conversation);
      a.href = c.url;
      r.querySelector(".name").appendChild(a);
      return r;
    }, "no conversations in this window", 5);
    fill("latency", o.latency, (l) =>
      tr("data-series", l.series, [["name", l.series], ["num count", l.count.text],
        ["num p50", l.p50.text], ["num p99", l.p99.text]]), "nothing measured in this window", 4);
    fill("recent", o.recent, (x) => {
      const li = el("li", "outcome " + x.kind);
      li.dataset.kind = x.kind;
      li.dataset.id = x.id;
      const t = el("time", "", x.time_text);
      t.setAttribute("datetime", x.time);
      const a = el("a", "conversation-link", x.tenant + " / " + x.conversation);
      a.href = x.url;
      li.append(t, " ", el("span", "kind", x.kind), " ", a, " ", el("span", "turn", "turn " + x.turn));
      if (x.error_type) {
        li.append(" ", el("span", "error-type", x.error_type));
      }
      if (x.reason) {
        li.append(" ", el("span", "reason", x.reason));
      }
      li.append(" ", el("span", "text", x.text));
      return li;
    }, "no escalations or reports yet");
  }

  const status = document.querySelector('[data-testid="status"]');
  let polls = 0;

  async function poll() {
    try {
      const res = await fetch(api, { headers: { Accept: "application/json" }, cache: "no-store" });
      if (!res.ok) {
        throw new Error("HTTP " + res.status);
      }
      render(await res.json());
      polls++;
      body.dataset.polls = String(polls);
      if (status) {
        status.textContent = "live";
        status.className = "status live";
      }
    } catch (err) {
      if (status) {
        status.textContent = "stale: " + err.message;
        status.className = "status stale";
      }
    } finally {
      setTimeout(poll, every);
    }
  }
  setTimeout(poll, every);
})();
