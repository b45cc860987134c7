import Foundation

/// How a field merges concurrent writes instead of keeping the last one. Declared per field in
/// the sync configuration (`configuration.merge(\FAQEntity.usageCount, .counter)`) and sent in the
/// schema descriptor (``FieldDescriptor/merge``).
public enum MergeKind: String, Codable, Sendable, CaseIterable {
    /// A set of elements (an array or a `Set` of `Codable & Hashable` values): concurrent adds are
    /// all kept, every remove is applied, and an add concurrent with a remove of the same element
    /// wins. Each save contributes the elements it added and removed (``SetChange``); the server
    /// sequences them, and every replica shows the elements in the same order.
    case set
    /// A number (`Int`, `Int64`, `Double`, `Float`): each save contributes its
    /// difference, and the value is the sum of every applied contribution.
    case counter
    /// A `String` whose concurrent insertions and deletions are all kept. Each save contributes
    /// the runs it inserted and the ranges it deleted, by identity (``TextChange``).
    case text
}

/// What one change does to a merged field (``RecordChange/merge``): the contribution, not the
/// value.
///
/// ```json
/// "merge": {"usageCount": {"counter": {"t": "int", "v": 1}}}
/// ```
///
/// A counter's contribution is the difference its save made (the new value minus the value the
/// saving device had): `+1` for an increment, `-5` for setting a counter seen at 5 to 0.
///
/// A set's contribution is the elements its save added and removed, each as its canonical JSON
/// text (sorted keys, no whitespace), removes judged against the change's `baseVersion`:
///
/// ```json
/// "merge": {"readBy": {"set": {"add": ["\"bob\""], "remove": ["\"carol\""]}}}
/// ```
public enum FieldMerge: Hashable, Sendable, Codable {
    /// A counter's contribution: an `int` or a `double` value of the field's kind.
    case counter(SyncValue)
    /// A set's contribution: the elements added and removed.
    case set(SetChange)
    /// A text's contribution: the runs inserted and the ranges deleted.
    case text(TextChange)

    /// The kind of merge it is.
    public var kind: MergeKind {
        switch self {
        case .counter: .counter
        case .set: .set
        case .text: .text
        }
    }

    private enum CodingKeys: String, CodingKey { case counter, set, text }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "a field merge is one object member naming its kind; this version knows \"counter\", \"set\" and \"text\""))
        }
        switch key {
        case .counter: self = .counter(try container.decode(SyncValue.self, forKey: .counter))
        case .set: self = .set(try container.decode(SetChange.self, forKey: .set))
        case .text: self = .text(try container.decode(TextChange.self, forKey: .text))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case let .counter(delta): try container.encode(delta, forKey: .counter)
        case let .set(change): try container.encode(change, forKey: .set)
        case let .text(change): try container.encode(change, forKey: .text)
        }
    }
}

/// What one save did to a merged set (``FieldMerge/set(_:)``): the elements it added and those it
/// removed, each as its canonical JSON text (`"\"bob\""` for the string `bob`).
public struct SetChange: Hashable, Sendable, Codable {
    /// The elements added, in the order the save added them.
    public var add: [String]
    /// The elements removed: those of them the saving device had seen (at the change's base
    /// version, or added by itself) go; an add it had not seen keeps its element.
    public var remove: [String]

    /// Makes a set's contribution.
    public init(add: [String] = [], remove: [String] = []) {
        self.add = add
        self.remove = remove
    }

    /// Whether it adds and removes nothing.
    public var isEmpty: Bool { add.isEmpty && remove.isEmpty }

    private enum CodingKeys: String, CodingKey { case add, remove }

    /// Reads `{"add": [...], "remove": [...]}`; a missing member is empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        add = try container.decodeIfPresent([String].self, forKey: .add) ?? []
        remove = try container.decodeIfPresent([String].self, forKey: .remove) ?? []
    }
}
