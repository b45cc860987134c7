/// Lets the schema see through `Optional` at run time. Internal: a public protocol would add its
/// members to every `Optional` in the user's module.
protocol _OptionalType {
    /// The wrapped type.
    static var _wrappedType: any Any.Type { get }
    /// `nil` of this optional type, boxed.
    static var _none: Any { get }
    /// The wrapped value, or nil.
    var _wrappedValue: Any? { get }
}

extension Optional: _OptionalType {
    /// The wrapped type.
    static var _wrappedType: any Any.Type { Wrapped.self }
    /// `nil` of this optional type, boxed.
    static var _none: Any { Optional<Wrapped>.none as Any }
    /// The wrapped value, or nil.
    var _wrappedValue: Any? {
        switch self {
        case let .some(value): return value
        case .none: return nil
        }
    }
}
