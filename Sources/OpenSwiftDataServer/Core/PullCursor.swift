import Crypto
import Foundation
import OpenSwiftDataSyncProtocol

/// What a pull cursor holds: the server epoch, the log position, the scopes the client is
/// caught up on at that position, and the progress of a snapshot of newly granted scopes.
struct PullCursor: Codable, Hashable, Sendable {
    /// A snapshot of scopes the client did not have: first keyset pages of the records table,
    /// then the log of those scopes from the head the snapshot began at.
    struct Snapshot: Codable, Hashable, Sendable {
        /// The scopes being downloaded, sorted.
        var scopes: [ScopeID]
        /// The last record sent, in keyset order.
        var after: SnapshotKey?
        /// The head when the snapshot began: the log of these scopes is followed from here.
        var from: ServerVersion
        /// The head the latest page was read at: the download is consistent once the log
        /// position reaches it.
        var through: ServerVersion
        /// Whether every record page was sent (the log tail follows).
        var pagesDone: Bool
        /// Records sent so far.
        var received: Int
        /// Records in the scopes when the snapshot began.
        var total: Int

        private enum CodingKeys: String, CodingKey {
            case scopes = "sc", after = "a", from = "f", through = "t", pagesDone = "d", received = "r", total = "n"
        }
    }

    /// The server epoch that issued it.
    var epoch: String
    /// The log position.
    var seq: ServerVersion
    /// Scopes caught up at `seq`, sorted.
    var scopes: [ScopeID]
    /// A snapshot in progress.
    var snapshot: Snapshot?
    /// The log mark of the change at `seq` when the cursor was issued (nil: none there, or a
    /// cursor from before marks): another mark there now means the database was restored
    /// from a copy that kept its epoch and its log was written again past the copy's head. A
    /// change found at the position of a cursor without a mark means the same (a cursor from
    /// before marks is so reset once).
    var mark: Int64?
    /// The server's clock when the cursor was issued (nil: a cursor from before it was kept): a
    /// push whose cursor was issued before the server last started is not decided (see
    /// `SyncService.push`).
    var issued: HLCTimestamp?

    private enum CodingKeys: String, CodingKey { case epoch = "e", seq = "s", scopes = "c", snapshot = "n", mark = "m", issued = "i" }
}

/// Signs and checks cursors with HMAC-SHA256, so a client can neither forge nor alter one.
struct CursorCodec: Sendable {
    let key: SymmetricKey

    init(key: Data) { self.key = SymmetricKey(data: key) }

    func encode(_ cursor: PullCursor) -> String {
        let json = (try? JSONEncoder.syncProtocol().encode(cursor)) ?? Data()
        let mac = HMAC<SHA256>.authenticationCode(for: json, using: key)
        return Self.base64URL(json) + "." + Self.base64URL(Data(mac))
    }

    func decode(_ token: String) throws -> PullCursor {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let json = Self.data(base64URL: parts[0]), let mac = Self.data(base64URL: parts[1]) else {
            throw SyncServiceError(400, .invalidCursor, "the cursor is not one this server handed out (malformed)")
        }
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: json, using: key) else {
            throw SyncServiceError(400, .invalidCursor, "the cursor is not one this server handed out (its signature does not match)")
        }
        do {
            return try JSONDecoder().decode(PullCursor.self, from: json)
        } catch {
            throw SyncServiceError(400, .invalidCursor, "the cursor is not one this server handed out (unreadable)")
        }
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=", with: "")
    }

    static func data(base64URL text: Substring) -> Data? {
        guard text.utf8.count < 1_000_000 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

extension PullCursor {
    /// Where a cursor of this database's epoch stands against its log, the one rule pulls
    /// (`PullPlanner.decide`) and pushes (`SyncService.push`) judge a cursor by.
    enum Standing: Equatable {
        /// At or above the horizon, of this history: it can be continued.
        case current
        /// Below the horizon (or its snapshot began there): compacted away.
        case compacted
        /// Of another history of the same epoch (a restore from a copy that kept it): past
        /// the head, or another change (or a change where there was none) at its position.
        case otherHistory
    }

    /// How this cursor stands against a log whose first kept entry is `horizon`, last is
    /// `head`, with `marks` (the log marks read at the cursor's position).
    func standing(head: ServerVersion, horizon: ServerVersion, marks: [ServerVersion: Int64]) -> Standing {
        if seq < horizon || (snapshot.map { $0.from < horizon } ?? false) { return .compacted }
        if seq > head || (snapshot.map { $0.through > head } ?? false) { return .otherHistory }
        // A cursor without a mark was issued where the log had no change (compacted up to its
        // position): in the same database none comes back there. Compaction keeps the change
        // at the horizon, so a cursor there is checked too.
        return marks[seq] != mark ? .otherHistory : .current
    }
}
