import Foundation
import Hummingbird
import Logging
import NIOHTTP1
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import ServiceLifecycle
import Testing

@Suite("Admin console over HTTP: access, state, actions, escaping", .serialized)
struct AdminConsoleTests {
    private typealias Fixture = AdminFixture

    @Test("without an admin token the console does not exist: /admin and its API answer 404 as an unknown path does")
    func offWithoutToken() async throws {
        for token in [nil, ""] as [String?] {
            try await LiveServer.run(adminToken: token) { server in
                let unknown = try await server.send(.GET, "/no-such-path")
                for (method, path) in [(HTTPMethod.GET, "/admin"), (.GET, "/admin/api/state"), (.POST, "/admin/api/rotate-epoch")] {
                    let answer = try await server.send(method, path, token: Fixture.token, body: method == .POST ? Data("{}".utf8) : nil)
                    #expect(answer.status == 404, "\(path)")
                    #expect(answer.errorCode == .notFound && answer.errorCode == unknown.errorCode, "\(path): \(answer.text)")
                }
            }
        }
    }

    @Test("a missing or wrong credential, or a user's token, is 401 with the JSON error and a login prompt; the token opens it as Bearer or Basic")
    func credential() async throws {
        try await LiveServer.run(adminToken: Fixture.token) { server in
            let alice = try await server.token("alice")
            let wrong: [[String: String]] = [
                [:], ["Authorization": "Bearer not-the-admin-token"], ["Authorization": "Bearer \(alice)"],
                ["Authorization": "Basic " + Data("admin:not-the-admin-token".utf8).base64EncodedString()],
                ["Authorization": "Basic " + Data(Fixture.token.utf8).base64EncodedString()], ["Authorization": Fixture.token],
            ]
            for headers in wrong {
                for path in ["/admin", "/admin/api/state"] {
                    let answer = try await server.send(.GET, path, headers: headers)
                    #expect(answer.status == 401, "\(path) \(headers)")
                    #expect(answer.errorCode == .unauthorized, "\(answer.text)")
                    #expect(answer.headers["www-authenticate"]?.hasPrefix("Basic realm=") == true)
                    #expect(answer.headers["x-request-id"]?.isEmpty == false)
                }
            }
            let refusedGrant = try await server.send(
                .POST, "/admin/api/grant", token: alice, body: try JSONEncoder().encode(["scope": "team:x", "user": "bob", "owner": "alice"]))
            #expect(refusedGrant.status == 401)
            let basic = "Basic " + Data("anyone:\(Fixture.token)".utf8).base64EncodedString()
            let page = try await server.send(.GET, "/admin", headers: ["Authorization": basic])
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.headers["cache-control"] == "no-store")
            #expect(try await server.send(.GET, "/admin/api/state", token: Fixture.token).status == 200)
            // The admin token is no user token.
            #expect(try await server.pull(PullRequest(clientID: "c"), token: Fixture.token).status == 401)
        }
    }

    @Test("the state after a push with a rejected mutation, a refused push and a pull", arguments: Backend.all)
    func stateAfterPushes(_ backend: Backend) async throws {
        try await LiveServer.run(backend, adminToken: Fixture.token) { server in
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let push = try await server.push(
                PushRequest(
                    clientID: "alice-phone",
                    mutations: [
                        mutation(1, .insert, "n1", fields: ["title": .string("mine")]),
                        mutation(2, .insert, "n2", scope: .user("bob"), fields: ["title": .string("not mine")]),
                    ]), token: alice)
            #expect(try push.decode(PushResponse.self).results.map(\.status) == [.applied, .rejected])
            let forged = try await server.push(PushRequest(clientID: "intruder", mutations: [mutation(1, .insert, "x")]), token: "forged")
            #expect(forged.status == 401)
            let malformed = try await server.push(PushRequest(clientID: "", mutations: [mutation(1, .insert, "x")]), token: alice)
            #expect(malformed.status == 400)
            #expect(try await server.pull(PullRequest(clientID: "bob-laptop"), token: bob).status == 200)

            let state = try await Fixture.state(server)
            #expect(state.traffic.pushes.total == 1 && state.traffic.pulls.total == 1 && state.traffic.mutations.total == 2)
            #expect(state.traffic.pushes.perSecond > 0 && state.traffic.mutations.perSecond > 0)
            #expect(state.log.head == 1 && state.log.horizon == 0)
            #expect(state.server.epoch == server.server.service.epoch && state.server.storedEpoch == state.server.epoch)
            #expect(state.server.sharedStorage == (backend == .postgres))
            #expect(state.server.retentionSeconds == 30 * 24 * 3600)
            #expect(state.live.connections == 0)

            // Newest first: the refused push, then the rejected mutation; the push without an
            // accepted token is only counted.
            #expect(state.refusedWithoutToken == 1)
            try #require(state.rejections.count == 2)
            let refused = state.rejections[0]
            #expect(refused.route == "push" && refused.reason == "400 malformedRequest" && refused.user == "alice" && refused.mutationID == nil)
            let rejected = state.rejections[1]
            #expect(rejected.route == "push" && rejected.user == "alice" && rejected.clientID == "alice-phone" && rejected.mutationID == 2)
            #expect(rejected.reason == RejectionReason.scopeNotGranted.rawValue && rejected.message.contains("user:bob"))
            #expect(rejected.at >= before && rejected.at <= state.now)

            let phone = try #require(state.clients.items.first { $0.clientID == "alice-phone" })
            #expect(phone.user == "alice" && phone.lastMutationID == 2 && phone.lastSeen >= before && phone.lastSeen <= state.now)
            let laptop = try #require(state.clients.items.first { $0.clientID == "bob-laptop" })
            #expect(laptop.user == "bob" && laptop.lastMutationID == nil && laptop.lastSeen >= before)
            #expect(state.clients.items.first?.clientID == "bob-laptop", "the most recently seen first")

            let scope = try #require(state.scopes.items.first { $0.scope == "user:alice" })
            #expect(scope.owner == "alice" && scope.members.isEmpty && scope.records.value == 1 && !scope.records.capped)
            #expect(!state.scopes.items.contains { $0.scope == "user:bob" }, "the rejected mutation wrote nothing")
        }
    }

    @Test("a grant from the console lets the grantee pull the scope, a revocation takes it away", arguments: Backend.all)
    func grantAndRevoke(_ backend: Backend) async throws {
        try await LiveServer.run(backend, adminToken: Fixture.token) { server in
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            let push = try await server.push(
                PushRequest(clientID: "alice-phone", mutations: [mutation(1, .insert, "t1", scope: "team:x", fields: ["title": .string("plan")])]),
                token: alice)
            #expect(try push.decode(PushResponse.self).results.first?.status == .applied)
            #expect(try await Fixture.records(server, token: bob, client: "bob-1").isEmpty)

            let granted = try await Fixture.post(server, "grant", ["scope": "team:x", "user": "bob"])
            #expect(granted.status == 200, "\(granted.text)")
            #expect(try granted.decode(ScopeMembersResponse.self) == ScopeMembersResponse(scope: "team:x", owner: "alice", members: ["bob"]))
            #expect(try await Fixture.records(server, token: bob, client: "bob-2") == ["t1"])
            let scope = try #require(try await Fixture.state(server).scopes.items.first { $0.scope == "team:x" })
            #expect(scope.owner == "alice" && scope.members == ["bob"] && scope.memberCount.value == 1 && scope.records.value == 1)

            let revoked = try await Fixture.post(server, "revoke", ["scope": "team:x", "user": "bob"])
            #expect(revoked.status == 200, "\(revoked.text)")
            #expect(try revoked.decode(ScopeMembersResponse.self).members.isEmpty)
            #expect(try await Fixture.records(server, token: bob, client: "bob-3").isEmpty)
            let again = try await Fixture.post(server, "revoke", ["scope": "team:x", "user": "bob"])
            #expect(again.status == 404 && again.errorCode == .notFound)

            // A scope nobody owns is claimed for the owner named, and only then.
            let unowned = try await Fixture.post(server, "grant", ["scope": "team:new", "user": "bob"])
            #expect(unowned.status == 404 && unowned.errorCode == .notFound, "\(unowned.text)")
            let claimed = try await Fixture.post(server, "grant", ["scope": "team:new", "user": "bob", "owner": "carol"])
            #expect(try claimed.decode(ScopeMembersResponse.self) == ScopeMembersResponse(scope: "team:new", owner: "carol", members: ["bob"]))
            let malformed = try await Fixture.post(server, "grant", ["scope": "no-colon", "user": "bob"])
            #expect(malformed.status == 400 && malformed.errorCode == .malformedRequest)
            let garbage = try await server.send(
                .POST, "/admin/api/grant", token: Fixture.token, headers: Fixture.actionHeader, body: Data("[1,2".utf8))
            #expect(garbage.status == 400 && garbage.errorCode == .malformedRequest)
        }
    }

    @Test("rotating the epoch takes effect at once on this server; a confirmation of an older epoch changes nothing", arguments: Backend.all)
    func rotateEpoch(_ backend: Backend) async throws {
        try await LiveServer.run(backend, adminToken: Fixture.token) { server in
            let alice = try await server.token("alice")
            let push = try await server.push(PushRequest(clientID: "alice-phone", mutations: [mutation(1, .insert, "n1")]), token: alice)
            #expect(push.status == 200)
            let cursor = try await server.pull(PullRequest(clientID: "alice-phone"), token: alice).decode(PullResponse.self).cursor
            let epoch = server.server.service.epoch

            let stale = try await Fixture.post(server, "rotate-epoch", ["epoch": "not-the-epoch"])
            #expect(stale.status == 409 && stale.errorCode == .staleEpoch, "\(stale.text)")
            let unchanged = try await Fixture.state(server)
            #expect(server.server.service.epoch == epoch && unchanged.server.storedEpoch == epoch)

            // A live device, connected before the rotation: it is told to pull at once.
            let (connection, messages) = await server.server.hub.connect(user: "bob")
            var live = messages.makeAsyncIterator()
            #expect(await live.next()?.type == .hello)
            let rotated = try await Fixture.post(server, "rotate-epoch", ["epoch": epoch])
            #expect(rotated.status == 200, "\(rotated.text)")
            // Ended now, the stream gives what it was sent (nil when nothing was).
            await server.server.hub.disconnect(connection)
            #expect(await live.next()?.type == .hello, "a live device hears of the rotation")
            let rotation = try rotated.decode(AdminFixture.Rotation.self)
            #expect(rotation.previous == epoch && rotation.current != epoch)
            #expect(rotation.restartOtherServers == (backend == .postgres))
            #expect(server.server.service.epoch == rotation.current)
            let state = try await Fixture.state(server)
            #expect(state.server.epoch == rotation.current && state.server.storedEpoch == rotation.current)

            // Cursors of the old epoch reset; a push made against it is refused.
            let reset = try await server.pull(PullRequest(clientID: "alice-phone", cursor: cursor), token: alice).decode(PullResponse.self)
            #expect(reset.reset == .epochChanged && reset.lastMutationID == 1)
            let late = try await server.push(
                PushRequest(clientID: "alice-phone", mutations: [mutation(2, .insert, "n2")], cursor: cursor), token: alice)
            #expect(late.status == 409 && late.errorCode == .staleEpoch)
            let twice = try await Fixture.post(server, "rotate-epoch", ["epoch": epoch])
            #expect(twice.status == 409, "the same confirmation does not rotate twice")
        }
    }

    @Test("actions a page of another site could send are refused")
    func crossSiteActions() async throws {
        try await LiveServer.run(adminToken: Fixture.token) { server in
            let body = Data(#"{"scope":"team:x","user":"mallory","owner":"mallory"}"#.utf8)
            // A page of another site can send a form or a text body, but not a custom header
            // without a preflight.
            let unmarked = try await server.send(.POST, "/admin/api/grant", token: Fixture.token, body: body)
            #expect(unmarked.status == 403 && unmarked.errorCode == .forbidden, "\(unmarked.text)")
            let form = try await server.send(
                .POST, "/admin/api/grant",
                headers: ["Authorization": "Bearer \(Fixture.token)", "Content-Type": "text/plain", "X-OSD-Admin": "1"], body: nil)
            #expect(form.status == 415 && form.errorCode == .malformedRequest, "\(form.text)")
            for site in ["cross-site", "same-site"] {
                let refused = try await server.send(
                    .POST, "/admin/api/grant", token: Fixture.token, headers: ["Sec-Fetch-Site": site, "X-OSD-Admin": "1"], body: body)
                #expect(refused.status == 403 && refused.errorCode == .forbidden, "\(site)")
            }
            let otherOrigin = try await server.send(
                .POST, "/admin/api/grant", token: Fixture.token, headers: ["Origin": "https://evil.example", "X-OSD-Admin": "1"], body: body)
            #expect(otherOrigin.status == 403 && otherOrigin.errorCode == .forbidden, "\(otherOrigin.text)")
            #expect(try await Fixture.state(server).scopes.items.isEmpty)
            let ownOrigin = try await server.send(
                .POST, "/admin/api/grant", token: Fixture.token,
                headers: ["Origin": "http://127.0.0.1:\(server.port)", "Sec-Fetch-Site": "same-origin", "X-OSD-Admin": "1"], body: body)
            #expect(ownOrigin.status == 200, "\(ownOrigin.text)")
        }
    }

    @Test("scope names, user ids and rejection messages are escaped in the page, whose only script is its own")
    func hostileTextIsEscaped() async throws {
        try await LiveServer.run(adminToken: Fixture.token) { server in
            let scope = #"team:<script>alert("scope")</script>"#
            let member = "<img src=x onerror=alert(1)>"
            let owner = #""><b onmouseover=alert(2)>owner"#
            let granted = try await Fixture.post(server, "grant", ["scope": scope, "user": member, "owner": owner])
            #expect(granted.status == 200, "\(granted.text)")
            let alice = try await server.token("alice")
            let push = try await server.push(
                PushRequest(clientID: "<svg onload=alert(3)>", mutations: [mutation(1, .insert, "n1", scope: ScopeID(rawValue: scope))]), token: alice
            )
            #expect(try push.decode(PushResponse.self).results.first?.status == .rejected)

            let page = try await server.send(.GET, "/admin", token: Fixture.token)
            #expect(page.status == 200)
            let html = page.text
            for raw in [scope, member, owner, "<svg", "<img", "<b ", #"alert("scope")"#] {
                #expect(!html.contains(raw), "\(raw) appears unescaped")
            }
            #expect(html.contains("team:&lt;script&gt;alert(&quot;scope&quot;)&lt;/script&gt;"))
            #expect(html.contains("&lt;img src=x onerror=alert(1)&gt;"))
            #expect(html.contains("&quot;&gt;&lt;b onmouseover=alert(2)&gt;owner"))
            #expect(html.contains("&lt;svg onload=alert(3)&gt;"))
            // The member's revoke button carries the names in attributes, escaped too.
            #expect(html.contains(#"data-user="&lt;img src=x onerror=alert(1)&gt;""#))
            // One script, the page's own, allowed by its nonce; nothing else may run.
            let policy = try #require(page.headers["content-security-policy"])
            let nonce = try #require(policy.firstMatch(of: /script-src 'nonce-([A-Za-z0-9+\/=]+)'/)?.1)
            #expect(html.components(separatedBy: "<script").count == 2)
            #expect(html.contains("<script nonce=\"\(nonce)\">"))
            #expect(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"))
        }
    }
}

extension AdminConsoleTests {
    @Test("an application mounts the console where it likes: the page's script reads the state under that path; without a token nothing is mounted")
    func mountedInAnApplication() async throws {
        let directory = try TemporaryDirectory()
        let server = try await SyncServer(
            configuration: SyncServerConfiguration(auth: AuthConfiguration(hmacSecret: LiveServer.secret), adminToken: Fixture.token),
            storage: try SQLiteSyncStorage(path: directory.path("sync.sqlite")))
        let closed = try await SyncServer(
            configuration: SyncServerConfiguration(auth: AuthConfiguration(hmacSecret: LiveServer.secret)),
            storage: try SQLiteSyncStorage(path: directory.path("closed.sqlite")))
        var logger = Logger(label: "admin-embedding-test")
        logger.logLevel = .warning
        let router = Router()
        router.addRoutes(server.adminRoutes(), atPath: "/ops/sync")
        router.addRoutes(closed.adminRoutes(), atPath: "/closed")
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw SyncServiceError(500, .internalError, "the application did not start") }
            let outcome: Result<Void, any Error>
            do {
                let client = LiveServerClient(base: "http://127.0.0.1:\(port)")
                for path in ["/ops/sync/admin", "/ops/sync/admin/"] {
                    let page = try await client.send(.GET, path, token: Fixture.token)
                    #expect(page.status == 200, "\(path)")
                    #expect(page.text.contains(#"data-api="/ops/sync/admin/api""#), "\(path)")
                }
                let state = try await client.send(.GET, "/ops/sync/admin/api/state", token: Fixture.token)
                #expect(state.status == 200)
                #expect(try state.decode(AdminFixture.State.self).server.epoch == server.service.epoch)
                let refused = try await client.send(.GET, "/ops/sync/admin/api/state")
                #expect(refused.status == 401 && refused.errorCode == .unauthorized && refused.headers["x-request-id"]?.isEmpty == false)
                #expect(try await client.send(.GET, "/closed/admin", token: Fixture.token).status == 404)
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            try outcome.get()
        }
        try await server.close()
        try await closed.close()
    }
}
