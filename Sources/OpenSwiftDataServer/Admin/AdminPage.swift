import Foundation
import Hummingbird

/// The admin console's page: the state rendered as HTML on the server (every text from users
/// and clients escaped), the stylesheet and a small script inline (no external assets), and a
/// content security policy that lets only those two run, through a nonce made for the answer.
/// The script reads the state again every second and renders it the same way, with text nodes
/// only (``AdminPageAssets``).
enum AdminPage {
    /// The page as an HTTP answer, for a page served at `path` (its actions and state are at
    /// `path/api/…`, wherever the routes are mounted).
    static func response(_ state: AdminState, path: String) -> Response {
        let nonce = Data((0..<18).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var trimmed = path
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        let html = render(state, api: trimmed + "/api", nonce: nonce)
        var response = Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
        response.headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'nonce-\(nonce)'; style-src 'nonce-\(nonce)'; connect-src 'self'; img-src data:; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        return response
    }

    /// The page's HTML.
    static func render(_ state: AdminState, api: String, nonce: String) -> String {
        let now = state.now
        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex">
            <link rel="icon" href="data:,">
            <title>osd-server admin</title>
            <style nonce="\(nonce)">\(AdminPageAssets.stylesheet)</style>
            </head>
            <body data-api="\(api.htmlEscaped)" data-epoch="\(state.server.storedEpoch.htmlEscaped)">
            <header>
            <h1>osd-server admin</h1>
            <p id="status" class="muted">as of the page's load</p>
            </header>
            <main>
            <p id="epoch-warning" class="banner"\(state.server.epoch == state.server.storedEpoch ? " hidden" : "")>\(epochWarning(state.server).htmlEscaped)</p>
            <div class="cards">

            """
        html += card("Live channels", value: ("live-count", "\(state.live.connections)"), sub: ("live-sub", users(state.live.userCount)))
        html += card("Pushes", value: ("push-rate", rate(state.traffic.pushes)), sub: ("push-total", "\(state.traffic.pushes.total) in all"))
        html += card("Pulls", value: ("pull-rate", rate(state.traffic.pulls)), sub: ("pull-total", "\(state.traffic.pulls.total) in all"))
        html += card(
            "Mutations", value: ("mutation-rate", rate(state.traffic.mutations)), sub: ("mutation-total", "\(state.traffic.mutations.total) in all"))
        html += card("Log head", value: ("log-head", "\(state.log.head)"), sub: ("log-sub", "last sequence number"))
        html += card(
            "Retention horizon", value: ("log-horizon", "\(state.log.horizon)"),
            sub: ("retention", "log kept \(duration(state.server.retentionSeconds))"))
        html += card(
            "Epoch", value: ("epoch", state.server.epoch),
            sub: ("epoch-sub", state.server.sharedStorage ? "shared database" : "this server's database"),
            wide: true)
        html += """
            </div>
            <div class="columns">
            <section>
            <h2>Clients</h2>
            <div class="scroll"><table>
            <thead><tr><th>Client</th><th>User</th><th>Last mutation</th><th>Last seen</th></tr></thead>
            <tbody id="clients">\(clientRows(state, now: now))</tbody>
            </table></div>
            <p id="clients-more" class="more">\(more(shown: state.clients.items.count, total: state.clients.total, noun: "clients").htmlEscaped)</p>
            </section>
            <section>
            <h2>Live channels</h2>
            <div class="scroll"><table>
            <thead><tr><th>User</th><th>Channels</th><th>Open since</th></tr></thead>
            <tbody id="live-users">\(liveRows(state, now: now))</tbody>
            </table></div>
            <p id="live-more" class="more">\(more(shown: state.live.users.count, total: BoundedCount(value: state.live.userCount), noun: "users").htmlEscaped)</p>
            </section>
            </div>
            <section>
            <h2>Scopes</h2>
            <div class="scroll"><table>
            <thead><tr><th>Scope</th><th>Owner</th><th>Members</th><th>Records</th></tr></thead>
            <tbody id="scopes">\(scopeRows(state))</tbody>
            </table></div>
            <p id="scopes-more" class="more">\(more(shown: state.scopes.items.count, total: state.scopes.total, noun: "scopes").htmlEscaped)</p>
            </section>
            <section>
            <h2>Recent rejections</h2>
            <div class="scroll"><table class="wide-table">
            <thead><tr><th>When</th><th>Route</th><th>User</th><th>Client</th><th>Mutation</th><th>Reason</th><th>Message</th></tr></thead>
            <tbody id="rejections">\(rejectionRows(state, now: now))</tbody>
            </table></div>
            <p id="unauthenticated" class="more">\(withoutToken(state.refusedWithoutToken).htmlEscaped)</p>
            </section>
            <section id="actions">
            <h2>Actions</h2>
            <form id="grant-form" autocomplete="off">
            <label>Scope<input id="grant-scope" name="scope" required placeholder="team:design"></label>
            <label>User to grant<input id="grant-user" name="user" required placeholder="bob"></label>
            <label>Owner, if nobody owns the scope yet<input id="grant-owner" name="owner" placeholder="alice"></label>
            <button id="grant-button" class="primary" type="submit">Grant…</button>
            </form>
            <form id="revoke-form" autocomplete="off">
            <label>Scope<input id="revoke-scope" name="scope" required placeholder="team:design"></label>
            <label>User to revoke<input id="revoke-user" name="user" required placeholder="bob"></label>
            <button id="revoke-button" type="submit">Revoke…</button>
            </form>
            <div class="rotate">
            <button id="rotate-button" class="danger" type="button">Rotate the epoch…</button>
            <p class="muted">Every client then downloads its data again and resends what this database lacks: for a database restored from a copy.\(state.server.sharedStorage ? " " + sharedNote : "")</p>
            </div>
            <p id="result" role="status"></p>
            </section>
            <div id="confirm" role="dialog" aria-modal="true" aria-labelledby="confirm-text" hidden>
            <p id="confirm-text"></p>
            <div class="buttons"><button id="confirm-yes" class="primary" type="button">Confirm</button><button id="confirm-no" type="button">Cancel</button></div>
            </div>
            </main>
            <script nonce="\(nonce)">\(AdminPageAssets.script)</script>
            </body>
            </html>

            """
        return html
    }

    /// What the page says of a rotation when other servers may share the database.
    static let sharedNote =
        "Other servers sharing this database keep serving the old epoch until they restart: restart every other server after a rotation."

    private static func epochWarning(_ server: AdminState.Server) -> String {
        "This server serves epoch \(server.epoch), but the database's is \(server.storedEpoch) (rotated through another server): restart this server."
    }

    private static func card(_ label: String, value: (id: String, text: String), sub: (id: String, text: String), wide: Bool = false) -> String {
        """
        <div class="card\(wide ? " wide" : "")"><div class="label">\(label.htmlEscaped)</div><div id="\(value.id)" class="value">\(value.text.htmlEscaped)</div>\
        <div id="\(sub.id)" class="sub">\(sub.text.htmlEscaped)</div></div>

        """
    }

    private static func row(_ cells: [String]) -> String {
        "<tr>" + cells.map { "<td>\($0)</td>" }.joined() + "</tr>"
    }

    private static func empty(_ text: String, columns: Int) -> String {
        "<tr><td colspan=\"\(columns)\" class=\"empty\">\(text.htmlEscaped)</td></tr>"
    }

    private static func clientRows(_ state: AdminState, now: Int64) -> String {
        guard !state.clients.items.isEmpty else { return empty("No client has synced yet.", columns: 4) }
        return state.clients.items.map { client in
            row([
                client.clientID.htmlEscaped, client.user.htmlEscaped, client.lastMutationID.map { "\($0)" } ?? "—",
                ago(client.lastSeen, now: now).htmlEscaped,
            ])
        }.joined()
    }

    private static func liveRows(_ state: AdminState, now: Int64) -> String {
        guard !state.live.users.isEmpty else { return empty("No live channel is open.", columns: 3) }
        return state.live.users.map { user in
            row([user.user.htmlEscaped, "\(user.connections)", ago(user.since, now: now).htmlEscaped])
        }.joined()
    }

    private static func scopeRows(_ state: AdminState) -> String {
        guard !state.scopes.items.isEmpty else { return empty("No scope holds records or members yet.", columns: 4) }
        return state.scopes.items.map { scope in
            var members = scope.members.map { member in
                "<span class=\"member\">\(member.htmlEscaped) <button type=\"button\" class=\"link\" data-action=\"revoke\" "
                    + "data-scope=\"\(scope.scope.htmlEscaped)\" data-user=\"\(member.htmlEscaped)\">revoke</button></span>"
            }.joined()
            let hidden = scope.memberCount.value - scope.members.count
            if hidden > 0 { members += "<span class=\"muted\">+\(hidden)\(scope.memberCount.capped ? "+" : "") more</span>" }
            if members.isEmpty { members = "—" }
            return row([scope.scope.htmlEscaped, (scope.owner ?? "unclaimed").htmlEscaped, members, count(scope.records)])
        }.joined()
    }

    /// The line under the refusals that counts those made without an accepted token.
    static func withoutToken(_ count: Int) -> String {
        count == 0 ? "" : "\(count) pushes and pulls refused without an accepted token (counted, not listed)."
    }

    private static func rejectionRows(_ state: AdminState, now: Int64) -> String {
        guard !state.rejections.isEmpty else { return empty("Nothing was rejected since the server started.", columns: 7) }
        return state.rejections.map { rejection in
            row([
                ago(rejection.at, now: now).htmlEscaped, rejection.route.htmlEscaped, (rejection.user ?? "—").htmlEscaped,
                (rejection.clientID ?? "—").htmlEscaped, rejection.mutationID.map { "\($0)" } ?? "—", rejection.reason.htmlEscaped,
                rejection.message.htmlEscaped,
            ])
        }.joined()
    }

    // The formats below are the script's too (AdminPageAssets.script): keep them alike.

    static func rate(_ rate: AdminState.Rate) -> String {
        let tenths = Int((rate.perSecond * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)/s"
    }

    static func count(_ count: BoundedCount) -> String { "\(count.value)\(count.capped ? "+" : "")" }

    static func users(_ count: Int) -> String { count == 1 ? "1 user" : "\(count) users" }

    static func more(shown: Int, total: BoundedCount, noun: String) -> String {
        let hidden = total.value - shown
        guard hidden > 0 else { return "" }
        return total.capped ? "and at least \(hidden) more \(noun)" : "and \(hidden) more \(noun)"
    }

    static func ago(_ milliseconds: Int64, now: Int64) -> String {
        guard milliseconds > 0 else { return "never" }
        return duration(Double(max(0, now - milliseconds)) / 1000) + " ago"
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min" }
        if whole < 86_400 { return "\(whole / 3600) h" }
        return "\(whole / 86_400) d"
    }
}
