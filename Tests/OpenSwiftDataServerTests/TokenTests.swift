import Foundation
import Hummingbird
import JWTKit
import Logging
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import ServiceLifecycle
import Testing

/// Any claims, each optional, to make tokens that miss or misstate one.
private struct Claims: JWTPayload {
    var sub: SubjectClaim?
    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    var iat: IssuedAtClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// An identity provider's ES256 key, published in a JWKS under `kid`.
private struct ProviderKey {
    let key = ES256PrivateKey()
    let kid: String

    var jwk: JWK {
        get throws {
            let parameters = try #require(key.parameters)
            return JWK.ecdsa(.es256, identifier: JWKIdentifier(string: kid), x: parameters.x, y: parameters.y, curve: .p256)
        }
    }

    func sign(_ claims: Claims) async throws -> String {
        let keys = await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }
}

private func jwks(_ keys: [ProviderKey]) throws -> String {
    String(decoding: try JSONEncoder().encode(JWKS(keys: try keys.map { try $0.jwk })), as: UTF8.self)
}

/// A JWKS served over HTTP on loopback whose keys the test changes.
private actor JWKSEndpoint {
    var document: String
    private(set) var fetches = 0

    init(_ document: String) { self.document = document }

    func set(_ document: String) { self.document = document }

    func serve() -> String {
        fetches += 1
        return document
    }
}

@Suite("Bearer tokens: alg, signature and claims checked as JWT requires")
struct TokenTests {
    static let secret = "token-test-secret-of-at-least-32-bytes"
    let clock = ManualClock()
    var now: Date { clock.date }

    private func hmac(_ claims: Claims, alg: String? = nil, secret: String = TokenTests.secret) async throws -> String {
        let keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        var header = JWTHeader()
        if let alg { header.alg = alg }
        return try await keys.sign(claims, header: header)
    }

    private func claims(
        sub: String? = "alice", exp: TimeInterval? = 3600, nbf: TimeInterval? = nil, iat: TimeInterval? = 0, iss: String? = nil, aud: [String]? = nil
    ) -> Claims {
        Claims(
            sub: sub.map { SubjectClaim(value: $0) }, exp: exp.map { ExpirationClaim(value: now + $0) },
            nbf: nbf.map { NotBeforeClaim(value: now + $0) },
            iat: iat.map { IssuedAtClaim(value: now + $0) }, iss: iss.map { IssuerClaim(value: $0) }, aud: aud.map { AudienceClaim(value: $0) })
    }

    private func verifier(_ configuration: AuthConfiguration) async throws -> TokenVerifier {
        try await TokenVerifier(configuration: configuration, now: clock.clock)
    }

    /// Expects `token` refused with a 401 whose message contains each of `words`, and none of
    /// the key material.
    private func expectRefused(
        _ verifier: TokenVerifier, _ token: String, naming words: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let error = await expectError(.unauthorized, { _ = try await verifier.user(token: token) }, sourceLocation: sourceLocation)
        guard let error else { return }
        #expect(error.statusCode == 401, sourceLocation: sourceLocation)
        for word in words {
            #expect(error.error.message.contains(word), "\(error.error.message) names \(word)", sourceLocation: sourceLocation)
        }
        #expect(!error.error.message.contains(Self.secret), sourceLocation: sourceLocation)
    }

    @Test("exp, nbf and iat are checked against the clock, with the configured skew either side")
    func timeClaims() async throws {
        let verifier = try await verifier(AuthConfiguration(hmacSecret: Self.secret, clockSkew: 30))
        #expect(try await verifier.user(token: try await hmac(claims())) == "alice")
        // Not before: an hour from now is refused; 20 s from now is within the skew.
        await expectRefused(verifier, try await hmac(claims(nbf: 3600)), naming: ["nbf", "not valid before"])
        #expect(try await verifier.user(token: try await hmac(claims(nbf: 20))) == "alice")
        // Expired: a minute ago is refused; 20 s ago is within the skew.
        await expectRefused(verifier, try await hmac(claims(exp: -60)), naming: ["exp", "expired"])
        #expect(try await verifier.user(token: try await hmac(claims(exp: -20))) == "alice")
        // Issued in the future: refused beyond the skew.
        await expectRefused(verifier, try await hmac(claims(iat: 600)), naming: ["iat", "future"])
        #expect(try await verifier.user(token: try await hmac(claims(iat: 20))) == "alice")
        // exp is required; nbf and iat are not.
        await expectRefused(verifier, try await hmac(claims(exp: nil)), naming: ["no exp"])
        #expect(try await verifier.user(token: try await hmac(claims(iat: nil))) == "alice")
        // No skew: 20 s late is late.
        let strict = try await self.verifier(AuthConfiguration(hmacSecret: Self.secret, clockSkew: 0))
        await expectRefused(strict, try await hmac(claims(exp: -20)), naming: ["expired"])
        await expectRefused(strict, try await hmac(claims(nbf: 20)), naming: ["nbf"])
    }

    @Test("sub is required and 1 to 256 bytes")
    func subject() async throws {
        let verifier = try await verifier(AuthConfiguration(hmacSecret: Self.secret))
        await expectRefused(verifier, try await hmac(claims(sub: nil)), naming: ["no sub"])
        await expectRefused(verifier, try await hmac(claims(sub: "")), naming: ["sub"])
        await expectRefused(verifier, try await hmac(claims(sub: String(repeating: "a", count: 257))), naming: ["sub"])
    }

    @Test("the header's alg must match the key: HS256 only with the secret, none never, other algorithms only through the JWKS")
    func algorithmMatchesKey() async throws {
        let secretOnly = try await verifier(AuthConfiguration(hmacSecret: Self.secret))
        // Signed with the secret, but the header claims another algorithm.
        for alg in ["RS256", "ES256", "EdDSA", "PS256"] {
            await expectRefused(secretOnly, try await hmac(claims(), alg: alg), naming: ["alg \(alg)", "JWKS"])
        }
        for alg in ["HS512", "HS384", "hs256", "XYZ"] {
            await expectRefused(secretOnly, try await hmac(claims(), alg: alg), naming: ["alg \"\(alg)\"", "not accepted"])
        }
        for alg in ["none", "None", "NONE"] {
            let signed = try await hmac(claims(), alg: alg)
            await expectRefused(secretOnly, signed, naming: ["alg none", "unsigned"])
            // Without its signature too.
            let unsigned = signed.split(separator: ".").prefix(2).joined(separator: ".") + "."
            await expectRefused(secretOnly, unsigned, naming: ["alg none"])
        }
        // Forged: the right alg, the wrong secret.
        await expectRefused(secretOnly, try await hmac(claims(), secret: "another-secret-of-at-least-32-bytes!!"), naming: ["signature"])
        // Not a JWT at all.
        await expectRefused(secretOnly, "garbage", naming: ["malformed"])
        await expectRefused(secretOnly, "e30.e30.", naming: ["no alg"])

        // A server with only a JWKS refuses HS256, even signed with a secret it once had.
        let provider = ProviderKey(kid: "k1")
        let jwksOnly = try await verifier(AuthConfiguration(jwksJSON: try jwks([provider])))
        #expect(try await jwksOnly.user(token: try await provider.sign(claims())) == "alice")
        await expectRefused(jwksOnly, try await hmac(claims()), naming: ["alg HS256", "shared secret"])
        // The JWKS key under another algorithm's name.
        let keys = await JWTKeyCollection().add(ecdsa: provider.key, kid: JWKIdentifier(string: "k1"))
        var header = JWTHeader()
        header.alg = "ES384"
        header.kid = "k1"
        await expectRefused(jwksOnly, try await keys.sign(claims(), header: header), naming: ["alg ES384"])
        // A kid the JWKS does not have.
        await expectRefused(jwksOnly, try await ProviderKey(kid: "k9").sign(claims()), naming: ["\"k9\"", "not in the server's JWKS"])
        // The right kid, another key.
        await expectRefused(jwksOnly, try await ProviderKey(kid: "k1").sign(claims()), naming: ["signature"])

        // Both configured: each token goes to its own key.
        let both = try await verifier(AuthConfiguration(hmacSecret: Self.secret, jwksJSON: try jwks([provider])))
        #expect(try await both.user(token: try await provider.sign(claims(sub: "bob"))) == "bob")
        #expect(try await both.user(token: try await hmac(claims(sub: "carol"))) == "carol")
        await expectRefused(both, try await hmac(claims(), alg: "ES256"), naming: ["signature"])
    }

    @Test("--jwt-issuer and --jwt-audience: iss must be the issuer, aud must include the audience")
    func issuerAndAudience() async throws {
        let verifier = try await verifier(AuthConfiguration(hmacSecret: Self.secret, issuer: "https://id.example.com/", audience: "osd-sync"))
        #expect(try await verifier.user(token: try await hmac(claims(iss: "https://id.example.com/", aud: ["osd-sync"]))) == "alice")
        #expect(try await verifier.user(token: try await hmac(claims(iss: "https://id.example.com/", aud: ["other-api", "osd-sync"]))) == "alice")
        await expectRefused(verifier, try await hmac(claims(aud: ["osd-sync"])), naming: ["no iss"])
        await expectRefused(verifier, try await hmac(claims(iss: "https://evil.example.com/", aud: ["osd-sync"])), naming: ["iss", "not the issuer"])
        await expectRefused(verifier, try await hmac(claims(iss: "https://id.example.com/")), naming: ["no aud"])
        await expectRefused(
            verifier, try await hmac(claims(iss: "https://id.example.com/", aud: ["other-api"])), naming: ["aud", "does not include"])
        // Unset, neither is checked.
        let open = try await self.verifier(AuthConfiguration(hmacSecret: Self.secret))
        #expect(try await open.user(token: try await hmac(claims(iss: "anyone", aud: ["anything"]))) == "alice")
    }

    @Test("each refusal is a 401 with the JSON error body naming the failed check, over HTTP")
    func refusalsOverHTTP() async throws {
        try await LiveServer.run(auth: AuthConfiguration(hmacSecret: LiveServer.secret)) { server in
            let keys = await JWTKeyCollection().add(hmac: HMACKey(from: LiveServer.secret), digestAlgorithm: .sha256)
            let soon = Claims(
                sub: SubjectClaim(value: "alice"), exp: ExpirationClaim(value: Date() + 7200), nbf: NotBeforeClaim(value: Date() + 3600))
            var header = JWTHeader()
            header.alg = "RS256"
            let cases = [
                ("nbf", try await keys.sign(soon)),
                (
                    "alg RS256",
                    try await keys.sign(Claims(sub: SubjectClaim(value: "alice"), exp: ExpirationClaim(value: Date() + 60)), header: header)
                ),
            ]
            for (word, token) in cases {
                let answer = try await server.send(.GET, "/v1/scopes", token: token)
                #expect(answer.status == 401)
                #expect(answer.errorCode == .unauthorized)
                let message = try answer.decode(ErrorResponse.self).error.message
                #expect(message.contains(word), "\(message)")
                #expect(!message.contains(LiveServer.secret))
            }
        }
    }

    @Test(
        "JWKS key rotation: a token signed by a key published after the server started is accepted; a key withdrawn stops verifying after the refresh interval"
    )
    func jwksRotation() async throws {
        let old = ProviderKey(kid: "key-a")
        let new = ProviderKey(kid: "key-b")
        let endpoint = JWKSEndpoint(try jwks([old]))
        let router = Router()
        router.get("/jwks.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: await endpoint.serve())))
        }
        var logger = Logger(label: "jwks-provider")
        logger.logLevel = .warning
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            do {
                try await rotate(port: port, endpoint: endpoint, old: old, new: new)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
        }
    }

    private func rotate(port: Int, endpoint: JWKSEndpoint, old: ProviderKey, new: ProviderKey) async throws {
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/jwks.json"))
        let verifier = try await verifier(
            AuthConfiguration(
                jwksURL: url, jwksRefreshInterval: 3600, jwksMinimumRefetchInterval: 5,
                // The provider is served by this test process: beside the rest of the suite, a
                // fetch may wait longer than a provider across the network would.
                jwksFetchTimeout: messageDeadline))
        #expect(await endpoint.fetches == 1)
        #expect(try await verifier.user(token: try await old.sign(claims())) == "alice")
        // The provider publishes the new key next to the old one and signs with it.
        await endpoint.set(try jwks([old, new]))
        clock.advance(6)
        #expect(try await verifier.user(token: try await new.sign(claims(sub: "bob"))) == "bob")
        #expect(await endpoint.fetches == 2, "an unknown kid fetched the JWKS again")
        // Unknown kids do not refetch more often than the minimum interval.
        await expectRefused(verifier, try await ProviderKey(kid: "made-up").sign(claims()), naming: ["\"made-up\""])
        await expectRefused(verifier, try await ProviderKey(kid: "made-up-2").sign(claims()), naming: ["\"made-up-2\""])
        #expect(await endpoint.fetches == 2)
        #expect(try await verifier.user(token: try await old.sign(claims())) == "alice")
        // The old key is withdrawn: once the keys are older than the refresh interval, the
        // server fetches them again and the old key's tokens are refused.
        await endpoint.set(try jwks([new]))
        clock.advance(3601)
        await expectRefused(verifier, try await old.sign(claims(exp: 7200)), naming: ["\"key-a\"", "not in the server's JWKS"])
        #expect(await endpoint.fetches == 3)
        #expect(try await verifier.user(token: try await new.sign(claims(exp: 7200))) == "alice")
    }

    @Test("osd-server token mints tokens with sub, exp and iat that the server accepts")
    func minted() async throws {
        let verifier = try await verifier(AuthConfiguration(hmacSecret: Self.secret))
        let token = try await verifier.mint(user: "alice", lifetime: 60)
        #expect(try await verifier.user(token: token) == "alice")
        let payload = try await JWTKeyCollection().add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256).verify(token, as: Claims.self)
        #expect(payload.iat?.value == now)
        clock.advance(60 + 61)
        await expectRefused(verifier, token, naming: ["expired"])
    }
}
