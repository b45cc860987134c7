import Foundation
import JWTKit
import Logging
import OpenSwiftDataSyncProtocol

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the keys that sign bearer tokens come from, and which claims a token must carry.
public struct AuthConfiguration: Sendable {
    /// A shared HS256 secret of at least 32 bytes (development, and `osd-server token`). Only
    /// tokens whose header says `HS256` are checked against it.
    public var hmacSecret: String?
    /// A JWKS document's JSON (production: the identity provider's public keys). Only tokens
    /// whose header says RS256/384/512, PS256/384/512, ES256/384/512 or EdDSA are checked
    /// against it.
    public var jwksJSON: String?
    /// A JWKS document's URL, fetched when the server starts, again when a token names a key id
    /// the server does not know (key rotation), and when the keys are older than
    /// ``jwksRefreshInterval``.
    public var jwksURL: URL?
    /// Seconds of clock difference tolerated on `exp`, `nbf` and `iat`.
    public var clockSkew: TimeInterval
    /// When set, a token's `iss` claim must be exactly this.
    public var issuer: String?
    /// When set, a token's `aud` claim (a string or an array) must include this.
    public var audience: String?
    /// Seconds after which the keys of ``jwksURL`` are fetched again before the next check.
    public var jwksRefreshInterval: TimeInterval
    /// Fewest seconds between two fetches of ``jwksURL`` prompted by unknown key ids, so that
    /// tokens with made-up key ids cannot make the server hammer the identity provider.
    public var jwksMinimumRefetchInterval: TimeInterval
    /// Seconds a fetch of ``jwksURL`` may wait for the identity provider's next bytes before it
    /// fails (at start, the server does not start; later, the keys fetched before stay in use).
    public var jwksFetchTimeout: TimeInterval

    /// Makes a configuration; at least one key source is needed to accept any token.
    public init(
        hmacSecret: String? = nil, jwksJSON: String? = nil, jwksURL: URL? = nil, clockSkew: TimeInterval = 60, issuer: String? = nil,
        audience: String? = nil,
        jwksRefreshInterval: TimeInterval = 3600, jwksMinimumRefetchInterval: TimeInterval = 10, jwksFetchTimeout: TimeInterval = 5
    ) {
        self.hmacSecret = hmacSecret
        self.jwksJSON = jwksJSON
        self.jwksURL = jwksURL
        self.clockSkew = clockSkew
        self.issuer = issuer
        self.audience = audience
        self.jwksRefreshInterval = jwksRefreshInterval
        self.jwksMinimumRefetchInterval = jwksMinimumRefetchInterval
        self.jwksFetchTimeout = jwksFetchTimeout
    }
}

/// The claims a sync token may carry. Each is optional here so that a missing one is named in
/// the refusal; ``TokenVerifier`` requires `sub` and `exp`.
struct SyncTokenPayload: JWTPayload {
    var sub: SubjectClaim?
    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    var iat: IssuedAtClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?

    /// The claims are checked by ``TokenVerifier`` against the injected clock.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// The asymmetric algorithms a JWKS key may verify.
let asymmetricAlgorithms: [String] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

/// The keys of a JWKS, one key collection per algorithm, so that a token is verified only by
/// a key of the algorithm its header names.
struct JWKSKeys: Sendable {
    var byAlgorithm: [String: (keys: JWTKeyCollection, kids: Set<String>)] = [:]

    /// Reads JWKS documents; keys of other uses or unknown types are skipped.
    static func load(_ documents: [String]) async throws -> JWKSKeys {
        var keys: [Any] = []
        for json in documents {
            guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], let documentKeys = object["keys"] as? [Any]
            else {
                throw SyncServiceError(500, .internalError, "the JWKS is not a JSON object with a keys array")
            }
            keys += documentKeys
        }
        var result = JWKSKeys()
        for key in keys {
            guard let data = try? JSONSerialization.data(withJSONObject: key), let jwk = try? JWK(json: String(decoding: data, as: UTF8.self)),
                let kid = jwk.keyIdentifier
            else { continue }
            if let use = (key as? [String: Any])?["use"] as? String, use != "sig" { continue }
            let algorithms: [String]
            if let declared = jwk.algorithm {
                algorithms = [declared.rawValue]
            } else if jwk.keyType == .rsa {
                algorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
            } else if jwk.keyType == .ecdsa {
                switch jwk.curve?.rawValue {
                case "P-256": algorithms = ["ES256"]
                case "P-384": algorithms = ["ES384"]
                case "P-521": algorithms = ["ES512"]
                default: algorithms = []
                }
            } else {
                algorithms = ["EdDSA"]
            }
            for algorithm in algorithms where asymmetricAlgorithms.contains(algorithm) {
                guard let jwkAlgorithm = JWK.Algorithm(rawValue: algorithm) else { continue }
                var pinned = jwk
                pinned.algorithm = jwkAlgorithm
                let entry = result.byAlgorithm[algorithm] ?? (JWTKeyCollection(), [])
                // A key that cannot take this algorithm (a P-384 key declared ES256) is skipped.
                guard (try? await entry.keys.add(jwk: pinned)) != nil else { continue }
                result.byAlgorithm[algorithm] = (entry.keys, entry.kids.union([kid.string]))
            }
        }
        return result
    }
}

/// The JWKS keys in use, refetched from the identity provider when needed.
actor JWKSSource {
    private var keys: JWKSKeys
    private var fetched: Date
    private let fixed: String?
    private let url: URL?
    private let clock: @Sendable () -> Date
    private let refreshInterval: TimeInterval
    private let minimumRefetchInterval: TimeInterval
    private let fetchTimeout: TimeInterval
    private let logger = Logger(label: "osd-server.jwks")

    init(
        keys: JWKSKeys, fixed: String?, url: URL?, clock: @escaping @Sendable () -> Date, refreshInterval: TimeInterval,
        minimumRefetchInterval: TimeInterval, fetchTimeout: TimeInterval
    ) {
        self.keys = keys
        self.fixed = fixed
        self.url = url
        self.clock = clock
        self.fetched = clock()
        self.refreshInterval = refreshInterval
        self.minimumRefetchInterval = minimumRefetchInterval
        self.fetchTimeout = fetchTimeout
    }

    static func fetch(_ url: URL, timeout: TimeInterval) async throws -> String {
        var request = URLRequest(url: url)
        request.timeoutInterval = timeout
        let (data, response) = try await URLSession.shared.data(for: request)
        if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
            throw SyncServiceError(500, .internalError, "the JWKS URL answered \(http.statusCode)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The keys for `algorithm`; fetched again first when they are stale, or when `kid` is not
    /// among them (at most once per minimum interval).
    func keys(for algorithm: String, kid: String?) async -> (keys: JWTKeyCollection, kids: Set<String>)? {
        let age = clock().timeIntervalSince(fetched)
        let unknown = kid.map { !(keys.byAlgorithm[algorithm]?.kids.contains($0) ?? false) } ?? (keys.byAlgorithm[algorithm] == nil)
        if let url, age >= refreshInterval || (unknown && age >= minimumRefetchInterval) {
            fetched = clock()
            do {
                keys = try await JWKSKeys.load((fixed.map { [$0] } ?? []) + [try await Self.fetch(url, timeout: fetchTimeout)])
            } catch {
                logger.error("fetching the JWKS failed; the keys fetched before stay in use", metadata: ["url": "\(url)", "error": "\(error)"])
            }
        }
        return keys.byAlgorithm[algorithm]
    }
}

/// Checks bearer tokens (and mints development ones): the header's `alg` must match the key
/// that verifies it (HS256 only with the shared secret; RS, PS, ES and EdDSA only through the
/// JWKS; `none` never), the signature must verify, `sub` and `exp` must be there, `exp`, `nbf`
/// and `iat` must hold within the clock skew, and `iss` and `aud` must match when configured.
/// Each refusal is a 401 naming the check that failed, never the key.
public final class TokenVerifier: Sendable {
    private let hmacKeys: JWTKeyCollection?
    private let jwks: JWKSSource?
    private let clock: @Sendable () -> Date
    private let clockSkew: TimeInterval
    private let issuer: String?
    private let audience: String?
    /// Whether an HS256 secret is configured (so tokens can be minted).
    public let canMint: Bool

    /// Loads the keys of `configuration` (fetching the JWKS URL, if any).
    ///
    /// `now` is the time that token claims are checked against (and minted tokens stamped
    /// with); tests pass a clock of their own.
    public init(configuration: AuthConfiguration, now clock: @escaping @Sendable () -> Date = { Date() }) async throws {
        if let secret = configuration.hmacSecret {
            guard secret.utf8.count >= 32 else {
                throw SyncServiceError(500, .internalError, "the HS256 secret must be at least 32 bytes (it is \(secret.utf8.count))")
            }
            hmacKeys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        } else {
            hmacKeys = nil
        }
        if configuration.jwksJSON != nil || configuration.jwksURL != nil {
            var documents: [String] = configuration.jwksJSON.map { [$0] } ?? []
            if let url = configuration.jwksURL { documents.append(try await JWKSSource.fetch(url, timeout: configuration.jwksFetchTimeout)) }
            // A fixed document (no URL) is never refetched; with a URL, its keys join the fetched ones.
            jwks = JWKSSource(
                keys: try await JWKSKeys.load(documents), fixed: configuration.jwksJSON, url: configuration.jwksURL, clock: clock,
                refreshInterval: configuration.jwksRefreshInterval, minimumRefetchInterval: configuration.jwksMinimumRefetchInterval,
                fetchTimeout: configuration.jwksFetchTimeout)
        } else {
            jwks = nil
        }
        self.clock = clock
        self.clockSkew = max(0, configuration.clockSkew)
        self.issuer = configuration.issuer
        self.audience = configuration.audience
        self.canMint = configuration.hmacSecret != nil
    }

    /// The user a request's `Authorization` header authenticates; throws a 401
    /// ``SyncServiceError`` naming what is wrong.
    public func user(authorization header: String?) async throws -> String {
        guard let header, !header.isEmpty else {
            throw SyncServiceError(401, .unauthorized, "no bearer token: send Authorization: Bearer <JWT>")
        }
        guard header.lowercased().hasPrefix("bearer ") else {
            throw SyncServiceError(401, .unauthorized, "the Authorization header is not a bearer token")
        }
        return try await user(token: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces))
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private static func refused(_ message: String) -> SyncServiceError {
        SyncServiceError(401, .unauthorized, "the bearer token " + message)
    }

    /// The user a token authenticates; throws a 401 ``SyncServiceError`` naming the check that
    /// failed.
    public func user(token: String) async throws -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URLDecoded(parts[0]) else {
            throw Self.refused("is malformed: a JWT is three base64url parts separated by dots")
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData) else {
            throw Self.refused("is malformed: its header is not a JSON object with a string alg")
        }
        guard let algorithm = header.alg, !algorithm.isEmpty else {
            throw Self.refused("has no alg in its header")
        }
        let keys: JWTKeyCollection
        var iterate = false
        if algorithm.lowercased() == "none" {
            throw Self.refused("is unsigned (alg none), which is never accepted")
        } else if algorithm == "HS256" {
            guard let hmacKeys else {
                throw Self.refused(
                    "says alg HS256, which is accepted only with the server's shared secret, and this server has none (it verifies tokens through its JWKS)"
                )
            }
            keys = hmacKeys
        } else if asymmetricAlgorithms.contains(algorithm) {
            guard let jwks else {
                throw Self.refused(
                    "says alg \(algorithm), which is accepted only through a JWKS, and this server has none (it verifies HS256 tokens with its secret)"
                )
            }
            guard let entry = await jwks.keys(for: algorithm, kid: header.kid) else {
                throw Self.refused("says alg \(algorithm), and no key of the server's JWKS takes that algorithm")
            }
            if let kid = header.kid {
                guard entry.kids.contains(kid) else {
                    throw Self.refused("names key id \(Self.quoted(kid)) for alg \(algorithm), which is not in the server's JWKS")
                }
            } else {
                iterate = true
            }
            keys = entry.keys
        } else {
            throw Self.refused(
                "says alg \(Self.quoted(algorithm)), which is not accepted: HS256 with the shared secret, or RS256/384/512, PS256/384/512, ES256/384/512, EdDSA through the JWKS"
            )
        }
        let payload: SyncTokenPayload
        do {
            payload = try await keys.verify(token, as: SyncTokenPayload.self, iteratingKeys: iterate)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw Self.refused("has a signature that does not verify with the key its alg names")
        } catch let error as JWTError where error.errorType == .malformedToken {
            throw Self.refused("is malformed: its claims are not a JSON object of well-typed JWT claims")
        } catch {
            throw Self.refused("does not verify (a signature or key the \(algorithm) key cannot check)")
        }
        return try check(payload)
    }

    /// Checks the claims of a verified token.
    private func check(_ payload: SyncTokenPayload) throws -> String {
        let now = clock()
        guard let sub = payload.sub?.value else {
            throw Self.refused("has no sub claim (the user id)")
        }
        guard !sub.isEmpty, sub.utf8.count <= 256 else {
            throw Self.refused("has a sub claim that is not 1 to 256 bytes")
        }
        guard let exp = payload.exp?.value else {
            throw Self.refused("has no exp claim (an expiry is required)")
        }
        guard exp.addingTimeInterval(clockSkew) > now else {
            throw Self.refused("expired at \(Self.format(exp)) (exp; clock skew allowed: \(Int(clockSkew)) s)")
        }
        if let nbf = payload.nbf?.value, nbf.addingTimeInterval(-clockSkew) > now {
            throw Self.refused("is not valid before \(Self.format(nbf)) (nbf; clock skew allowed: \(Int(clockSkew)) s)")
        }
        if let iat = payload.iat?.value, iat.addingTimeInterval(-clockSkew) > now {
            throw Self.refused("was issued in the future, at \(Self.format(iat)) (iat; clock skew allowed: \(Int(clockSkew)) s)")
        }
        if let issuer {
            guard let iss = payload.iss?.value else {
                throw Self.refused("has no iss claim, and this server requires its issuer")
            }
            guard iss == issuer else {
                throw Self.refused("has an iss claim, \(Self.quoted(iss)), that is not the issuer this server accepts")
            }
        }
        if let audience {
            guard let aud = payload.aud?.value else {
                throw Self.refused("has no aud claim, and this server requires its audience")
            }
            guard aud.contains(audience) else {
                throw Self.refused("has an aud claim that does not include the audience this server accepts")
            }
        }
        return sub
    }

    private static func format(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// A claim value quoted for a message, cut short so that a refusal stays small.
    private static func quoted(_ text: String) -> String {
        "\"" + (text.count > 64 ? String(text.prefix(64)) + "…" : text) + "\""
    }

    private static func base64URLDecoded(_ part: Substring) -> Data? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)
    }

    /// Mints an HS256 token for `user`, valid for `lifetime` seconds from now (`iat` is now);
    /// needs an HS256 secret.
    public func mint(user: String, lifetime: TimeInterval = 30 * 24 * 3600) async throws -> String {
        guard let hmacKeys else {
            throw SyncServiceError(500, .internalError, "minting a token needs the HS256 secret")
        }
        let now = clock()
        return try await hmacKeys.sign(
            SyncTokenPayload(
                sub: SubjectClaim(value: user), exp: ExpirationClaim(value: now.addingTimeInterval(lifetime)), iat: IssuedAtClaim(value: now)))
    }
}
