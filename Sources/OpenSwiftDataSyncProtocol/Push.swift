import Foundation

/// `POST /v1/push`: a batch of one client's mutations, in order.
///
/// The ids continue the client's sequence: the first is one more than the last id the server
/// processed for the client (or at most that, for a batch resent after a lost answer: ids the
/// server already processed are acknowledged again without being applied again). A gap is
/// refused with ``SyncErrorCode/mutationGap``.
public struct PushRequest: Hashable, Codable, Sendable {
    /// The protocol version the client speaks.
    public var protocolVersion: ProtocolVersion
    /// The client's id; it belongs to the user who first pushed with it.
    public var clientID: ClientID
    /// The mutations, ids ascending by one.
    public var mutations: [Mutation]
    /// The client's schema, so the server knows the kinds of its fields (optional: a server
    /// that has it from an earlier request may be sent only ``SchemaDescriptor/hash``).
    public var schema: SchemaDescriptor?
    /// The client's pull cursor when it sent the push (optional: a client that never pulled
    /// has none). It names the epoch of the history the client last saw: a push made against
    /// another epoch (sent before a server restore, delivered after it by a slow network or a
    /// proxy's retry) is refused with ``SyncErrorCode/staleEpoch``, so the restored database
    /// never decides a mutation whose answer the client may already hold from the lost
    /// history. Not part of a mutation's hash.
    public var cursor: String?
    /// The client ids this installation pushed under before it took ``clientID`` (after a
    /// ``SyncErrorCode/clientForked`` answer), each with the last mutation id the server had
    /// processed under it (the answer's `lastMutationID`). The adds those mutations made to
    /// merged sets count as the installation's own (it made them, unless another installation
    /// kept pushing under the old id), so its removes drop them whatever version they are based
    /// on, as they drop the current id's own adds (optional: absent for an installation that
    /// never changed its id).
    public var predecessors: [ClientID: MutationID]?

    /// Makes a push request.
    public init(
        protocolVersion: ProtocolVersion = .plainFields, clientID: ClientID, mutations: [Mutation], schema: SchemaDescriptor? = nil,
        cursor: String? = nil, predecessors: [ClientID: MutationID]? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.clientID = clientID
        self.mutations = mutations
        self.schema = schema
        self.cursor = cursor
        self.predecessors = predecessors
    }
}

/// What the server decided for one mutation.
public enum MutationStatus: String, Codable, Sendable {
    /// Applied: its changes are in the server's state and log.
    case applied
    /// Processed and refused: nothing of it was applied. Its id is used up (the client does
    /// not resend it), so the queue behind it keeps flowing.
    case rejected
}

/// Why the server refused a mutation. A refusal is final: retrying the same mutation gives the
/// same answer.
public enum RejectionReason: String, Codable, Sendable, CaseIterable {
    /// A field's value has another kind than the one the record (or the schema) holds.
    case wrongValueType
    /// The caller may not write the scope the record is in, or the one it names.
    case scopeNotGranted
    /// An insert names a record id that exists in a scope the caller may not see.
    case recordIDTaken
    /// Under `rejectStale`, the record changed through another client after the base version.
    case stale
    /// An update of a record deleted after the version the client based it on, or a
    /// reference set to a deleted record whose delete rule is `cascade`.
    case recordDeleted
    /// An update or delete of a record the server never had.
    case recordNotFound
    /// The record breaks a rule of the schema (a required field missing, an unknown field, a
    /// delete refused by a `deny` reference).
    case validation
    /// The server's conflict resolver refused it.
    case resolverRefused
    /// The caller was granted the scope the record is in (or the one it names) as a reader: it
    /// reads the scope and may not write into it; the message names the scope. Sent to clients
    /// of protocol version 2 and later; a client of version 1 gets ``scopeNotGranted`` with the
    /// same message.
    case readOnly
}

/// The server's answer for one mutation of a push.
public struct MutationResult: Hashable, Codable, Sendable {
    /// The mutation's id.
    public var id: MutationID
    /// Applied or rejected.
    public var status: MutationStatus
    /// Why it was rejected.
    public var reason: RejectionReason?
    /// A human-readable explanation, naming the entity, record and field at fault.
    public var message: String?
    /// The server's current state of the records a rejected mutation touched (nil where the
    /// server has no such record), so the client can show both versions.
    public var serverRecords: [RecordState]?

    /// Makes a result.
    public init(id: MutationID, status: MutationStatus, reason: RejectionReason? = nil, message: String? = nil, serverRecords: [RecordState]? = nil) {
        self.id = id
        self.status = status
        self.reason = reason
        self.message = message
        self.serverRecords = serverRecords
    }
}

/// The answer to a push.
public struct PushResponse: Hashable, Codable, Sendable {
    /// The protocol version of the answer.
    public var protocolVersion: ProtocolVersion
    /// The last mutation id the server has processed for the client, after this push.
    public var lastMutationID: MutationID
    /// One result per mutation of the request that was processed now or before (replays are
    /// answered with the results the server recorded).
    public var results: [MutationResult]
    /// The server's clock after the push; the client's clock observes it.
    public var serverStamp: HLCTimestamp

    /// Makes a push response.
    public init(protocolVersion: ProtocolVersion = .plainFields, lastMutationID: MutationID, results: [MutationResult], serverStamp: HLCTimestamp) {
        self.protocolVersion = protocolVersion
        self.lastMutationID = lastMutationID
        self.results = results
        self.serverStamp = serverStamp
    }
}
