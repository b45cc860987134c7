/// A merged value a save wrote in place of the model's (``SaveCapture/merge(_:layout:row:column:seen:written:in:)``),
/// set on the model once the save has committed: through the property's key path, as the app's
/// own code would, so that Observation and live queries see it.
struct MergedWrite {
    let registration: Registration
    /// The property's index in its layout.
    let index: Int
    let keyPath: AnyKeyPath
    /// The value the model shows (nil: the one it saved).
    let value: Any?
    /// The save's own contribution (nil: none), which undoing the save takes back.
    let difference: Any?

    /// Sets the value (nothing when it does not fit the property, which a capture never returns).
    func apply() {
        guard let value else { return }
        func open<M: PersistentModel>(_ model: M) {
            func typed<V>(_ type: V.Type) {
                guard let keyPath = keyPath as? ReferenceWritableKeyPath<M, V>, let converted = value as? V else { return }
                model[keyPath: keyPath] = converted
            }
            _openExistential(Swift.type(of: keyPath).valueType, do: typed)
        }
        open(registration.model)
    }
}
