import Foundation

/// A fresh directory for a test's files, removed by ``cleanUp()`` or when the last reference
/// to it goes.
public final class TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates an empty directory under the system's temporary directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("osd-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The URL of a file in the directory.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The path of a file in the directory.
    public func path(_ name: String) -> String { file(name).path }

    /// Removes the directory and everything in it (again: nothing happens).
    public func cleanUp() { try? FileManager.default.removeItem(at: url) }

    deinit { cleanUp() }
}
