/// The admin page's stylesheet and script, inlined in the page (it loads nothing else).
enum AdminPageAssets {
    /// The stylesheet: one column on a phone, cards and two columns of tables on a laptop;
    /// light or dark as the system is.
    static let stylesheet = """
        :root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#f6f8fa;--card:#fff;--line:#d1d9e0;--accent:#0969da;--bad:#cf222e;--warn:#9a6700}
        @media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--card:#151b23;--line:#3d444d;--accent:#4493f8;--bad:#f85149;--warn:#d29922}}
        *{box-sizing:border-box}[hidden]{display:none!important}
        body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
        header{display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:baseline;justify-content:space-between;padding:.75rem 1.25rem;border-bottom:1px solid var(--line);background:var(--card)}
        h1{font-size:1.15rem;margin:0}h2{font-size:1rem;margin:0 0 .5rem}
        main{max-width:84rem;margin:0 auto;padding:1rem 1.25rem 6rem;display:grid;gap:1rem}
        .cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.75rem}
        .card,section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;min-width:0}
        .label,.sub,.muted,.more,.empty{color:var(--muted);font-size:.85rem}
        .value{font-size:1.4rem;font-weight:600;overflow-wrap:anywhere}#epoch{font:600 .9rem ui-monospace,SFMono-Regular,Menlo,monospace}
        .columns{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:1rem}
        .scroll{overflow-x:auto}table{width:100%;border-collapse:collapse;font-size:.9rem}
        th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}th{color:var(--muted);font-weight:500;white-space:nowrap}
        td{overflow-wrap:break-word}.more{margin:.4rem 0 0}.more:empty{display:none}
        .member{display:inline-block;margin:0 .75rem .15rem 0}
        .banner{margin:0;border-left:4px solid var(--warn);padding:.5rem .75rem;background:var(--card)}
        form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end;margin:0 0 1rem}
        label{display:flex;flex-direction:column;gap:.15rem;font-size:.85rem;color:var(--muted);flex:1 1 11rem;min-width:0}
        input{font:inherit;color:var(--fg);background:var(--bg);padding:.4rem .5rem;border:1px solid var(--line);border-radius:6px;min-width:0}
        button{font:inherit;color:var(--fg);background:var(--bg);padding:.4rem .85rem;border:1px solid var(--line);border-radius:6px;cursor:pointer}
        button.primary{background:var(--accent);border-color:var(--accent);color:#fff}button.danger{background:var(--bad);border-color:var(--bad);color:#fff}
        button.link{border:0;background:none;color:var(--accent);padding:0 .2rem;font-size:.8rem;text-decoration:underline}
        .rotate p{margin:.4rem 0 0}#result{margin:.75rem 0 0;overflow-wrap:anywhere}#result.bad{color:var(--bad)}
        #confirm{position:fixed;left:50%;bottom:1rem;transform:translateX(-50%);width:min(34rem,calc(100% - 2rem));background:var(--card);border:2px solid var(--accent);border-radius:10px;padding:1rem;box-shadow:0 8px 30px rgba(0,0,0,.3)}
        #confirm p{margin:0 0 .75rem;overflow-wrap:anywhere}.buttons{display:flex;gap:.5rem;flex-wrap:wrap}
        .wide-table{min-width:44rem}
        @media (max-width:40rem){header,main{padding-left:.75rem;padding-right:.75rem}.cards{grid-template-columns:repeat(2,minmax(0,1fr))}.value{font-size:1.15rem}.card.wide{grid-column:span 2}}
        """

    /// The script: reads the state every second and renders it as the server does (text
    /// nodes only, never markup), and carries out the actions after a confirmation step.
    static let script = """
        "use strict";
        (() => {
        // From the origin: a page opened at a URL with credentials in it cannot fetch relative URLs.
        const api = location.origin + document.body.dataset.api;
        let state = null, pending = null, lastOK = 0;
        const $ = (id) => document.getElementById(id);
        const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; };
        const duration = (s) => { const w = Math.round(s); return w < 60 ? w + " s" : w < 3600 ? Math.floor(w / 60) + " min" : w < 86400 ? Math.floor(w / 3600) + " h" : Math.floor(w / 86400) + " d"; };
        const ago = (t, now) => t > 0 ? duration(Math.max(0, now - t) / 1000) + " ago" : "never";
        const rate = (r) => { const t = Math.round(r.perSecond * 10); return Math.floor(t / 10) + "." + (t % 10) + "/s"; };
        const count = (c) => c.value + (c.capped ? "+" : "");
        const more = (shown, total, noun) => { const n = total.value - shown; return n > 0 ? (total.capped ? "and at least " : "and ") + n + " more " + noun : ""; };
        const dash = (v) => v === null || v === undefined ? "\\u2014" : String(v);
        function rows(id, items, cells, emptyText, columns) {
          const out = items.map((item) => { const tr = el("tr"); for (const c of cells(item)) { const td = el("td"); if (c instanceof Node) td.append(c); else td.textContent = String(c); tr.append(td); } return tr; });
          if (!out.length) { const tr = el("tr"), td = el("td", emptyText, "empty"); td.colSpan = columns; tr.append(td); out.push(tr); }
          $(id).replaceChildren(...out);
        }
        function members(scope) {
          const span = el("span");
          for (const m of scope.members) {
            const s = el("span", m, "member"), b = el("button", "revoke", "link");
            b.type = "button"; b.dataset.action = "revoke"; b.dataset.scope = scope.scope; b.dataset.user = m;
            s.append(" ", b); span.append(s);
          }
          const hidden = scope.memberCount.value - scope.members.length;
          if (hidden > 0) span.append(el("span", "+" + hidden + (scope.memberCount.capped ? "+" : "") + " more", "muted"));
          if (!span.childNodes.length) span.textContent = "\\u2014";
          return span;
        }
        function render(s) {
          state = s;
          const now = s.now, srv = s.server;
          $("live-count").textContent = s.live.connections;
          $("live-sub").textContent = s.live.userCount === 1 ? "1 user" : s.live.userCount + " users";
          for (const [key, name] of [["pushes", "push"], ["pulls", "pull"], ["mutations", "mutation"]]) {
            $(name + "-rate").textContent = rate(s.traffic[key]);
            $(name + "-total").textContent = s.traffic[key].total + " in all";
          }
          $("log-head").textContent = s.log.head;
          $("log-horizon").textContent = s.log.horizon;
          $("retention").textContent = "log kept " + duration(srv.retentionSeconds);
          $("epoch").textContent = srv.epoch;
          $("epoch-sub").textContent = srv.sharedStorage ? "shared database" : "this server's database";
          $("epoch-warning").hidden = srv.epoch === srv.storedEpoch;
          $("epoch-warning").textContent = "This server serves epoch " + srv.epoch + ", but the database's is " + srv.storedEpoch + " (rotated through another server): restart this server.";
          rows("clients", s.clients.items, (c) => [c.clientID, c.user, dash(c.lastMutationID), ago(c.lastSeen, now)], "No client has synced yet.", 4);
          $("clients-more").textContent = more(s.clients.items.length, s.clients.total, "clients");
          rows("live-users", s.live.users, (u) => [u.user, u.connections, ago(u.since, now)], "No live channel is open.", 3);
          $("live-more").textContent = more(s.live.users.length, { value: s.live.userCount, capped: false }, "users");
          rows("scopes", s.scopes.items, (c) => [c.scope, c.owner === null || c.owner === undefined ? "unclaimed" : c.owner, members(c), count(c.records)], "No scope holds records or members yet.", 4);
          $("scopes-more").textContent = more(s.scopes.items.length, s.scopes.total, "scopes");
          rows("rejections", s.rejections, (r) => [ago(r.at, now), r.route, dash(r.user), dash(r.clientID), dash(r.mutationID), r.reason, r.message], "Nothing was rejected since the server started.", 7);
          $("unauthenticated").textContent = s.refusedWithoutToken ? s.refusedWithoutToken + " pushes and pulls refused without an accepted token (counted, not listed)." : "";
        }
        async function refresh() {
          const started = Date.now();
          try {
            const answer = await fetch(api + "/state", { cache: "no-store", credentials: "same-origin" });
            if (!answer.ok) throw new Error("HTTP " + answer.status);
            render(await answer.json());
            lastOK = Date.now();
            // When the read shown began: what happened before it is on the page.
            if (started > Number(document.body.dataset.readAt || 0)) document.body.dataset.readAt = String(started);
            $("status").textContent = "live \\u00b7 updated every second";
          } catch (error) {
            $("status").textContent = "cannot read the state (" + error.message + ")" + (lastOK ? ", last read " + duration((Date.now() - lastOK) / 1000) + " ago" : "") + "; retrying";
          }
        }
        async function loop() {
          const started = Date.now();
          await refresh();
          setTimeout(loop, Math.max(0, 1000 - (Date.now() - started)));
        }
        function ask(text, action) {
          pending = action;
          $("confirm-text").textContent = text;
          $("confirm").hidden = false;
          $("confirm-yes").focus();
        }
        $("confirm-no").addEventListener("click", () => { pending = null; $("confirm").hidden = true; });
        $("confirm-yes").addEventListener("click", () => { const action = pending; pending = null; $("confirm").hidden = true; if (action) action(); });
        async function post(path, body, done) {
          const result = $("result");
          result.className = ""; result.textContent = "Working\\u2026";
          try {
            const answer = await fetch(api + path, { method: "POST", headers: { "Content-Type": "application/json", "X-OSD-Admin": "1" }, body: JSON.stringify(body), cache: "no-store", credentials: "same-origin" });
            const reply = await answer.json().catch(() => ({}));
            if (!answer.ok) throw new Error(reply.error && reply.error.message ? reply.error.message : "HTTP " + answer.status);
            result.className = "ok"; result.textContent = done(reply);
          } catch (error) {
            result.className = "bad"; result.textContent = "Failed: " + error.message;
          }
          refresh();
        }
        const value = (id) => $(id).value.trim();
        $("grant-form").addEventListener("submit", (event) => {
          event.preventDefault();
          const scope = value("grant-scope"), user = value("grant-user"), owner = value("grant-owner");
          if (!scope || !user) return;
          const body = owner ? { scope, user, owner } : { scope, user };
          ask("Grant scope " + scope + " to " + user + (owner ? " (claimed for " + owner + " if nobody owns it yet)" : "") + "? They can then read and write everything in it.",
            () => post("/grant", body, (a) => "Granted " + a.scope + " to " + user + ". Owner " + a.owner + "; members: " + (a.members.join(", ") || "none") + "."));
        });
        $("revoke-form").addEventListener("submit", (event) => {
          event.preventDefault();
          const scope = value("revoke-scope"), user = value("revoke-user");
          if (scope && user) askRevoke(scope, user);
        });
        function askRevoke(scope, user) {
          ask("Revoke " + user + "'s grant of scope " + scope + "? They can no longer read or write it.",
            () => post("/revoke", { scope, user }, (a) => "Revoked " + user + "'s grant of " + a.scope + ". Members: " + (a.members.join(", ") || "none") + "."));
        }
        document.addEventListener("click", (event) => {
          const button = event.target instanceof Element ? event.target.closest("button[data-action='revoke']") : null;
          if (button) askRevoke(button.dataset.scope, button.dataset.user);
        });
        $("rotate-button").addEventListener("click", () => {
          const epoch = state ? state.server.storedEpoch : document.body.dataset.epoch;
          const shared = state && state.server.sharedStorage;
          ask("Rotate epoch " + epoch + "? Every client downloads its data again and resends what the database lacks." + (shared ? " Then restart every other server sharing this database: they keep the old epoch until they restart." : ""),
            () => post("/rotate-epoch", { epoch }, (a) => "Epoch " + a.previous + " is now " + a.current + "." + (a.restartOtherServers ? " Restart every other server sharing this database now." : "")));
        });
        loop();
        })();
        """
}
