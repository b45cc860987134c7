import GRDB
import OpenSwiftDataMerge
import OpenSwiftDataSyncProtocol

/// Between a counter's stored form (an INTEGER or REAL column), its value in the merge core
/// (``CounterValue``) and the Swift value of its property.
enum CounterBridge {
    /// Whether a property of this type can be a counter: 64-bit integers and `Double` (a
    /// narrower integer could not hold every total the server may sum to, and a `Float` neither
    /// counts past 2^24 in steps of one nor holds the total the server keeps as a `Double`).
    static func isCounterType(_ type: Any.Type) -> Bool {
        type == Int.self || type == Int64.self || type == Double.self
    }

    /// A stored value of a field of `kind` as a counter value (nil: NULL, or not a number).
    static func counter(_ value: DatabaseValue, kind: SyncValueKind) -> CounterValue? {
        switch (kind, value.storage) {
        case let (.int, .int64(number)): .int(number)
        case let (.double, .double(number)): .double(number)
        // SQLite keeps integral REAL values as integers.
        case let (.double, .int64(number)): .double(Double(number))
        default: nil
        }
    }

    /// The stored form of a counter value.
    static func stored(_ value: CounterValue) -> DatabaseValue {
        switch value {
        case let .int(number): number.databaseValue
        case let .double(number): number.databaseValue
        }
    }

    /// The value of a property of `type` holding `value` (nil: it does not fit the type).
    static func swiftValue(_ value: CounterValue, as type: Any.Type) -> Any? {
        switch value {
        case let .int(number):
            if type == Int.self { return Int(exactly: number) }
            if type == Int64.self { return number }
            return nil
        case let .double(number):
            if type == Double.self { return number }
            if type == Float.self { return Float(number) }
            return nil
        }
    }
}
