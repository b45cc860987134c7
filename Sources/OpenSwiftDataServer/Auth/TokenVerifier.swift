import Foundation
import JWTKit
import OpenSwiftDataSyncProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the keys that sign bearer tokens come from.
public struct AuthConfiguration: Sendable {
    /// A shared HS256 secret of at least 32 bytes (development, and `osd-server token`).
    public var hmacSecret: String?
    /// A JWKS document's JSON (production: the identity provider's public keys).
    public var jwksJSON: String?
    /// A JWKS document's URL, fetched when the server starts.
    public var jwksURL: URL?

    /// Makes a configuration; at least one source is needed to accept any token.
    public init(hmacSecret: String? = nil, jwksJSON: String? = nil, jwksURL: URL? = nil) {
        self.hmacSecret = hmacSecret
        self.jwksJSON = jwksJSON
        self.jwksURL = jwksURL
    }
}

/// The claims a sync token carries: `sub`, the user id, and `exp`, both required.
struct SyncTokenPayload: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim

    /// Expiry is checked by ``TokenVerifier`` against the injected clock.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Checks bearer tokens (and mints development ones).
public final class TokenVerifier: Sendable {
    private let keys: JWTKeyCollection
    private let clock: SyncClock
    /// Whether an HS256 secret is configured (so tokens can be minted).
    public let canMint: Bool

    /// Loads the keys of `configuration` (fetching the JWKS URL, if any).
    public init(configuration: AuthConfiguration, clock: @escaping SyncClock) async throws {
        let keys = JWTKeyCollection()
        if let secret = configuration.hmacSecret {
            guard secret.utf8.count >= 32 else {
                throw SyncServiceError(500, .internalError, "the HS256 secret must be at least 32 bytes (it is \(secret.utf8.count))")
            }
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        }
        if let json = configuration.jwksJSON {
            try await keys.add(jwksJSON: json)
        }
        if let url = configuration.jwksURL {
            let (data, _) = try await URLSession.shared.data(from: url)
            try await keys.add(jwksJSON: String(decoding: data, as: UTF8.self))
        }
        self.keys = keys
        self.clock = clock
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

    /// The user a token authenticates; throws a 401 ``SyncServiceError``.
    public func user(token: String) async throws -> String {
        let payload: SyncTokenPayload
        do {
            payload = try await keys.verify(token, as: SyncTokenPayload.self)
        } catch {
            throw SyncServiceError(401, .unauthorized, "the bearer token is malformed, forged, or lacks the sub and exp claims")
        }
        guard payload.exp.value > clock() else {
            throw SyncServiceError(401, .unauthorized, "the bearer token expired at \(payload.exp.value)")
        }
        guard !payload.sub.value.isEmpty, payload.sub.value.utf8.count <= 256 else {
            throw SyncServiceError(401, .unauthorized, "the bearer token's sub claim must be 1 to 256 bytes")
        }
        return payload.sub.value
    }

    /// Mints an HS256 token for `user`, valid for `lifetime` seconds (needs an HS256 secret).
    public func mint(user: String, lifetime: TimeInterval = 30 * 24 * 3600) async throws -> String {
        try await keys.sign(SyncTokenPayload(sub: SubjectClaim(value: user), exp: ExpirationClaim(value: clock().addingTimeInterval(lifetime))))
    }
}
