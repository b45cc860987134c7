import Foundation
import NIOHTTP1
import OpenSwiftDataServer
import OpenSwiftDataServerSQLite
import OpenSwiftDataSyncProtocol
import Testing

@Suite("HTTP server on loopback", .serialized)
struct HTTPTests {
    private func json(_ text: String) -> Data { Data(text.utf8) }

    @Test("push and pull round-trip; health, ready and metrics answer; every answer has a request id", arguments: Backend.all)
    func roundTrip(_ backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let alice = try await server.token("alice")
            let push = try await server.push(
                PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("hello")])]), token: alice)
            #expect(push.status == 200)
            #expect(try push.decode(PushResponse.self).results.first?.status == .applied)
            #expect(push.headers["x-request-id"]?.isEmpty == false)
            let pull = try await server.pull(PullRequest(clientID: "a"), token: alice)
            #expect(pull.status == 200)
            let page = try pull.decode(PullResponse.self)
            #expect(page.changes.first?.fields["title"] == .string("hello") && page.lastMutationID == 1)
            #expect(try await server.send(.GET, "/health").status == 200)
            #expect(try await server.send(.GET, "/ready").status == 200)
            let metrics = try await server.send(.GET, "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.text.contains("osd_http_requests_total"))
            #expect(metrics.text.contains("osd_mutations_applied_total 1"))
            #expect(metrics.text.contains("osd_pull_duration_seconds"))
            let scopes = try await server.send(.GET, "/v1/scopes", token: alice)
            #expect(try scopes.decode(ScopeListResponse.self).scopes == [ScopeAccess(scope: .user("alice"), role: .owner)])
        }
    }

    @Test("every bad request is a 4xx JSON error naming what was wrong, and nothing is stored", arguments: Backend.all)
    func badRequests(_ backend: Backend) async throws {
        try await LiveServer.run(backend, maxBodySize: 4096) { server in
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            _ = try await server.push(
                PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("t")])]), token: alice)
            let cursor = try await server.pull(PullRequest(clientID: "a"), token: alice).decode(PullResponse.self).cursor
            let verifier = try await TokenVerifier(
                configuration: AuthConfiguration(hmacSecret: "another-secret-of-at-least-32-bytes"), now: { Date() })
            let forged = try await verifier.mint(user: "alice")
            let expiredVerifier = try await TokenVerifier(
                configuration: AuthConfiguration(hmacSecret: LiveServer.secret), now: { Date(timeIntervalSinceNow: -7200) })
            let expired = try await expiredVerifier.mint(user: "alice", lifetime: 60)
            let unsigned = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMH0."
            let mutation2 = #"{"id":2,"stamp":"1","changes":[{"op":"insert","entity":"Note","recordID":"n2","scope":"user:alice"}]}"#
            let before = try await server.footprint()
            let cases: [(String, status: Int, code: SyncErrorCode, send: () async throws -> LiveServerClient.Answer)] = [
                (
                    "malformed JSON", 400, .malformedRequest,
                    { try await server.send(.POST, "/v1/push", token: alice, body: self.json("{\"protocolVersion\":1,")) }
                ),
                ("not an object", 400, .malformedRequest, { try await server.send(.POST, "/v1/push", token: alice, body: self.json("[1,2]")) }),
                (
                    "missing field", 400, .malformedRequest,
                    { try await server.send(.POST, "/v1/push", token: alice, body: self.json(#"{"protocolVersion":1,"mutations":[]}"#)) }
                ),
                (
                    "malformed value", 400, .malformedRequest,
                    {
                        try await server.send(
                            .POST, "/v1/push", token: alice,
                            body: self.json(
                                #"{"protocolVersion":1,"clientID":"a","mutations":[{"id":2,"stamp":"1","changes":[{"op":"insert","entity":"Note","recordID":"n2","scope":"user:alice","fields":{"n":{"t":"int","v":"x"}}}]}]}"#
                            ))
                    }
                ),
                (
                    "oversize body", 413, .bodyTooLarge,
                    { try await server.send(.POST, "/v1/push", token: alice, body: Data(repeating: UInt8(ascii: " "), count: 10_000)) }
                ),
                (
                    "unknown version", 400, .unsupportedProtocolVersion,
                    {
                        try await server.send(
                            .POST, "/v1/push", token: alice, body: self.json(#"{"protocolVersion":99,"clientID":"a","mutations":[]}"#))
                    }
                ),
                (
                    "unknown version on pull", 400, .unsupportedProtocolVersion,
                    { try await server.send(.GET, "/v1/pull?protocolVersion=7&clientID=a", token: alice) }
                ),
                (
                    "unknown version on scopes", 400, .unsupportedProtocolVersion,
                    { try await server.send(.GET, "/v1/scopes?protocolVersion=7", token: alice) }
                ),
                (
                    "unknown version on members", 400, .unsupportedProtocolVersion,
                    { try await server.send(.GET, "/v1/scopes/user:alice/members?protocolVersion=7", token: alice) }
                ),
                (
                    "unknown version on a revoke", 400, .unsupportedProtocolVersion,
                    { try await server.send(.DELETE, "/v1/scopes/user:alice/members/bob?protocolVersion=7", token: alice) }
                ),
                (
                    "a version that is not a number", 400, .malformedRequest,
                    { try await server.send(.GET, "/v1/scopes?protocolVersion=one", token: alice) }
                ),
                (
                    "unknown operation", 400, .unknownOperation,
                    {
                        try await server.send(
                            .POST, "/v1/push", token: alice,
                            body: self.json(
                                #"{"protocolVersion":1,"clientID":"a","mutations":[{"id":2,"stamp":"1","changes":[{"op":"upsert","entity":"Note","recordID":"n2","scope":"user:alice"}]}]}"#
                            ))
                    }
                ),
                (
                    "missing token", 401, .unauthorized,
                    {
                        try await server.send(
                            .POST, "/v1/push", body: self.json(#"{"protocolVersion":1,"clientID":"a","mutations":[\#(mutation2)]}"#))
                    }
                ),
                (
                    "expired token", 401, .unauthorized,
                    {
                        try await server.send(
                            .POST, "/v1/push", token: expired, body: self.json(#"{"protocolVersion":1,"clientID":"a","mutations":[\#(mutation2)]}"#))
                    }
                ),
                (
                    "forged token", 401, .unauthorized,
                    {
                        try await server.send(
                            .POST, "/v1/push", token: forged, body: self.json(#"{"protocolVersion":1,"clientID":"a","mutations":[\#(mutation2)]}"#))
                    }
                ),
                (
                    "unsigned token", 401, .unauthorized,
                    {
                        try await server.send(
                            .POST, "/v1/push", token: unsigned, body: self.json(#"{"protocolVersion":1,"clientID":"a","mutations":[\#(mutation2)]}"#))
                    }
                ),
                ("not a bearer token", 401, .unauthorized, { try await server.send(.GET, "/v1/scopes", headers: ["Authorization": "Basic YTpi"]) }),
                ("scope not granted (membership)", 403, .forbidden, { try await server.send(.GET, "/v1/scopes/user:alice/members", token: bob) }),
                (
                    "grant by a non-owner", 403, .forbidden,
                    {
                        try await server.send(
                            .POST, "/v1/scopes/user:alice/members", token: bob, body: self.json(#"{"protocolVersion":1,"user":"bob"}"#))
                    }
                ),
                (
                    "another user's client id", 403, .clientIDOwnedByAnotherUser,
                    { try await server.push(PushRequest(clientID: "a", mutations: [mutation(2, .insert, "b1", scope: .user("bob"))]), token: bob) }
                ),
                (
                    "another user's client id on pull", 403, .clientIDOwnedByAnotherUser,
                    { try await server.pull(PullRequest(clientID: "a"), token: bob) }
                ),
                (
                    "gapped id", 409, .mutationGap,
                    { try await server.push(PushRequest(clientID: "a", mutations: [mutation(5, .insert, "n5")]), token: alice) }
                ),
                (
                    "forked id", 409, .clientForked,
                    { try await server.push(PushRequest(clientID: "a", mutations: [mutation(1, .insert, "other")]), token: alice) }
                ),
                (
                    "ids not consecutive", 400, .malformedRequest,
                    {
                        try await server.push(
                            PushRequest(clientID: "a", mutations: [mutation(2, .insert, "x"), mutation(4, .insert, "y")]), token: alice)
                    }
                ),
                (
                    "forged cursor", 400, .invalidCursor,
                    { try await server.pull(PullRequest(clientID: "a", cursor: "eyJlIjoieCJ9.AAAA"), token: alice) }
                ),
                (
                    "altered cursor", 400, .invalidCursor,
                    { try await server.pull(PullRequest(clientID: "a", cursor: "x" + cursor.dropFirst()), token: alice) }
                ),
                ("missing clientID", 400, .malformedRequest, { try await server.send(.GET, "/v1/pull?protocolVersion=1", token: alice) }),
                (
                    "bad limit", 400, .malformedRequest,
                    { try await server.send(.GET, "/v1/pull?protocolVersion=1&clientID=a&limit=-1", token: alice) }
                ),
                ("unknown route", 404, .notFound, { try await server.send(.GET, "/v1/nothing", token: alice) }),
            ]
            for (name, status, code, send) in cases {
                let answer = try await send()
                #expect(answer.status == status, "\(name): \(answer.status) \(answer.text)")
                #expect(answer.errorCode == code, "\(name): \(answer.text)")
                #expect((try? answer.decode(ErrorResponse.self))?.error.message.isEmpty == false, "\(name)")
                #expect(try await server.footprint() == before, "\(name) stored something")
            }
        }
    }

    @Test(
        "mutation errors are answered per mutation: wrong value type, scope not granted; the replay is identical and stores nothing",
        arguments: Backend.all)
    func mutationErrors(_ backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let alice = try await server.token("alice")
            _ = try await server.push(
                PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1", fields: ["title": .string("t")])]), token: alice)
            let records = try await server.footprint()["osd_changes"]
            let batch = PushRequest(
                clientID: "a",
                mutations: [
                    mutation(2, .update, "n1", at: 1_790_000_000_001, fields: ["title": .int(3)]),
                    mutation(3, .insert, "x", scope: .user("bob"), at: 1_790_000_000_002),
                ])
            let answer = try await server.push(batch, token: alice)
            #expect(answer.status == 200)
            let response = try answer.decode(PushResponse.self)
            #expect(response.results.map(\.reason) == [.wrongValueType, .scopeNotGranted])
            #expect(response.lastMutationID == 3)
            #expect(try await server.footprint()["osd_changes"] == records, "a rejected mutation changes no record")
            let before = try await server.footprint()
            let replay = try await server.push(batch, token: alice)
            #expect(try replay.decode(PushResponse.self).results == response.results)
            #expect(try await server.footprint() == before)
        }
    }

    @Test("a cursor from another epoch (a server restored with the same key) is answered reset over HTTP, with nothing stored")
    func cursorFromAnotherEpoch() async throws {
        let key = Data(repeating: 7, count: 32)
        let cursor = try await LiveServer.run(storage: { try SQLiteSyncStorage(path: $0, cursorKey: key) }) { server in
            let alice = try await server.token("alice")
            _ = try await server.push(PushRequest(clientID: "a", mutations: [mutation(1, .insert, "n1")]), token: alice)
            return try await server.pull(PullRequest(clientID: "a"), token: alice).decode(PullResponse.self).cursor
        }
        try await LiveServer.run(storage: { try SQLiteSyncStorage(path: $0, cursorKey: key) }) { server in
            let alice = try await server.token("alice")
            let before = try await server.footprint()
            let answer = try await server.pull(PullRequest(clientID: "a", cursor: cursor), token: alice)
            #expect(answer.status == 200, "\(answer.text)")
            let page = try answer.decode(PullResponse.self)
            #expect(page.reset == .epochChanged)
            #expect(page.lastMutationID == 0, "this server never saw the client")
            #expect(try await server.footprint() == before)
        }
    }

    @Test("the server survives 1,000 random malformed requests in a row, then serves a correct one", arguments: Backend.all)
    func fuzz(_ backend: Backend) async throws {
        try await LiveServer.run(backend, maxBodySize: 16 * 1024) { server in
            let alice = try await server.token("alice")
            var generator = SystemRandomNumberGenerator()
            let fragments = [
                #"{"protocolVersion":1"#, #","clientID":"#, #""a""#, #","mutations":["#, #"{"id":"#, "1", #","stamp":"#, #""5""#,
                #","changes":[{"op":"#, #""insert""#, #""delete""#, #""nope""#, #","entity":"N","recordID":"r","scope":"#, #""user:alice""#,
                #""bad scope""#, "}", "]", "null", "\u{0}", "\"", "{", "[", "-1e999", "9999999999999999999999",
            ]
            let paths = [
                "/v1/push", "/v1/pull", "/v1/scopes/user:alice/members", "/v1/scopes/%ZZ/members", "/v1/push?x=%", "/v1/scopes/a:b/members/c",
            ]
            let before = try await server.footprint()
            var statuses: [Int: Int] = [:]
            for index in 0..<1_000 {
                var body = ""
                for _ in 0..<Int.random(in: 0...12, using: &generator) { body += fragments.randomElement(using: &generator) ?? "" }
                let method: HTTPMethod = [.POST, .GET, .DELETE, .PUT].randomElement(using: &generator) ?? .POST
                let path = paths.randomElement(using: &generator) ?? "/v1/push"
                let token = index % 5 == 0 ? "garbage.token.here" : alice
                let answer = try await server.send(
                    method,
                    path
                        + (method == .GET && path == "/v1/pull"
                            ? "?protocolVersion=\(Int.random(in: 0...2, using: &generator))&clientID=\(index % 3 == 0 ? "" : "a")&cursor=\(body.prefix(8).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
                            : ""),
                    token: token, body: method == .GET ? nil : Data(body.utf8))
                statuses[answer.status, default: 0] += 1
                if answer.status >= 400 {
                    #expect(answer.status < 500, "\(method) \(path) \(body.debugDescription) → \(answer.status) \(answer.text)")
                    #expect(answer.errorCode != nil, "\(answer.text)")
                }
            }
            #expect(statuses.keys.allSatisfy { $0 < 500 })
            #expect(try await server.footprint()["osd_records"] == before["osd_records"])
            let push = try await server.push(
                PushRequest(clientID: "fresh", mutations: [mutation(1, .insert, "ok", fields: ["title": .string("still serving")])]), token: alice)
            #expect(push.status == 200)
            #expect(try push.decode(PushResponse.self).results.first?.status == .applied)
        }
    }
}
