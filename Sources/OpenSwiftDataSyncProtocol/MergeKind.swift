import Foundation

/// How a field merges concurrent writes instead of keeping the last one. Declared per field in
/// the sync configuration (`configuration.merge(\FAQEntity.usageCount, .counter)`) and sent in the
/// schema descriptor (``FieldDescriptor/merge``).
public enum MergeKind: String, Codable, Sendable, CaseIterable {
    /// A set of elements (an array or a `Set` of `Codable & Hashable` values): concurrent adds are
    /// all kept, and an add concurrent with a remove of the same element wins. Not supported yet:
    /// declaring it throws at engine setup.
    case set
    /// A number (`Int`, `Int64`, `Double`, `Float`): each save contributes its
    /// difference, and the value is the sum of every applied contribution.
    case counter
    /// A `String` whose concurrent insertions and deletions are all kept. Not supported yet:
    /// declaring it throws at engine setup.
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
public enum FieldMerge: Hashable, Sendable, Codable {
    /// A counter's contribution: an `int` or a `double` value of the field's kind.
    case counter(SyncValue)

    /// The kind of merge it is.
    public var kind: MergeKind {
        switch self {
        case .counter: .counter
        }
    }

    private enum CodingKeys: String, CodingKey { case counter }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "a field merge is one object member naming its kind; this version knows \"counter\""))
        }
        switch key {
        case .counter: self = .counter(try container.decode(SyncValue.self, forKey: .counter))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case let .counter(delta): try container.encode(delta, forKey: .counter)
        }
    }
}
