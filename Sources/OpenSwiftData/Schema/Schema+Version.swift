extension Schema {
    /// A semantic version of a schema, such as 1.2.0.
    public struct Version: Codable, Comparable, CustomStringConvertible, Hashable, Sendable {
        /// The major version.
        public let major: Int
        /// The minor version.
        public let minor: Int
        /// The patch version.
        public let patch: Int

        /// Creates a version.
        public init(_ major: Int, _ minor: Int, _ patch: Int) {
            self.major = major
            self.minor = minor
            self.patch = patch
        }

        /// Orders by major, minor, then patch.
        public static func < (lhs: Version, rhs: Version) -> Bool {
            (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }

        /// The version as `major.minor.patch`.
        public var description: String { "\(major).\(minor).\(patch)" }
    }
}
