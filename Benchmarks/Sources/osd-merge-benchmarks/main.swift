// The merge core's figures on a real editing trace: `swift run -c release osd-merge-benchmarks`.
//
// The trace (../shared/data/editing-trace, or the folder OSD_EDITING_TRACE names) is the
// automerge-perf paper: 259,778 single-character edits. It is replayed three ways, each checked
// against the trace's final text: on one replica, edit by edit (each edit an operation); on a
// second replica that applies those operations by identity (what a server or another device
// does); and as saves of the whole string every 20 edits (`update(to:replica:)`, what a save
// does), while a third replica types concurrently and the two merge both ways. The baseline is
// the same edits on a plain byte buffer.
import EditingTrace
import Foundation
import OpenSwiftDataMerge

/// Resident memory in bytes.
func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func format(_ value: Double) -> String { String(format: "%.3f", value) }

let trace: EditingTrace
do {
    guard let loaded = try EditingTrace.load() else {
        print("The editing trace is not at \(EditingTrace.folder.path) (set OSD_EDITING_TRACE)")
        exit(1)
    }
    trace = loaded
} catch {
    print("The editing trace at \(EditingTrace.folder.path) does not read: \(error)")
    exit(1)
}
print("Editing trace: \(trace.edits.count) edits, final text \(trace.final.utf8.count) bytes")

// Baseline: the same edits on a byte buffer.
var buffer: [UInt8] = []
let baseline = seconds {
    for edit in trace.edits {
        if edit.deleted > 0 { buffer.removeSubrange(edit.position..<edit.position + edit.deleted) }
        if !edit.text.isEmpty { buffer.insert(contentsOf: edit.text.utf8, at: edit.position) }
    }
}
print("baseline, edits on a byte buffer: \(format(baseline)) s, equal: \(String(decoding: buffer, as: UTF8.self) == trace.final)")

// One replica, edit by edit.
let memoryBefore = residentBytes()
var author = TextDocument()
var operations: [TextOperation] = []
operations.reserveCapacity(trace.edits.count)
let local = seconds {
    for edit in trace.edits {
        if edit.deleted > 0 { operations.append(author.delete(at: edit.position, count: edit.deleted)) }
        if !edit.text.isEmpty { operations.append(author.insert(edit.text, at: edit.position, replica: 1)) }
    }
}
let memoryAfter = residentBytes()
print(
    "one replica, edit by edit: \(format(local)) s (\(format(local / baseline))× baseline), \(author.runCount) runs, "
        + "resident memory +\(max(0, memoryAfter - memoryBefore) / 1_048_576) MiB with the operations, equal: \(author.text == trace.final)")

// A second replica applies every operation by identity.
var follower = TextDocument()
let remote = try seconds {
    for operation in operations { try follower.apply(operation) }
}
print("a second replica applies the \(operations.count) operations: \(format(remote)) s, equal: \(follower.text == trace.final)")

// Saves every 20 edits, while a third replica types concurrently; then both merge.
var saving = TextDocument()
var other = TextDocument()
var savedOperations: [TextOperation] = []
var otherOperations: [TextOperation] = []
var text: [UInt8] = []
let saves = seconds {
    for (index, edit) in trace.edits.enumerated() {
        if edit.deleted > 0 { text.removeSubrange(edit.position..<edit.position + edit.deleted) }
        if !edit.text.isEmpty { text.insert(contentsOf: edit.text.utf8, at: edit.position) }
        if index % 20 == 19 || index == trace.edits.count - 1 {
            savedOperations.append(saving.update(to: String(decoding: text, as: UTF8.self), replica: 2))
        }
        if index % 5_000 == 4_999 {
            // At either end of what that device has: each of its notes stays whole there.
            let position = otherOperations.count % 2 == 0 ? 0 : other.scalarCount
            otherOperations.append(other.insert(" [a note typed on another device] ", at: position, replica: 3))
        }
    }
}
let merge = try seconds {
    for operation in otherOperations { try saving.apply(operation) }
    for operation in savedOperations { try other.apply(operation) }
}
let converged = saving.text == other.text
let kept = otherOperations.count == saving.text.components(separatedBy: " [a note typed on another device] ").count - 1
print(
    "saves every 20 edits: \(savedOperations.count) saves in \(format(saves)) s; merged with \(otherOperations.count) concurrent "
        + "insertions in \(format(merge)) s, converged: \(converged), every concurrent insertion kept once: \(kept)")
