import Crypto
import Foundation
import OpenSwiftDataSyncProtocol
import Synchronization

/// The sync server's semantics without any transport: push, pull and scope membership for an
/// authenticated user, over a ``SyncStorage`` and an injected time source. The HTTP routes, the
/// embedded library and the deterministic simulator all drive this type.
public final class SyncService: Sendable {
    /// The storage.
    public var storage: any SyncStorage { backend }
    /// The storage's operations.
    package let backend: any SyncStorageBackend
    /// The settings.
    public let configuration: SyncServiceConfiguration
    /// The server's epoch (a cursor from another one gets a reset): the storage's when the
    /// service opened, or the one the admin console's rotation gave it since.
    public var epoch: String { currentEpoch.withLock { $0.epoch } }
    /// The epoch, and whether a rotation is under way.
    let currentEpoch: Mutex<(epoch: String, rotating: Bool)>
    let now: @Sendable () -> Date
    private let cursors: CursorCodec
    let observer: SyncObserver
    /// The server's clock when this service started (see ``SyncStorageBackend/start(wallMilliseconds:)``).
    private let started: HLCTimestamp
    /// Where blobs' bytes are kept (nil: this server keeps no blobs).
    public let blobs: (any BlobStorage)?
    /// The blobs being stored or collected.
    let blobLocks = BlobLocks()

    /// Opens the service over a storage (reading its epoch and cursor key), and moves the
    /// server's clock past every stamp it handed out: a push made with a cursor issued before
    /// is refused with `409 staleEpoch` (see ``push(user:request:)``).
    ///
    /// - Parameters:
    ///   - storage: Where the server's state lives.
    ///   - configuration: Limits, retention and conflict policies.
    ///   - now: The time source of the core: every "now" the semantics need comes from it, so
    ///     that tests and simulations drive time.
    ///   - observer: Where the service reports commits and push counts.
    ///   - blobs: Where blobs' bytes are kept; nil: the storage's own place (files beside a
    ///     SQLite database), if it has one.
    public init(
        storage: any SyncStorage, configuration: SyncServiceConfiguration = SyncServiceConfiguration(),
        now: @escaping @Sendable () -> Date = { Date() }, observer: SyncObserver = SyncObserver(), blobs: (any BlobStorage)? = nil
    ) async throws {
        guard let backend = storage as? any SyncStorageBackend else {
            throw SyncServiceError(
                500, .internalError, "\(type(of: storage)) is not a storage of this package: use SQLiteSyncStorage or PostgresSyncStorage")
        }
        let metadata = try await backend.metadata()
        started = try await backend.start(wallMilliseconds: UInt64(max(0, now().syncMilliseconds)))
        self.backend = backend
        self.configuration = configuration
        self.now = now
        self.currentEpoch = Mutex((metadata.epoch, false))
        self.cursors = CursorCodec(key: metadata.cursorKey)
        self.observer = observer
        self.blobs = blobs ?? backend.defaultBlobStorage
    }

    private var nowMilliseconds: Int64 { now().syncMilliseconds }

    // MARK: Push

    /// Processes a batch of one client's mutations, in order, in one transaction: each
    /// mutation is applied whole or rejected whole (its id used up either way); ids already
    /// processed are answered with their recorded result. Throws ``SyncServiceError`` for a
    /// request error, in which case nothing is stored: among them `409 staleEpoch` for a push
    /// made against another history, or with a cursor issued before this service started (the
    /// client pulls, then pushes again).
    public func push(user: String, request: PushRequest) async throws -> PushResponse {
        try validate(request)
        // A push made against another epoch's history (sent before a restore, delivered after
        // it) is not decided here: the answer the client holds may come from the lost history,
        // and a second, different one would contradict it (seeds 153, 603, 1955). The client
        // pulls, learns of the restore, and resends what this database lacks.
        let cursor = try request.cursor.map { try cursors.decode($0) }
        if let cursor, cursor.epoch != epoch {
            throw SyncServiceError(
                409, .staleEpoch, "the push was made against another epoch of this server's database (restored since); pull, then push again")
        }
        // A push whose cursor was issued before this server started may have been sent to a
        // database that a restore has since replaced by an older copy of itself, one that kept
        // its epoch and whose log reaches the cursor: nothing in the request tells. Decided
        // here, it could contradict the answer the client holds from the history the restore
        // lost (seeds 5203, 7916, 8451: a push held by the network across a restore was
        // rejected after the client had been told it was applied, or applied after it was
        // told it was rejected). Every restore is followed by a start, so such a push is
        // refused; the client pulls (learning of the restore, if there was one) and pushes
        // again, at the cost of one refused push per client after each start.
        if let cursor, (cursor.issued ?? .zero) < started {
            throw SyncServiceError(
                409, .staleEpoch, "the push was made with a cursor issued before the server last started; pull, then push again")
        }
        var hashes: [MutationID: String] = [:]
        var keys: Set<RecordKey> = []
        var scopes: Set<ScopeID> = []
        var history: [RecordKey: ServerVersion] = [:]
        var writer = SyncJSONWriter(capacity: 1024)
        for mutation in request.mutations {
            // The hash of the mutation's protocol encoding (byte for byte JSONEncoder's).
            writer = SyncJSONWriter(capacity: writer.bytes.count)
            try writer.mutation(mutation)
            hashes[mutation.id] = Self.hex(SHA256.hash(data: writer.bytes))
            for change in mutation.changes {
                let key = RecordKey(entity: change.entity, recordID: change.recordID)
                keys.insert(key)
                scopes.insert(change.scope)
                let policy = configuration.policies[change.entity] ?? request.schema?.entity(named: change.entity)?.policy
                if change.baseVersion != nil || policy == .rejectStale {
                    let base = change.baseVersion ?? 0
                    history[key] = min(history[key] ?? base, base)
                }
            }
        }
        let evaluator = PushEvaluator(user: user, request: request, hashes: hashes, configuration: configuration, now: nowMilliseconds)
        let load = PushLoad(
            clientID: request.clientID, mutationIDs: request.mutations.map(\.id), keys: keys, scopes: scopes, historyAfter: history,
            deleteRules: DeleteRuleLoad(request), markAt: cursor?.seq)
        let plan = try await backend.push(load) { snapshot in
            // A restore from a copy that kept its epoch has no epoch fence: the cursor's
            // position tells the other history, by the rule a pull uses (`PullCursor.standing`):
            // past the head, or another change at its position (seed 2458: a push held past
            // such a restore applied what the client had been told was rejected).
            if let cursor, cursor.standing(head: snapshot.head, horizon: snapshot.horizon, marks: snapshot.marks) == .otherHistory {
                throw SyncServiceError(
                    409, .staleEpoch,
                    "the push was made against another history of this server's database (restored from a copy since); pull, then push again")
            }
            return try evaluator.evaluate(snapshot)
        }
        if plan.applied + plan.rejected > 0 {
            observer.pushed(PushSummary(applied: plan.applied, rejected: plan.rejected, conflicts: plan.conflicts))
        }
        if !plan.changes.isEmpty {
            observer.event(.changed(scopes: plan.changedScopes.sorted(), version: plan.head, readers: plan.readers))
        }
        if !plan.newScopes.isEmpty {
            observer.event(.grantsChanged(users: Set(plan.newScopes.map(\.owner))))
        }
        // The answer speaks the request's version (a version 1 client checks it).
        var response = plan.response
        response.protocolVersion = request.protocolVersion
        if request.protocolVersion < .blobs {
            // A reader of versions 1 to 3 cannot decode a blob: its fields read as nil there.
            for index in response.results.indices {
                response.results[index].serverRecords = response.results[index].serverRecords?.map { $0.withoutBlobs() }
            }
        }
        if request.protocolVersion < .fieldMerges {
            // Version 1 knows no `readOnly`: a reader's refused write is `scopeNotGranted` there
            // (its message still says the scope is read-only). Decided here rather than when
            // the mutation was, so that a replay is answered in the version of the replay.
            for index in response.results.indices where response.results[index].reason == .readOnly {
                response.results[index].reason = .scopeNotGranted
            }
        }
        return response
    }

    /// Lowercase hexadecimal digits of a digest (as `String(format: "%02x")` per byte wrote
    /// them, without formatting each byte through Foundation).
    package static func hex(_ digest: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for byte in digest {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// How many earlier client ids a push may name (``PushRequest/predecessors``): an
    /// installation keeps its latest ones.
    static let maximumPredecessors = 64

    private func validate(_ request: PushRequest) throws {
        guard ProtocolVersion.supported.contains(request.protocolVersion) else { throw SyncServiceError.unsupportedVersion(request.protocolVersion) }
        guard !request.clientID.isEmpty, request.clientID.utf8.count <= 256 else {
            throw SyncServiceError.malformed("clientID must be 1 to 256 bytes")
        }
        guard request.mutations.count <= configuration.maxMutationsPerPush else {
            throw SyncServiceError(
                413, .batchTooLarge, "the push holds \(request.mutations.count) mutations; the limit is \(configuration.maxMutationsPerPush)")
        }
        if let predecessors = request.predecessors {
            guard predecessors.count <= Self.maximumPredecessors else {
                throw SyncServiceError.malformed("predecessors names \(predecessors.count) client ids; at most \(Self.maximumPredecessors) are kept")
            }
            for (client, last) in predecessors.sorted(by: { $0.key < $1.key }) {
                guard !client.isEmpty, client.utf8.count <= 256, client != request.clientID, last >= 0 else {
                    throw SyncServiceError.malformed(
                        "predecessors: \(client.prefix(256).debugDescription) must be another client id of 1 to 256 bytes, with a last mutation id of at least 0"
                    )
                }
            }
        }
        let changes = request.mutations.reduce(0) { $0 + $1.changes.count }
        guard changes <= configuration.maxChangesPerPush else {
            throw SyncServiceError(413, .batchTooLarge, "the push holds \(changes) record changes; the limit is \(configuration.maxChangesPerPush)")
        }
        guard let first = request.mutations.first else { return }
        guard first.id >= 1 else { throw SyncServiceError.malformed("mutation ids start at 1, not \(first.id)") }
        for (offset, mutation) in request.mutations.enumerated() {
            guard mutation.id == first.id + Int64(offset) else {
                throw SyncServiceError.malformed("mutation ids must grow by exactly one: \(mutation.id) follows \(first.id + Int64(offset) - 1)")
            }
            for change in mutation.changes {
                guard change.scope.isWellFormed else {
                    throw SyncServiceError.malformed(
                        "mutation \(mutation.id): scope \(change.scope.rawValue.debugDescription) is not of the form kind:id")
                }
                guard !change.entity.isEmpty, !change.recordID.isEmpty, change.recordID.utf8.count <= 1024, change.entity.utf8.count <= 256 else {
                    throw SyncServiceError.malformed("mutation \(mutation.id): entity and recordID must be non-empty (at most 256 and 1024 bytes)")
                }
                if !change.merge.isEmpty, request.protocolVersion < .fieldMerges {
                    throw SyncServiceError.malformed(
                        "mutation \(mutation.id): merged fields (\(change.merge.keys.sorted().joined(separator: ", "))) need protocol version \(ProtocolVersion.fieldMerges.rawValue)"
                    )
                }
                if request.protocolVersion < .textMerges, let text = change.merge.first(where: { $0.value.kind == .text })?.key {
                    throw SyncServiceError.malformed(
                        "mutation \(mutation.id): merged text \(text.debugDescription) needs protocol version \(ProtocolVersion.textMerges.rawValue)")
                }
                if request.protocolVersion < .blobs, let blob = change.fields.first(where: { $0.value.kind == .blob })?.key {
                    throw SyncServiceError.malformed(
                        "mutation \(mutation.id): blob \(blob.debugDescription) needs protocol version \(ProtocolVersion.blobs.rawValue)")
                }
                if let both = change.merge.keys.first(where: { change.fields[$0] != nil }) {
                    throw SyncServiceError.malformed("mutation \(mutation.id): field \(both.debugDescription) is both written and merged")
                }
            }
        }
    }

    // MARK: Pull

    /// One page of changes after the request's cursor in the scopes the user may read:
    /// snapshots of scopes the cursor does not hold yet, then the log. Throws
    /// ``SyncServiceError`` for a forged cursor or another user's client id.
    public func pull(user: String, request: PullRequest) async throws -> PullResponse {
        guard ProtocolVersion.supported.contains(request.protocolVersion) else { throw SyncServiceError.unsupportedVersion(request.protocolVersion) }
        guard !request.clientID.isEmpty, request.clientID.utf8.count <= 256 else {
            throw SyncServiceError.malformed("clientID must be 1 to 256 bytes")
        }
        let epoch = self.epoch
        var cursor: PullCursor?
        var epochReset = false
        if let token = request.cursor {
            let decoded = try cursors.decode(token)
            if decoded.epoch == epoch { cursor = decoded } else { epochReset = true }
        }
        let limit = min(max(1, request.limit ?? configuration.defaultPullLimit), configuration.maxPullLimit)
        let planner = PullPlanner(user: user, clientID: request.clientID, epoch: epoch, cursor: cursor, epochReset: epochReset, limit: limit)
        let page = try await backend.pull(clientID: request.clientID, user: user, probe: cursor?.seq) { context in try planner.decide(context).read }
        let decision = try planner.decide(page.context)
        var (response, next) = planner.finish(decision, page: page)
        next.issued = page.context.clock
        response.cursor = cursors.encode(next)
        response.protocolVersion = request.protocolVersion
        if request.protocolVersion < .blobs {
            // A reader of versions 1 to 3 cannot decode a blob: its fields read as nil there.
            for index in response.changes.indices { response.changes[index].fields = response.changes[index].fields.withoutBlobs() }
        }
        // Texts' edits and states are for readers that merge them: a reader of version 1 or 2
        // gets the values alone.
        if request.protocolVersion < .textMerges, response.changes.contains(where: { $0.merge != nil || $0.textStates != nil }) {
            for index in response.changes.indices {
                response.changes[index].merge = nil
                response.changes[index].textStates = nil
            }
        } else if response.changes.contains(where: { $0.merge != nil }) {
            // A reader that merges texts applies an update's edits: the text's whole value,
            // which the log keeps for older readers, does not travel with them.
            for index in response.changes.indices {
                guard let merge = response.changes[index].merge else { continue }
                for (name, edit) in merge where edit.kind == .text { response.changes[index].fields[name] = nil }
            }
        }
        return response
    }

    // MARK: Scopes

    /// The scopes the user owns or was granted (their private scope always among them).
    public func scopes(user: String) async throws -> ScopeListResponse {
        var list = try await backend.scopes(of: user)
        let own = ScopeID.user(user)
        if !list.contains(where: { $0.scope == own }) { list.append(ScopeAccess(scope: own, role: .owner)) }
        return ScopeListResponse(scopes: list.sorted { $0.scope < $1.scope })
    }

    /// Who may read and write a scope: its owner, its writers and its readers; only they may
    /// ask.
    public func members(user: String, scope: ScopeID) async throws -> ScopeMembersResponse {
        guard scope.isWellFormed else { throw SyncServiceError.malformed("scope \(scope.rawValue.debugDescription) is not of the form kind:id") }
        let record = try await backend.scope(scope) ?? ScopeRecord.implicit(scope)
        guard let record, record.readers.contains(user) else { throw SyncServiceError.forbidden("scope \(scope) is not granted to you") }
        return record.response
    }

    /// The owner grants `request.user` the scope as `request.role` (claiming the scope for the
    /// caller if nobody has written into it); granting a member again sets their role.
    public func grant(user: String, scope: ScopeID, request: GrantRequest) async throws -> ScopeMembersResponse {
        guard ProtocolVersion.supported.contains(request.protocolVersion) else { throw SyncServiceError.unsupportedVersion(request.protocolVersion) }
        guard scope.isWellFormed else { throw SyncServiceError.malformed("scope \(scope.rawValue.debugDescription) is not of the form kind:id") }
        let member = request.user
        guard !member.isEmpty, member.utf8.count <= 256 else { throw SyncServiceError.malformed("user must be 1 to 256 bytes") }
        let record = try await backend.updateScope(scope) { current in
            var record: ScopeRecord
            if let current {
                record = current
            } else if let owner = scope.privateOwner {
                record = ScopeRecord(scope: scope, owner: owner)
            } else {
                record = ScopeRecord(scope: scope, owner: user)
            }
            guard record.owner == user else { throw SyncServiceError.forbidden("only the owner of scope \(scope) may grant it") }
            record.grant(member, role: request.role)
            return record
        }
        observer.event(.grantsChanged(users: [member]))
        return record.response
    }

    /// The owner revokes a user's grant: from the commit on, that user can neither read nor
    /// write the scope.
    public func revoke(user: String, scope: ScopeID, member: String) async throws -> ScopeMembersResponse {
        guard scope.isWellFormed else { throw SyncServiceError.malformed("scope \(scope.rawValue.debugDescription) is not of the form kind:id") }
        let record = try await backend.updateScope(scope) { current in
            guard var record = current ?? ScopeRecord.implicit(scope) else {
                throw SyncServiceError(404, .notFound, "scope \(scope) has no members")
            }
            guard record.owner == user else { throw SyncServiceError.forbidden("only the owner of scope \(scope) may revoke it") }
            record.members[member] = nil
            return record
        }
        observer.event(.grantsChanged(users: [member]))
        return record.response
    }

    // MARK: Maintenance

    /// Removes log entries and tombstones older than the retention window; cursors from before
    /// it get a `historyCompacted` reset. Recorded push results stay until their client
    /// acknowledges them, whatever their age. Blobs stored before the window that no live
    /// record names are deleted.
    @discardableResult
    public func compact() async throws -> CompactionResult {
        let cutoff = nowMilliseconds - Int64(configuration.retention * 1000)
        var result = try await backend.compact(before: cutoff)
        result.blobsRemoved = try await collectBlobs(before: cutoff)
        return result
    }
}
