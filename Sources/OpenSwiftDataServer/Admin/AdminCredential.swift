import Crypto
import Foundation

/// The admin console's secret, kept only as its SHA-256 digest and compared in constant time.
///
/// A request presents it as `Authorization: Bearer <token>`, or as the password of
/// `Authorization: Basic` (any user name), which is what a browser sends after its login
/// prompt. It is not a user token: the sync routes never accept it, and the admin routes accept
/// nothing else.
package struct AdminCredential: Sendable {
    private let digest: [UInt8]

    /// The credential of a token, or nil when there is none (an empty token is none).
    package init?(token: String?) {
        guard let token, !token.isEmpty else { return nil }
        digest = Array(SHA256.hash(data: Data(token.utf8)))
    }

    /// Whether an `Authorization` header presents the token.
    package func accepts(authorization: String?) -> Bool {
        guard let presented = Self.secret(in: authorization) else { return false }
        return Self.equalInConstantTime(Array(SHA256.hash(data: Data(presented.utf8))), digest)
    }

    /// The secret an `Authorization` header carries: a bearer token, or a Basic password.
    static func secret(in authorization: String?) -> String? {
        guard let authorization else { return nil }
        let parts = authorization.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let value = parts[1].trimmingCharacters(in: .whitespaces)
        switch parts[0].lowercased() {
        case "bearer":
            return value
        case "basic":
            guard let decoded = Data(base64Encoded: value), let text = String(data: decoded, encoding: .utf8),
                let colon = text.firstIndex(of: ":")
            else { return nil }
            return String(text[text.index(after: colon)...])
        default:
            return nil
        }
    }

    /// Whether two digests are equal, reading every byte whatever differs (both are SHA-256
    /// digests, so their lengths say nothing about the secret).
    static func equalInConstantTime(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
