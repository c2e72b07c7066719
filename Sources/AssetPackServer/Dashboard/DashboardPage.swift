import Foundation

/// The dashboard's page: HTML, CSS and JavaScript written here, compiled into the binary and served as one
/// document at `/_mock/` (no framework, nothing fetched from elsewhere, so it works offline and over TLS with
/// the server's own certificate).
///
/// The script listens to `/_mock/events` and changes nothing itself: its buttons and forms call the control
/// API (`/_mock/faults`, `/_mock/packs/...`), so the page can do only what `curl` can.
enum DashboardPage {
    /// The whole document, style and script inline, with no snapshot.
    static let document: String =
        html
        .replacingOccurrences(of: "/*STYLE*/", with: style)
        .replacingOccurrences(of: "/*SCRIPT*/", with: script)

    /// The place of the first snapshot in ``document``.
    static let snapshotSlot = #"<script id="first-snapshot" type="application/json">null</script>"#

    /// The document with the packs as they are now (`snapshot`, the JSON of a `snapshot` event), drawn by the
    /// script before the event stream says anything. `<` is escaped so that no text in it (a manifest's
    /// problem, a pack ID) can end the script element.
    static func document(firstSnapshot snapshot: Data) -> String {
        let json = String(decoding: snapshot, as: UTF8.self).replacingOccurrences(of: "<", with: "\\u003c")
        return document.replacingOccurrences(
            of: snapshotSlot,
            with: #"<script id="first-snapshot" type="application/json">"# + json + "</script>"
        )
    }

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>ba-mock</title>
        <link rel="icon" href="data:,">
        <style>/*STYLE*/</style>
        </head>
        <body>
        <header>
          <h1>ba-mock</h1>
          <span id="status" class="status off">connecting…</span>
          <span id="seed"></span>
        </header>
        <main>
        <section id="packs-section">
          <h2>Packs</h2>
          <div id="problems"></div>
          <table id="packs">
            <thead><tr>
              <th>ID</th><th>Build</th><th>Policy</th><th>Platforms</th><th>Language</th><th>Format</th><th>Version</th>
              <th>Size</th><th>Digest</th><th>Pin</th><th>Obsolete</th><th>Deltas</th><th>Steer</th>
            </tr></thead>
            <tbody></tbody>
          </table>
        </section>
        <section id="faults-section">
          <h2>Faults</h2>
          <ul id="faults"></ul>
          <form id="fault-form">
            <select id="fault-kind" aria-label="fault">
              <option value="status">status=</option>
              <option value="reset-after">reset-after=</option>
              <option value="throttle">throttle=</option>
              <option value="latency">latency=</option>
              <option value="stall">stall=</option>
              <option value="corrupt">corrupt=</option>
              <option value="truncate">truncate</option>
              <option value="wrong-length">wrong-length</option>
              <option value="no-ranges">no-ranges</option>
              <option value="stale-manifest">stale-manifest</option>
              <option value="bad-manifest">bad-manifest</option>
            </select>
            <input id="fault-value" placeholder="value" size="8" aria-label="value">
            <select id="fault-pack" aria-label="pack"><option value="">every pack</option></select>
            <input id="fault-times" placeholder="times" size="5" aria-label="times">
            <button type="submit" id="fault-add">Add</button>
          </form>
          <form id="fault-raw-form">
            <input id="fault-raw" placeholder="or a rule as --fault takes it, e.g. status=503,retry-after=2,nth=1"
              aria-label="rule">
            <button type="submit">Add rule</button>
            <button type="button" id="fault-clear">Remove all</button>
          </form>
          <p id="fault-error" class="error" role="alert"></p>
        </section>
        <section id="downloads-section">
          <h2>Downloads now</h2>
          <table id="downloads">
            <thead><tr><th>Client</th><th>Pack</th><th>Range</th><th>Sent</th><th>Rate</th><th>Fault</th></tr></thead>
            <tbody></tbody>
          </table>
          <p id="downloads-empty" class="quiet">loading…</p>
        </section>
        <section id="log-section">
          <h2>Request log</h2>
          <div class="filters">
            <select id="log-pack" aria-label="pack"><option value="">every pack</option></select>
            <input id="log-status" placeholder="status, e.g. 503 or 2" size="10" aria-label="status">
            <select id="log-fault" aria-label="fault">
              <option value="">with or without fault</option><option value="yes">with a fault</option>
              <option value="no">without</option>
            </select>
            <button type="button" id="log-pause">Pause</button>
            <span id="log-count" class="quiet"></span>
          </div>
          <table id="log">
            <thead><tr>
              <th>Time</th><th>Client</th><th>Request</th><th>Range</th><th>Status</th><th>Bytes</th><th>ms</th>
              <th>Fault</th>
            </tr></thead>
            <tbody></tbody>
          </table>
        </section>
        </main>
        <script id="first-snapshot" type="application/json">null</script>
        <script>/*SCRIPT*/</script>
        </body>
        </html>
        """#

    static let style = #"""
        :root { color-scheme: light dark; --line: #8884; --bad: #c0392b; --ok: #2e7d32; --warn: #b26a00; }
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; }
        header { display: flex; gap: 1em; align-items: baseline; padding: .5em 1em; border-bottom: 1px solid var(--line); }
        h1 { font-size: 1.2em; margin: 0; } h2 { font-size: 1.05em; margin: 1em 0 .4em; }
        main { padding: 0 1em 2em; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .25em .5em; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-weight: 600; white-space: nowrap; }
        code, .mono { font-family: ui-monospace, monospace; font-size: .92em; }
        .status.on { color: var(--ok); } .status.off { color: var(--bad); }
        .quiet { color: #888; } .error { color: var(--bad); }
        .build-published { color: var(--ok); } .build-broken { color: var(--bad); font-weight: 600; }
        .build-building { color: var(--warn); }
        .problem { background: #c0392b18; border-left: 3px solid var(--bad); padding: .3em .6em; margin: .2em 0; }
        .problem .fix { display: block; color: inherit; opacity: .8; }
        .bar { background: var(--line); height: .6em; border-radius: .3em; min-width: 6em; overflow: hidden; }
        .bar > span { display: block; height: 100%; background: var(--ok); }
        form, .filters { display: flex; flex-wrap: wrap; gap: .4em; margin: .4em 0; }
        input, select, button { font: inherit; padding: .2em .4em; }
        #fault-raw { flex: 1 1 18em; }
        #faults li { margin: .2em 0; } #faults button { margin-left: .5em; }
        td.steer { white-space: nowrap; } td.steer input { width: 3.5em; }
        tr.obsolete td:first-child { text-decoration: line-through; }
        /* A phone: each row becomes a card, each cell a labelled line. */
        @media (max-width: 720px) {
          thead { display: none; }
          table, tbody, tr, td { display: block; width: auto; }
          tr { border: 1px solid var(--line); border-radius: .4em; margin: .5em 0; padding: .3em; }
          td { border: 0; padding: .1em .3em; }
          td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; }
          header { flex-wrap: wrap; }
        }
        """#

    static let script = #"""
        "use strict";
        const token = new URLSearchParams(location.search).get("token");
        const state = { packs: [], faults: [], log: [], lastSequence: 0, capacity: 500, paused: false,
          frozen: [] };

        function el(tag, attributes, ...children) {
          const node = document.createElement(tag);
          for (const [key, value] of Object.entries(attributes || {})) {
            if (value === undefined || value === null) continue;
            if (key.startsWith("on")) node.addEventListener(key.slice(2), value); else node.setAttribute(key, value);
          }
          for (const child of children.flat()) {
            if (child === null || child === undefined) continue;
            node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
          }
          return node;
        }
        function bytes(n) {
          if (n === null || n === undefined) return "?";
          const units = ["B", "KiB", "MiB", "GiB", "TiB"];
          let i = 0; let v = n;
          while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
          return (i === 0 ? v : v.toFixed(1)) + " " + units[i];
        }

        async function control(method, path, body) {
          const headers = token ? { "X-BA-Mock-Token": token } : {};
          const response = await fetch("/_mock/" + path, { method, body, headers });
          const text = await response.text();
          let json = null; try { json = JSON.parse(text); } catch (_) {}
          if (!response.ok) throw new Error((json && json.error && json.error.message) || text || response.status);
          return json;
        }
        function report(promise) {
          const out = document.getElementById("fault-error");
          promise.then(() => { out.textContent = ""; }, (error) => { out.textContent = error.message; });
        }

        // The stream's first snapshot is most often the one the page was served with: not drawn twice.
        let drawnSnapshot = null;
        function renderPacks(snapshot) {
          const text = JSON.stringify(snapshot);
          if (text === drawnSnapshot) return;
          drawnSnapshot = text;
          state.packs = snapshot.packs; state.faults = snapshot.faults;
          document.getElementById("seed").textContent = "fault seed " + snapshot.seed;
          const problems = document.getElementById("problems");
          problems.replaceChildren(...snapshot.problems.filter((p) => !p.pack).map(problemNode));
          const body = document.querySelector("#packs tbody");
          const typed = typedVersions(body);
          body.replaceChildren(...snapshot.packs.flatMap(packRows));
          restoreTypedVersions(body, typed);
          for (const select of [document.getElementById("fault-pack"), document.getElementById("log-pack")]) {
            const chosen = select.value;
            select.replaceChildren(select.options[0], ...snapshot.packs.map((p) => el("option", { value: p.id }, p.id)));
            select.value = chosen;
          }
          document.getElementById("faults").replaceChildren(...snapshot.faults.map((rule, index) =>
            el("li", { "data-rule": rule }, el("code", {}, rule),
              el("button", { type: "button", class: "fault-remove",
                onclick: () => report(control("DELETE", "faults/" + index)) }, "Remove"))));
        }
        // A version being typed in a Pin box survives the table being drawn again (another pack built, a fault
        // added), focus included: it went back to the published version, and Pin published that.
        function typedVersions(body) {
          const typed = new Map();
          for (const input of body.querySelectorAll("td.steer input[data-typed]")) {
            typed.set(input.closest("tr").dataset.pack, { value: input.value, focused: document.activeElement === input });
          }
          return typed;
        }
        function restoreTypedVersions(body, typed) {
          for (const row of body.querySelectorAll("tr[data-pack]")) {
            const kept = typed.get(row.dataset.pack);
            const input = row.querySelector("td.steer input");
            if (!kept || !input) continue;
            input.value = kept.value;
            input.dataset.typed = "";
            if (kept.focused) input.focus();
          }
        }
        function problemNode(problem) {
          return el("div", { class: "problem" },
            el("strong", {}, problem.severity + ": "), problem.message, " ",
            el("code", { class: "file" }, problem.file + (problem.key ? " · " + problem.key : "")),
            problem.fix ? el("span", { class: "fix" }, "Fix: " + problem.fix) : null);
        }
        function packRows(pack) {
          const id = encodeURIComponent(pack.id);
          const version = pack.publishedVersion === null ? "–" :
            String(pack.publishedVersion) + (pack.contentVersion !== null && pack.contentVersion !== pack.publishedVersion
              ? " (content " + pack.contentVersion + ")" : "");
          const pinInput = el("input", { type: "number", min: "1", "aria-label": "version to publish",
            value: pack.publishedVersion || 1, oninput: () => { pinInput.dataset.typed = ""; } });
          const steer = el("td", { class: "steer", "data-label": "Steer" },
            pinInput,
            el("button", { type: "button", class: "pin", onclick: () => {
              delete pinInput.dataset.typed;  // sent: the next snapshot shows it published
              report(control("PUT", "packs/" + id + "/version/" + pinInput.value));
            } }, "Pin"),
            pack.pinnedBy === "control" ? el("button", { type: "button", class: "unpin", onclick: () =>
              report(control("DELETE", "packs/" + id + "/version")) }, "Unpin") : null,
            pack.obsolete
              ? el("button", { type: "button", class: "publish", onclick: () =>
                  report(control("DELETE", "packs/" + id + "/obsolete")) }, "Publish again")
              : el("button", { type: "button", class: "obsolete", onclick: () =>
                  report(control("PUT", "packs/" + id + "/obsolete")) }, "Mark obsolete"));
          const cell = (field, label, ...content) => el("td", { "data-field": field, "data-label": label }, ...content);
          const row = el("tr", { "data-pack": pack.id, class: pack.obsolete ? "obsolete" : null },
            cell("id", "ID", el("strong", {}, pack.id)),
            cell("build", "Build", el("span", { class: "build-" + pack.build }, pack.build)),
            cell("policy", "Policy", pack.policy || "–"),
            cell("platforms", "Platforms", pack.platforms ? pack.platforms.join(", ") : "all"),
            cell("language", "Language", pack.language || "–"),
            cell("format", "Format", pack.format ? pack.format + " " + pack.compression : "–"),
            cell("version", "Version", version),
            cell("size", "Size", pack.size === undefined ? "–" : bytes(pack.size)),
            cell("digest", "Digest", pack.sha256 ? el("code", { title: pack.sha256 }, pack.sha256.slice(0, 12)) : "–"),
            cell("pin", "Pin", pack.pinnedBy ? "pinned (" + pack.pinnedBy + ")" : "–"),
            cell("obsolete", "Obsolete", pack.obsolete ? "obsolete" : pack.removed ? "removed" : "–"),
            cell("deltas", "Deltas", pack.deltas && pack.deltas.length
              ? pack.deltas.map((d) => "from " + d.fromVersion + " (" + bytes(d.size) + ")").join(", ") : "–"),
            steer);
          if (!pack.problems.length) return [row];
          return [row, el("tr", { "data-problems": pack.id },
            el("td", { colspan: "13" }, ...pack.problems.map(problemNode),
              el("span", { class: "quiet" }, pack.publishedVersion === null ? "not published"
                : "version " + pack.publishedVersion + " stays published")))];
        }

        function renderDownloads(downloads) {
          state.capacity = downloads.capacity;
          const body = document.querySelector("#downloads tbody");
          body.replaceChildren(...downloads.inFlight.map((d) => {
            const share = d.total ? Math.min(100, 100 * d.sent / d.total) : 0;
            return el("tr", { "data-download": d.id, "data-pack": d.pack },
              el("td", { "data-label": "Client" }, d.client),
              el("td", { "data-label": "Pack" }, d.pack || d.path),
              el("td", { "data-label": "Range" }, d.range || "whole"),
              el("td", { "data-label": "Sent", "data-field": "sent", "data-sent": d.sent },
                el("div", { class: "bar" }, el("span", { style: "width:" + share.toFixed(1) + "%" })),
                bytes(d.sent) + " of " + bytes(d.total)),
              el("td", { "data-label": "Rate" }, d.rate === undefined ? "…" : bytes(Math.max(0, d.rate)) + "/s"),
              el("td", { "data-label": "Fault" }, d.fault || "–"));
          }));
          const empty = document.getElementById("downloads-empty");
          const more = (downloads.inFlightCount || 0) - downloads.inFlight.length;  // beyond what one event lists
          empty.textContent = more > 0 ? "and " + more + " more" : "none";
          empty.hidden = downloads.inFlight.length > 0 && more <= 0;
          // A stream opened again (the server restarted, the network came back) sends the log from its start.
          const fresh = downloads.finished.filter((r) => r.sequence > state.lastSequence);
          if (downloads.finished.length) state.lastSequence = downloads.finished[downloads.finished.length - 1].sequence;
          if (fresh.length) {
            state.log.push(...fresh);
            if (state.log.length > state.capacity) state.log.splice(0, state.log.length - state.capacity);
            renderLog();
          }
        }
        function renderLog() {
          // Paused, the log shown stays as it was (filters apply to that); new entries are kept meanwhile.
          const log = state.paused ? state.frozen : state.log;
          const pack = document.getElementById("log-pack").value;
          const status = document.getElementById("log-status").value.trim();
          const fault = document.getElementById("log-fault").value;
          const shown = log.filter((r) => (!pack || r.pack === pack)
            && (!status || String(r.status).startsWith(status))
            && (!fault || (fault === "yes") === (r.fault !== null))).slice(-200).reverse();
          document.querySelector("#log tbody").replaceChildren(...shown.map((r) =>
            el("tr", { "data-status": r.status, "data-pack": r.pack, class: r.aborted ? "error" : null },
              el("td", { "data-label": "Time" }, new Date((r.started * 1000) + r.ms).toLocaleTimeString()),
              el("td", { "data-label": "Client" }, r.client),
              el("td", { "data-label": "Request" }, el("code", {}, r.method + " " + r.path)),
              el("td", { "data-label": "Range" }, r.range || "–"),
              el("td", { "data-label": "Status" }, String(r.status)),
              el("td", { "data-label": "Bytes" }, bytes(r.sent) + (r.aborted ? " (aborted)" : "")),
              el("td", { "data-label": "ms" }, String(r.ms)),
              el("td", { "data-label": "Fault" }, r.fault || "–"))));
          document.getElementById("log-count").textContent = shown.length + " shown of the last " + log.length
            + (state.paused ? " (paused; " + (state.log.length - log.length) + " more since)" : "");
        }

        for (const id of ["log-pack", "log-status", "log-fault"]) {
          document.getElementById(id).addEventListener("input", renderLog);
        }
        document.getElementById("log-pause").addEventListener("click", (event) => {
          state.paused = !state.paused;
          state.frozen = state.log.slice();
          event.target.textContent = state.paused ? "Resume" : "Pause";
          renderLog();
        });
        document.getElementById("fault-form").addEventListener("submit", (event) => {
          event.preventDefault();
          const kind = document.getElementById("fault-kind").value;
          const value = document.getElementById("fault-value").value.trim();
          const pack = document.getElementById("fault-pack").value;
          const times = document.getElementById("fault-times").value.trim();
          const takesValue = ["status", "reset-after", "throttle", "latency", "stall", "corrupt"].includes(kind);
          let rule = takesValue ? kind + "=" + value : kind;
          if (pack) rule += ",pack=" + pack;
          if (times) rule += ",times=" + times;
          report(control("POST", "faults", rule));
        });
        document.getElementById("fault-raw-form").addEventListener("submit", (event) => {
          event.preventDefault();
          report(control("POST", "faults", document.getElementById("fault-raw").value.trim()));
        });
        document.getElementById("fault-clear").addEventListener("click", () => report(control("DELETE", "faults")));

        function connect() {
          const source = new EventSource("/_mock/events" + (token ? "?token=" + encodeURIComponent(token) : ""));
          const status = document.getElementById("status");
          source.addEventListener("open", () => { status.textContent = "live"; status.className = "status on"; });
          source.addEventListener("error", () => { status.textContent = "reconnecting…"; status.className = "status off"; });
          source.addEventListener("snapshot", (event) => renderPacks(JSON.parse(event.data)));
          source.addEventListener("downloads", (event) => renderDownloads(JSON.parse(event.data)));
        }
        // The packs as the page was served: drawn before the stream speaks (the log says loading until then).
        const first = JSON.parse(document.getElementById("first-snapshot").textContent);
        if (first) renderPacks(first);
        document.getElementById("log-count").textContent = "loading…";
        document.body.dataset.firstPaint = state.packs.map((p) => p.id).join(",") + "|"
          + document.getElementById("downloads-empty").textContent;
        connect();
        """#
}
