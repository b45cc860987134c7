extension Schema {
    /// What ``Model()`` records about one persisted property: its name, key path, declared default
    /// value and the options from `@Attribute`.
    public struct PropertyMetadata {
        /// The property's name.
        public var name: String
        /// The key path to the property.
        public var keypath: AnyKeyPath
        /// The value written after `=` in the declaration, if any.
        public var defaultValue: Any?
        /// The attribute or relationship built from the property's macro arguments, if any.
        public var metadata: (any SchemaProperty)?

        /// Creates property metadata.
        public init(name: String, keypath: AnyKeyPath, defaultValue: Any? = nil, metadata: (any SchemaProperty)? = nil) {
            self.name = name
            self.keypath = keypath
            self.defaultValue = defaultValue
            self.metadata = metadata
        }
    }
}
