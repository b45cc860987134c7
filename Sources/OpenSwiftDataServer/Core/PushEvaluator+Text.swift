import Foundation
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol
import Synchronization

// Texts that merge: a change's insertions and deletions (`FieldMerge.text`) are applied by
// identity to the field's document (`TextDocument`, kept in `StoredField.text`) inside the
// push, and the field's value is the document's text. A text without a state (written before
// the field merged, or inserted whole) is the document holding it as one run inserted by
// replica 0, which every replica can rebuild from the value alone.
extension PushEvaluator {
    /// The most scalars a merged text holds.
    static let maximumTextScalars = 1_000_000
    /// The most insertions and deletions one change of a text carries.
    static let maximumTextEdits = 100_000
    /// The most bytes a merged text's state takes, deleted scalars included.
    static let maximumTextStateBytes = 32 << 20

    /// The replica that stands for `client` when the server turns a whole write of a text into
    /// an operation (an older app, or an insert of a record that exists already): a hash of the
    /// client id, never 0 (the replica of a value without a state).
    static func textReplica(of client: ClientID) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in client.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash == 0 ? 1 : hash
    }

    /// A text field's document: its stored state (decoded once per push), or its value as
    /// replica 0's one run.
    func textDocument(_ field: StoredField?, of name: SyncName, key: RecordKey) throws -> TextDocument {
        if let state = field?.text {
            if let document = texts.take(key: key, name: name, state: state) { return document }
            do { return try TextDocument(encoded: state) } catch {
                throw Rejection(
                    reason: .validation, message: "\(key): the server's state of text \(name.debugDescription) does not read back: \(error)",
                    keys: [key]
                )
            }
        }
        var document = TextDocument()
        if case let .string(text)? = field?.value, !text.isEmpty { _ = document.insert(text, at: 0, replica: 0) }
        return document
    }

    /// A change's wire form as an operation of the merge core, checked: identities of the form
    /// `<16 hex digits>.<seq>`, non-empty insertions and deletions, within the limits.
    static func textOperation(_ change: TextChange, of name: SyncName, key: RecordKey) throws -> TextOperation {
        func refused(_ reason: String) -> Rejection {
            Rejection(reason: .validation, message: "\(key): a change of text \(name.debugDescription) \(reason)", keys: [key])
        }
        guard change.insertions.count + change.deletions.count <= maximumTextEdits else {
            throw refused("holds \(change.insertions.count + change.deletions.count) insertions and deletions, more than \(maximumTextEdits)")
        }
        for insertion in change.insertions where insertion.content.unicodeScalars.count > maximumTextScalars {
            throw refused("inserts \(insertion.content.unicodeScalars.count) scalars, more than \(maximumTextScalars)")
        }
        do { return try change.operation() } catch { throw refused(error.description) }
    }

    /// Applies a change to a text field: its insertions and deletions by identity. Returns the
    /// new value when the document changed.
    func applyText(
        _ change: TextChange, to fields: inout [SyncName: StoredField], name: SyncName, stamp: HLCTimestamp, key: RecordKey
    ) throws -> SyncValue? {
        let old = fields[name]
        var document = try textDocument(old, of: name, key: key)
        let operation = try Self.textOperation(change, of: name, key: key)
        do {
            try document.apply(operation)
        } catch let failure as TextDocument.Failure {
            let reason: String
            switch failure {
            case let .missingOrigin(id): reason = "is typed next to \(id), which the server's text does not hold (a change it depends on is missing)"
            case let .conflictingIdentity(id): reason = "inserts \(id) again with other content"
            case let .sequenceOverflow(id): reason = "runs past the last sequence number at \(id)"
            case let .sequenceGap(id): reason = "starts at \(id), too far past its replica's last sequence number"
            case let .malformedState(message): reason = "does not apply: \(message)"
            }
            throw Rejection(reason: .validation, message: "\(key): a change of text \(name.debugDescription) \(reason)", keys: [key])
        }
        guard document.scalarCount <= Self.maximumTextScalars else {
            throw Rejection(
                reason: .validation,
                message: "\(key): text \(name.debugDescription) would hold \(document.scalarCount) scalars, more than \(Self.maximumTextScalars)",
                keys: [key])
        }
        let value = SyncValue.string(document.text)
        let state = Data(document.encoded())
        guard state.count <= Self.maximumTextStateBytes else {
            throw Rejection(
                reason: .validation,
                message:
                    "\(key): text \(name.debugDescription) would take \(state.count) bytes with its history, more than \(Self.maximumTextStateBytes)",
                keys: [key])
        }
        texts.keep(document, key: key, name: name, state: state)
        if old?.text == state, old?.merge == .text { return nil }
        fields[name] = StoredField(
            value: value, kind: .string, stamp: max(stamp, old?.stamp ?? stamp), client: request.clientID, merge: .text, text: state)
        return value
    }

    /// Refuses a change's edits of a text that has no state yet (its value as replica 0's run)
    /// when another client changed the record since the version the change is based on (a
    /// change without a base version names the current text's identities): that
    /// client may have written the text whole (an older app, before any client merged it), and
    /// replica 0's identities would then name other characters than the ones the editing device
    /// saw. The device pulls and edits again; once a text has a state, whole writes become edits
    /// and this cannot happen.
    func checkStatelessTexts(_ change: RecordChange, existing: StoredRecord, snapshot: PushSnapshot) throws {
        for (name, merge) in change.merge.sorted(by: { $0.key < $1.key }) {
            guard case .text = merge, let field = existing.fields[name], field.text == nil, case let .string(value) = field.value, !value.isEmpty
            else { continue }
            // Without a base version the change names the current text's identities.
            guard let base = change.baseVersion, isStale(existing, change: change, snapshot: snapshot) else { continue }
            throw Rejection(
                reason: .validation,
                message:
                    "\(existing.key): text \(name.debugDescription) has no merge state yet and the record changed since version \(base): this change's identities may name other characters; pull and edit again",
                keys: [existing.key])
        }
    }

    /// A text written whole, as a change: an insert of a record that exists already, by a
    /// client that declares the text, inserts its text as a whole (two devices created it: both
    /// texts are kept); any other whole write (an older app, or a save queued before the update
    /// declared the text) inserts and deletes what it changed from the current text, unless
    /// another client changed the record since the version the write is based on (it would
    /// delete text it has not seen: refused, naming the field).
    func textContribution(
        ofPlain value: SyncValue, name: SyncName, declared: MergeKind?, change: RecordChange, existing: StoredRecord, snapshot: PushSnapshot
    ) throws -> FieldMerge {
        let key = existing.key
        guard case let .string(written) = value else {
            throw Rejection(
                reason: .wrongValueType, message: "\(key): text \(name.debugDescription) holds a string, not \(value.kind?.rawValue ?? "null")",
                keys: [key])
        }
        var document = try textDocument(existing.fields[name], of: name, key: key)
        let replica = Self.textReplica(of: request.clientID)
        if declared == .text, change.op == .insert {
            return .text(TextChange(document.insert(written, at: document.scalarCount, replica: replica)))
        }
        if change.baseVersion == nil || isStale(existing, change: change, snapshot: snapshot) {
            throw Rejection(
                reason: .validation,
                message:
                    "\(key): field \(name.debugDescription) merges as a text since a newer version of the app; this write, based on version \(change.baseVersion ?? 0) while another client changed the record up to version \(existing.version), would delete text it has not seen: update the app",
                keys: [key])
        }
        return .text(TextChange(document.update(to: written, replica: replica)))
    }
}

/// The texts' documents one push decoded, each with the encoded state it reads as: the next
/// edit of the same text in the push takes it instead of decoding that state again. Only one
/// is kept per text, and only while its state is the field's.
final class PushTextDocuments: Sendable {
    private struct Entry {
        var state: Data
        var document: TextDocument
    }

    private let entries = Mutex<[String: Entry]>([:])

    private static func key(_ record: RecordKey, _ name: SyncName) -> String { "\(record.entity)\u{0}\(record.recordID)\u{0}\(name)" }

    /// The document of `state`, when this push decoded it (taken out: the caller changes it).
    func take(key: RecordKey, name: SyncName, state: Data) -> TextDocument? {
        entries.withLock { entries in
            let key = Self.key(key, name)
            guard let entry = entries[key], entry.state == state else { return nil }
            entries[key] = nil
            return entry.document
        }
    }

    /// Keeps a document with the state it reads as.
    func keep(_ document: TextDocument, key: RecordKey, name: SyncName, state: Data) {
        entries.withLock { $0[Self.key(key, name)] = Entry(state: state, document: document) }
    }
}
