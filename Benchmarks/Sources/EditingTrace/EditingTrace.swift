import Foundation

/// The automerge-perf editing trace, which the benchmarks replay: 259,778 edits of a real
/// paper, read at run time from `../shared/data/editing-trace` (or the folder
/// `OSD_EDITING_TRACE` names), whose README says where it comes from and under what license.
public struct EditingTrace: Sendable {
    /// One edit: at `position`, delete `deleted` characters, then insert `text`.
    public struct Edit: Sendable {
        /// Where the edit applies.
        public var position: Int
        /// How many characters it deletes there.
        public var deleted: Int
        /// What it inserts there.
        public var text: String
    }

    /// The edits, in order.
    public var edits: [Edit]
    /// The text the edits make.
    public var final: String

    /// The folder the trace is read from.
    public static var folder: URL {
        URL(
            fileURLWithPath: ProcessInfo.processInfo.environment["OSD_EDITING_TRACE"]
                ?? FileManager.default.currentDirectoryPath + "/../shared/data/editing-trace")
    }

    /// Reads the trace: `edits.jsonl.gz` (one `[position, deleted, text]` per line) and
    /// `final.txt`. Nil when the folder has no trace.
    public static func load() throws -> EditingTrace? {
        let archive = folder.appendingPathComponent("edits.jsonl.gz")
        guard FileManager.default.fileExists(atPath: archive.path) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-dc", archive.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var edits: [Edit] = []
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let fields = try JSONSerialization.jsonObject(with: Data(line)) as? [Any], fields.count == 3,
                let position = fields[0] as? Int, let deleted = fields[1] as? Int, let text = fields[2] as? String
            else { throw CocoaError(.fileReadCorruptFile) }
            edits.append(Edit(position: position, deleted: deleted, text: text))
        }
        return EditingTrace(edits: edits, final: try String(contentsOf: folder.appendingPathComponent("final.txt"), encoding: .utf8))
    }

    /// The first `count` edits alone, with the text they make (edits on UTF-8 bytes, as the
    /// trace's text is).
    public func prefix(_ count: Int) -> EditingTrace {
        guard count < edits.count else { return self }
        let kept = Array(edits.prefix(count))
        var buffer: [UInt8] = []
        for edit in kept {
            if edit.deleted > 0 { buffer.removeSubrange(edit.position..<edit.position + edit.deleted) }
            if !edit.text.isEmpty { buffer.insert(contentsOf: edit.text.utf8, at: edit.position) }
        }
        return EditingTrace(edits: kept, final: String(decoding: buffer, as: UTF8.self))
    }
}
