import Foundation

/// The members of a `Codable` struct, found by decoding one value from a probe that answers
/// every request with an empty value and writes down the keys and types asked for: what
/// ``Schema/CompositeAttribute`` describes.
///
/// It finds the members of synthesized `Codable` conformances (and hand-written ones that
/// decode keyed members): numbers, strings, `Bool`, `Date`, `UUID`, `URL`, `Data`, `Decimal`,
/// optionals, arrays, dictionaries, enums that are `CaseIterable`, and nested structs of the
/// same kinds. A type it cannot build (an enum without `CaseIterable`, a member that validates
/// what it decodes) has no shape, and its attribute stays a plain ``Schema/Attribute``.
enum CodableShape {
    /// A member: its key and the type decoded for it (`Optional` for `decodeIfPresent`).
    struct Member {
        var name: String
        var type: any Any.Type
    }

    /// The keyed members of `type`, or nil when it is not a keyed `Decodable` the probe can
    /// build.
    static func members(of type: any Any.Type) -> [Member]? {
        guard let decodable = type as? any Decodable.Type else { return nil }
        let probe = ProbeDecoder(depth: 0)
        guard (try? decodable.init(from: probe)) != nil, probe.log.keyed else { return nil }
        return probe.log.members
    }

    /// What a probe recorded.
    final class Log {
        var members: [Member] = []
        var keyed = false
    }

    /// A value of `type` built by a probe, for a member's decode.
    static func empty<T: Decodable>(_ type: T.Type, depth: Int) throws -> T {
        switch type {
        case is String.Type: return try cast("", T.self)
        case is Bool.Type: return try cast(false, T.self)
        case is Date.Type: return try cast(Date(timeIntervalSinceReferenceDate: 0), T.self)
        case is UUID.Type: return try cast(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), T.self)
        case is URL.Type: return try cast(URL(fileURLWithPath: "/"), T.self)
        case is Data.Type: return try cast(Data(), T.self)
        case is Decimal.Type: return try cast(Decimal(0), T.self)
        default: break
        }
        if let cases = T.self as? any CaseIterable.Type, let first = firstCase(cases) as? T { return first }
        guard depth < 8 else { throw ProbeError() }
        return try T(from: ProbeDecoder(depth: depth + 1))
    }

    private static func firstCase<C: CaseIterable>(_ type: C.Type) -> Any? { C.allCases.first }

    private static func cast<T>(_ value: Any, _ type: T.Type) throws -> T {
        guard let typed = value as? T else { throw ProbeError() }
        return typed
    }

    struct ProbeError: Error {}

    /// A decoder that answers with empty values.
    final class ProbeDecoder: Decoder {
        let depth: Int
        let log = Log()
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        init(depth: Int) { self.depth = depth }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            log.keyed = true
            return KeyedDecodingContainer(KeyedProbe<Key>(log: log, depth: depth))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { EmptyUnkeyed() }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleProbe(depth: depth) }
    }

    struct KeyedProbe<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let log: Log
        let depth: Int
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool { true }

        func decodeNil(forKey key: Key) throws -> Bool {
            log.members.append(Member(name: key.stringValue, type: Any?.self))
            return true
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decode(generic: type, forKey: key) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(generic: type, forKey: key) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(generic: type, forKey: key) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(generic: type, forKey: key) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(generic: type, forKey: key) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(generic: type, forKey: key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(generic: type, forKey: key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(generic: type, forKey: key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(generic: type, forKey: key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(generic: type, forKey: key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(generic: type, forKey: key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(generic: type, forKey: key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(generic: type, forKey: key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(generic: type, forKey: key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(generic: type, forKey: key) }

        private func decode<T: Decodable>(generic type: T.Type, forKey key: Key) throws -> T {
            log.members.append(Member(name: key.stringValue, type: T.self))
            return try CodableShape.empty(T.self, depth: depth)
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try decodeIfPresent(generic: type, forKey: key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try decodeIfPresent(generic: type, forKey: key) }

        private func decodeIfPresent<T: Decodable>(generic type: T.Type, forKey key: Key) throws -> T? {
            log.members.append(Member(name: key.stringValue, type: T?.self))
            return nil
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw ProbeError()
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw ProbeError() }

        func superDecoder() throws -> any Decoder { throw ProbeError() }

        func superDecoder(forKey key: Key) throws -> any Decoder { throw ProbeError() }
    }

    /// An empty array.
    struct EmptyUnkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }

        mutating func decodeNil() throws -> Bool { throw ProbeError() }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw ProbeError() }
        mutating func decode(_ type: Bool.Type) throws -> Bool { throw ProbeError() }
        mutating func decode(_ type: String.Type) throws -> String { throw ProbeError() }
        mutating func decode(_ type: Double.Type) throws -> Double { throw ProbeError() }
        mutating func decode(_ type: Float.Type) throws -> Float { throw ProbeError() }
        mutating func decode(_ type: Int.Type) throws -> Int { throw ProbeError() }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { throw ProbeError() }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { throw ProbeError() }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { throw ProbeError() }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { throw ProbeError() }
        mutating func decode(_ type: UInt.Type) throws -> UInt { throw ProbeError() }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { throw ProbeError() }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { throw ProbeError() }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { throw ProbeError() }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { throw ProbeError() }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            throw ProbeError()
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw ProbeError() }
        mutating func superDecoder() throws -> any Decoder { throw ProbeError() }
    }

    /// A single value: zero, empty or false.
    struct SingleProbe: SingleValueDecodingContainer {
        let depth: Int
        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if let numeric = T.self as? any (Numeric & Decodable).Type, let zero = zero(numeric) as? T { return zero }
            return try CodableShape.empty(T.self, depth: depth + 1)
        }

        private func zero<N: Numeric>(_ type: N.Type) -> Any { N.zero }

        func decode(_ type: Bool.Type) throws -> Bool { false }
        func decode(_ type: String.Type) throws -> String { "" }
        func decode(_ type: Double.Type) throws -> Double { 0 }
        func decode(_ type: Float.Type) throws -> Float { 0 }
        func decode(_ type: Int.Type) throws -> Int { 0 }
        func decode(_ type: Int8.Type) throws -> Int8 { 0 }
        func decode(_ type: Int16.Type) throws -> Int16 { 0 }
        func decode(_ type: Int32.Type) throws -> Int32 { 0 }
        func decode(_ type: Int64.Type) throws -> Int64 { 0 }
        func decode(_ type: UInt.Type) throws -> UInt { 0 }
        func decode(_ type: UInt8.Type) throws -> UInt8 { 0 }
        func decode(_ type: UInt16.Type) throws -> UInt16 { 0 }
        func decode(_ type: UInt32.Type) throws -> UInt32 { 0 }
        func decode(_ type: UInt64.Type) throws -> UInt64 { 0 }
    }
}
