import Foundation
import OpenSwiftDataSyncProtocol

/// The client ids this installation pushed under before its current one, each with the last
/// mutation id the server processed under it (``PushRequest/predecessors``).
///
/// A device that takes a new client id after a `clientForked` answer (restored from a backup,
/// or a copy of another installation) resends its unprocessed saves under the new id. A remove
/// from a merged set among them may undo an add this device made under the old id: the server
/// counts the adds of the old id's processed mutations as the device's own, so the remove
/// drops them as it would have under the old id. Without this, such an add outlived its
/// remove and the element came back.
struct SyncPredecessors: Hashable, Sendable {
    /// The state key they are stored under (`osd_sync_engine`).
    static let key = "predecessors"
    /// How many are kept: the latest ones (the server accepts as many).
    static let limit = 64

    /// Oldest first.
    private(set) var entries: [Entry]

    /// One earlier client id and the last mutation id processed under it.
    struct Entry: Hashable, Sendable, Codable {
        /// The earlier client id.
        var client: ClientID
        /// The last mutation id the server processed under it.
        var through: MutationID
    }

    /// None.
    init() { entries = [] }

    /// From their stored form (nothing stored, or a form this version cannot read: none).
    init(stored: String?) {
        entries = stored.flatMap { try? JSONDecoder().decode([Entry].self, from: Data($0.utf8)) } ?? []
    }

    /// Their stored form (nil when there are none).
    var stored: String? {
        guard !entries.isEmpty, let data = try? JSONEncoder().encode(entries) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// As a push names them (nil when there are none).
    var request: [ClientID: MutationID]? {
        entries.isEmpty ? nil : Dictionary(entries.map { ($0.client, $0.through) }, uniquingKeysWith: { $1 })
    }

    /// With `client`, processed through `through`, as the latest (keeping ``limit``).
    func adding(_ client: ClientID, through: MutationID) -> SyncPredecessors {
        var next = self
        next.entries.removeAll { $0.client == client }
        next.entries.append(Entry(client: client, through: through))
        if next.entries.count > Self.limit { next.entries.removeFirst(next.entries.count - Self.limit) }
        return next
    }
}
