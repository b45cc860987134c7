extension Schema {
    /// Uniqueness constraints declared with `#Unique`: each array of key paths is one constraint.
    public struct Unique<T: PersistentModel> {
        /// The constraints, one array of key paths each.
        public let constraints: [[PartialKeyPath<T>]]

        /// Creates uniqueness constraints.
        public init(_ constraints: [PartialKeyPath<T>]...) {
            self.constraints = constraints
        }

        /// The constraints as untyped key paths (used by the code `@Model` generates).
        public var _$keyPathGroups: [[AnyKeyPath]] { constraints.map { $0.map { $0 as AnyKeyPath } } }
    }

    /// Indexes declared with `#Index`: each array of key paths is one (compound) index.
    public struct Index<T: PersistentModel> {
        /// The kind of an index and the key paths it covers.
        public enum Types<P: PersistentModel> {
            /// An ordinary B-tree index.
            case binary([PartialKeyPath<P>])
            /// A spatial index; stored as an ordinary compound index.
            case rtree([PartialKeyPath<P>])

            var keyPaths: [PartialKeyPath<P>] {
                switch self {
                case let .binary(paths), let .rtree(paths): return paths
                }
            }
        }

        /// The indexes.
        public let indices: [Types<T>]

        /// Creates indexes of the given kinds.
        public init(_ indices: Types<T>...) {
            self.indices = indices
        }

        /// Creates binary indexes, one per array of key paths.
        public init(_ binaryIndices: [PartialKeyPath<T>]...) {
            self.indices = binaryIndices.map { .binary($0) }
        }

        /// The indexes as untyped key paths (used by the code `@Model` generates).
        public var _$keyPathGroups: [[AnyKeyPath]] { indices.map { $0.keyPaths.map { $0 as AnyKeyPath } } }
    }
}
