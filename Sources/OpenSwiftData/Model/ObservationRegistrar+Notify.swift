import Observation

extension ObservationRegistrar {
    /// Tells the observers of `subject` that the property at `keyPath` changed without going
    /// through its setter (used by the `_$notifyObservers(ofChangeTo:)` that `@Model`
    /// generates, so that the generated code names no standard-library function a model's own
    /// members could shadow, such as `type(of:)`).
    public func _$notifyChange<Subject: Observable>(of subject: Subject, at keyPath: AnyKeyPath) {
        func notify<Member>(_ member: Member.Type) {
            guard let keyPath = keyPath as? KeyPath<Subject, Member> else { return }
            willSet(subject, keyPath: keyPath)
            didSet(subject, keyPath: keyPath)
        }
        _openExistential(type(of: keyPath).valueType, do: notify)
    }
}
