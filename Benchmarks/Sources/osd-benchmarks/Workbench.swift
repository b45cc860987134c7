import Foundation

/// A temporary directory for the benchmark's store files, removed by ``removeAll()``.
///
/// Each side populates one template store once; every timed run works on a fresh copy of it, or
/// on a new empty file, which is removed right after the run.
final class Workbench {
    let directory: URL
    private var counter = 0
    private var templates: [String: URL] = [:]

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("osd-benchmarks-\(getpid())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// A path for a new store file that does not exist yet.
    func freshURL(for contender: any Contender.Type) -> URL {
        counter += 1
        return directory.appendingPathComponent("\(contender.key)-\(counter).sqlite")
    }

    /// A fresh copy of `contender`'s store of `count` records, populated on first use.
    func populatedCopy(for contender: any Contender.Type, count: Int) throws -> URL {
        let template = try self.template(for: contender, count: count)
        let copy = freshURL(for: contender)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: template.path + suffix) {
            try FileManager.default.copyItem(atPath: template.path + suffix, toPath: copy.path + suffix)
        }
        return copy
    }

    /// `contender`'s template store of `count` records, populated on first use.
    func template(for contender: any Contender.Type, count: Int) throws -> URL {
        let name = "\(contender.key)-template-\(count)"
        if let url = templates[name] { return url }
        let url = directory.appendingPathComponent("\(name).sqlite")
        try contender.populate(at: url, count: count)
        templates[name] = url
        return url
    }

    /// Removes a store file with its WAL and shared-memory files.
    func remove(_ url: URL) {
        Self.removeStore(url)
    }

    /// Removes a store file with its WAL and shared-memory files.
    static func removeStore(_ url: URL) {
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
    }

    /// Removes the directory and everything in it.
    func removeAll() {
        try? FileManager.default.removeItem(at: directory)
    }
}
