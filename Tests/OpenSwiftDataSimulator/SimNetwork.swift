import Foundation
import GRDB
import NIOCore
import OpenSwiftDataMerge
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol

/// What the network does to one request, drawn from the seed.
enum NetworkFate: String, CaseIterable, Sendable {
    case deliver, dropRequest, dropResponse, duplicate, delay
}

/// A request the network holds back: delivered to the server later (after newer requests,
/// which reorders them), its answer going nowhere.
enum HeldRequest {
    case push(user: String, PushRequest)
    case pull(user: String, PullRequest)
}

/// The simulated network between every client and the server. Each request's fate comes from
/// the simulation's one random generator; everything runs on the caller's task, one request at
/// a time, so a seed gives one order of events.
final class SimNetwork {
    let server: SimServer
    var rng: SyncRandom
    /// The chance (out of 1000) that a request meets a fault.
    var faultPerMille = 0
    /// Requests held back, delivered later in an order the seed picks.
    var held: [HeldRequest] = []
    var counts: SimCounts
    var trace: [String] = []
    /// Every change of a `SimRoster` the server applied, in the order it applied them (see
    /// ``deliver(user:_:)``).
    var rosterChanges: [SimRosterChange] = []
    /// The applications recorded, as `client#mutation#txn`.
    private var recorded: Set<String> = []
    /// What was recorded when the server's snapshot was taken (a restore goes back to it).
    private var atSnapshot: (changes: Int, recorded: Set<String>) = (0, [])

    init(server: SimServer, rng: SyncRandom, counts: SimCounts) {
        self.server = server
        self.rng = rng
        self.counts = counts
    }

    func fate() -> NetworkFate {
        guard faultPerMille > 0, Int(rng.next() % 1000) < faultPerMille else { return .deliver }
        let faults: [NetworkFate] = [.dropRequest, .dropResponse, .duplicate, .delay]
        return faults[Int(rng.next() % UInt64(faults.count))]
    }

    static func map(_ error: any Error) -> any Error {
        if let error = error as? SyncServiceError { return SyncTransportError.refused(status: error.statusCode, error: error.error) }
        return error
    }

    /// Delivers a push to the server, and records the changes of rosters each of its mutations
    /// made if the server applied it: read back from the server's change log (the version of
    /// the roster's entry, the mutation's transaction for the order).
    func deliver(user: String, _ request: PushRequest) async throws -> PushResponse {
        defer { recordRosterChanges(request) }
        return try await server.service.push(user: user, request: request)
    }

    private func recordRosterChanges(_ request: PushRequest) {
        for mutation in request.mutations where mutation.changes.contains(where: { $0.entity == "SimRoster" }) {
            let rows =
                (try? server.read { db in
                    try Row.fetchAll(
                        db, sql: "SELECT seq, txn, entity, record_id FROM osd_changes WHERE client_id = ? AND mutation_id = ? ORDER BY seq",
                        arguments: [request.clientID, mutation.id])
                }) ?? []
            guard let txn: Int64 = rows.last?["txn"] else { continue }
            let key = "\(request.clientID)#\(mutation.id)#\(txn)"
            guard recorded.insert(key).inserted else { continue }
            for change in mutation.changes where change.entity == "SimRoster" {
                let version =
                    rows.last { ($0["entity"] as String?) == "SimRoster" && ($0["record_id"] as String?) == change.recordID }?["seq"] as Int64?
                var adds: [String] = []
                var removes: [String] = []
                switch change.op {
                case .insert:
                    if case let .json(text)? = change.fields["members"] { adds = SetElements.split(text) ?? [] }
                case .update:
                    if case let .set(setChange)? = change.merge["members"] {
                        adds = setChange.add
                        removes = setChange.remove
                    }
                case .delete:
                    break
                }
                rosterChanges.append(
                    SimRosterChange(
                        roster: change.recordID, client: request.clientID, mutation: mutation.id, txn: txn, version: version ?? txn, op: change.op,
                        adds: adds, removes: removes, seen: change.baseVersion, predecessors: request.predecessors ?? [:]))
            }
        }
    }

    /// The server's snapshot was taken: a restore goes back to what was recorded now.
    func snapshotTaken() { atSnapshot = (rosterChanges.count, recorded) }

    /// The server was restored from its snapshot: the applications since are lost.
    func snapshotRestored() {
        rosterChanges.removeLast(rosterChanges.count - min(atSnapshot.changes, rosterChanges.count))
        recorded = atSnapshot.recorded
    }

    /// Delivers one held request, chosen by the seed (its answer is lost: the client gave up on it).
    func deliverHeld() async {
        guard !held.isEmpty else { return }
        let index = Int(rng.next() % UInt64(held.count))
        let request = held.remove(at: index)
        counts.add("fault.reordered")
        switch request {
        case let .push(user, push):
            trace.append("  late push \(push.mutations.first?.id ?? 0)…\(push.mutations.last?.id ?? 0)")
            _ = try? await deliver(user: user, push)
        case let .pull(user, pull):
            trace.append("  late pull")
            _ = try? await server.service.pull(user: user, request: pull)
        }
    }
}

/// Thrown to a client whose process the simulator "killed": the engine's requests fail from
/// then on, and the simulator throws the engine and its container away.
struct SimCrash: Error {}

/// One client incarnation's transport: every request goes through the simulated network.
/// A crashed incarnation's transport fails everything.
///
/// `@unchecked Sendable`: the simulator awaits each engine call before making the next, so
/// this object and the network it points to are only ever used by one task at a time (the
/// engine calls the transport only from inside `syncNow()`, which the simulator awaits).
final class SimTransport: SyncTransport, @unchecked Sendable {
    let network: SimNetwork
    let user: String
    let name: String
    /// Cut off from the server (a partition).
    var partitioned = false
    /// The process is dead: nothing goes out.
    var dead = false
    /// A kill scheduled for the next push (after the server may have processed it).
    var crashOnNextPush = false

    init(network: SimNetwork, user: String, name: String) {
        self.network = network
        self.user = user
        self.name = name
    }

    func push(_ request: PushRequest) async throws -> PushResponse {
        guard !dead else { throw SimCrash() }
        guard !partitioned else {
            network.counts.add("fault.partitionedRequest")
            throw SyncTransportError.unreachable("partitioned")
        }
        if crashOnNextPush {
            crashOnNextPush = false
            dead = true
            network.counts.add("fault.crashMidPush")
            // Half the time the server got the batch before the process died.
            if network.rng.next() % 2 == 0 { _ = try? await network.deliver(user: user, request) }
            network.trace.append("  \(name) killed mid-push \(request.mutations.first?.id ?? 0)…\(request.mutations.last?.id ?? 0)")
            throw SimCrash()
        }
        let fate = network.fate()
        if fate != .deliver { network.counts.add("fault.push.\(fate.rawValue)") }
        switch fate {
        case .dropRequest:
            throw SyncTransportError.unreachable("request lost")
        case .delay:
            network.held.append(.push(user: user, request))
            throw SyncTransportError.unreachable("timed out")
        case .dropResponse:
            _ = try? await network.deliver(user: user, request)
            throw SyncTransportError.unreachable("answer lost")
        case .duplicate:
            _ = try? await network.deliver(user: user, request)
            fallthrough
        case .deliver:
            do { return try await network.deliver(user: user, request) } catch { throw SimNetwork.map(error) }
        }
    }

    func pull(_ request: PullRequest) async throws -> PullResponse {
        guard !dead else { throw SimCrash() }
        guard !partitioned else {
            network.counts.add("fault.partitionedRequest")
            throw SyncTransportError.unreachable("partitioned")
        }
        let fate = network.fate()
        if fate != .deliver { network.counts.add("fault.pull.\(fate.rawValue)") }
        switch fate {
        case .dropRequest:
            throw SyncTransportError.unreachable("request lost")
        case .delay:
            network.held.append(.pull(user: user, request))
            throw SyncTransportError.unreachable("timed out")
        case .dropResponse:
            _ = try? await network.server.service.pull(user: user, request: request)
            throw SyncTransportError.unreachable("answer lost")
        case .duplicate:
            _ = try? await network.server.service.pull(user: user, request: request)
            fallthrough
        case .deliver:
            do { return try await network.server.service.pull(user: user, request: request) } catch { throw SimNetwork.map(error) }
        }
    }

    /// Membership calls reach the server's core without a drawn fate: the simulator changes
    /// grants itself, and drawing none keeps every seed's schedule.
    func members(of scope: ScopeID) async throws -> ScopeMembersResponse {
        try checkReachable()
        do { return try await network.server.service.members(user: user, scope: scope) } catch { throw SimNetwork.map(error) }
    }

    /// Grants through the server's core (see ``members(of:)``).
    func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse {
        try checkReachable()
        do { return try await network.server.service.grant(user: user, scope: scope, request: request) } catch { throw SimNetwork.map(error) }
    }

    /// Revokes through the server's core (see ``members(of:)``).
    func revoke(_ member: String, in scope: ScopeID) async throws -> ScopeMembersResponse {
        try checkReachable()
        do { return try await network.server.service.revoke(user: user, scope: scope, member: member) } catch { throw SimNetwork.map(error) }
    }

    // MARK: Blobs

    /// Asks about an upload through the server's core, with a drawn fate (a lost request or
    /// answer).
    func blobUploadState(_ blob: BlobReference) async throws -> BlobUploadState {
        try checkReachable()
        let fate = network.fate()
        if fate != .deliver { network.counts.add("fault.blob.\(fate.rawValue)") }
        if fate == .dropRequest || fate == .delay { throw SyncTransportError.unreachable("request lost") }
        let state: BlobUploadState
        do { state = try await network.server.service.blobUpload(user: user, reference: blob) } catch { throw SimNetwork.map(error) }
        if fate == .dropResponse { throw SyncTransportError.unreachable("answer lost") }
        return state
    }

    /// Sends the file's bytes from `offset` through the server's core. A drawn fault cuts the
    /// connection after a part of them (the server keeps what arrived); now and then the process
    /// dies there.
    func uploadBlob(
        _ blob: BlobReference, from path: String, offset: Int64, progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> BlobUploadState {
        try checkReachable()
        guard let handle = FileHandle(forReadingAtPath: path) else { throw SyncTransportError.malformedResponse("cannot read \(path)") }
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let bytes = try handle.readToEnd() ?? Data()
        let fate = network.fate()
        let dies = network.faultPerMille > 0 && network.rng.next() % 8 == 0
        var sent = bytes
        if fate != .deliver || dies {
            network.counts.add(dies ? "fault.crashMidUpload" : "fault.upload.\(fate.rawValue)")
            sent = bytes.prefix(Int(network.rng.next() % UInt64(max(1, bytes.count))))
        }
        let parts = stride(from: 0, to: sent.count, by: 65_536).map {
            ByteBuffer(bytes: sent[sent.startIndex + $0..<sent.startIndex + min(sent.count, $0 + 65_536)])
        }
        let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            for part in parts { continuation.yield(part) }
            continuation.finish()
        }
        let state: BlobUploadState
        do { state = try await network.server.service.appendBlob(user: user, reference: blob, offset: offset, body: body) } catch {
            throw SimNetwork.map(error)
        }
        if dies {
            dead = true
            network.trace.append("  \(name) killed mid-upload of \(blob.digest.prefix(8)) at \(offset + Int64(sent.count))")
            throw SimCrash()
        }
        guard sent.count == bytes.count else { throw SyncTransportError.unreachable("connection dropped mid-upload") }
        progress(state.received)
        return state
    }

    /// Reads a blob through the server's core into the file, continuing what it holds. A drawn
    /// fault cuts the connection after a part of the bytes.
    func downloadBlob(_ blob: BlobReference, to path: String, progress: @escaping @Sendable (Int64) -> Void) async throws {
        try checkReachable()
        let size: Int64
        do { size = try await network.server.service.readableBlob(user: user, digest: blob.digest) } catch { throw SimNetwork.map(error) }
        guard let storage = network.server.service.blobs else { throw SyncTransportError.unreachable("the server keeps no blobs") }
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw SyncTransportError.malformedResponse("cannot write \(path)") }
        defer { try? handle.close() }
        var held = Int64(try handle.seekToEnd())
        if held >= size {
            try handle.truncate(atOffset: 0)
            held = 0
        }
        let fate = network.fate()
        var end = size
        if fate != .deliver {
            network.counts.add("fault.download.\(fate.rawValue)")
            end = held + Int64(network.rng.next() % UInt64(max(1, size - held)))
        }
        var bytes = Data()
        do {
            try await storage.read(blob.digest, range: held..<end) { chunk in bytes.append(contentsOf: chunk.readableBytesView) }
        } catch {
            throw SyncTransportError.unreachable("read failed: \(error)")
        }
        try handle.write(contentsOf: bytes)
        guard end == size else { throw SyncTransportError.unreachable("connection dropped mid-download") }
        progress(size)
    }

    /// Throws for a dead process or a partitioned device.
    private func checkReachable() throws {
        guard !dead else { throw SimCrash() }
        guard !partitioned else { throw SyncTransportError.unreachable("partitioned") }
    }

    /// The simulator models the live channel itself (a client with a live channel up is
    /// prompted to sync after others push); the engine's own live task is never started.
    func live(clientID: ClientID) -> AsyncThrowingStream<LiveMessage, any Error> {
        AsyncThrowingStream { $0.finish(throwing: SyncTransportError.unreachable("no live channel in the simulator")) }
    }
}

/// How often each fault and workload operation happened.
final class SimCounts {
    private(set) var values: [String: Int] = [:]

    func add(_ key: String, _ amount: Int = 1) { values[key, default: 0] += amount }

    func merge(_ other: SimCounts) {
        for (key, value) in other.values { values[key, default: 0] += value }
    }
}

/// One change of a roster the server applied.
struct SimRosterChange {
    var roster: String
    var client: String
    /// The id of the client's mutation.
    var mutation: Int64
    /// The applying mutation's transaction (the order the server applied mutations in).
    var txn: Int64
    /// The version of the roster's log entry (the add's version).
    var version: Int64
    var op: RecordOperation
    var adds: [String]
    var removes: [String]
    /// The version the change was based on.
    var seen: Int64?
    /// The client's earlier ids, with the last mutation processed under each.
    var predecessors: [String: Int64]
}

/// The reference model of a roster: an observed-remove set that keeps every add as a tag
/// (client, version, place), a remove dropping the tags its client had observed (at or below
/// the version it was based on, its own, or those of its earlier client ids' processed
/// mutations); elements ordered by their first live tag.
struct SimRosterModel {
    private var tags: [String: [(client: String, mutation: Int64, version: Int64, index: Int)]] = [:]

    mutating func apply(_ change: SimRosterChange) {
        for element in change.removes {
            tags[element]?.removeAll { tag in
                tag.client == change.client || tag.version <= (change.seen ?? Int64.min)
                    || change.predecessors[tag.client].map { tag.mutation <= $0 } == true
            }
            if tags[element]?.isEmpty == true { tags[element] = nil }
        }
        var seen = Set<String>()
        for element in change.adds where seen.insert(element).inserted {
            // One tag per client and element: a later add by the same client replaces it.
            tags[element, default: []].removeAll { $0.client == change.client }
            tags[element, default: []].append((change.client, change.mutation, change.version, seen.count - 1))
        }
    }

    var elements: [String] {
        var firsts: [(element: String, version: Int64, index: Int)] = []
        for (element, tags) in self.tags {
            guard let first = tags.min(by: { ($0.version, $0.index) < ($1.version, $1.index) }) else { continue }
            firsts.append((element, first.version, first.index))
        }
        firsts.sort { lhs, rhs in
            if (lhs.version, lhs.index) != (rhs.version, rhs.index) { return (lhs.version, lhs.index) < (rhs.version, rhs.index) }
            return lhs.element.utf8.lexicographicallyPrecedes(rhs.element.utf8)
        }
        return firsts.map(\.element)
    }
}
