// Saves `.externalStorage` values to a store without end, for the crash test that kills it
// with SIGKILL mid-save (Tests/OpenSwiftDataTests/AttachmentCrashTests.swift):
//   osd-attachment-writer STORE_PATH SEED [PROGRESS_PATH]
// With PROGRESS_PATH, it appends `begin N` to that file before its N-th save and `end N` once
// the save returned, each line with one write(2), and each save records N in CrashProgress: the
// test tells from them whether a kill landed in a save that had not committed.
// Each save inserts, replaces or deletes values of at most 300 KB, most of them above the
// threshold that sends them to files, some new (files the save writes), some equal to others
// (one file), some small (inline), and now and then deletes the history (a sweep).
import Foundation
import OpenSwiftData

/// The crash test's model; the test declares the same one.
@Model
final class CrashPhoto {
    var slot: Int
    @Attribute(.externalStorage) var image: Data?
    @Attribute(.externalStorage, .preserveValueOnDeletion) var thumb: Data?

    init(slot: Int, image: Data?, thumb: Data?) {
        self.slot = slot
        self.image = image
        self.thumb = thumb
    }
}

/// The number of the last save that committed.
@Model
final class CrashProgress {
    var saves: Int

    init(saves: Int) {
        self.saves = saves
    }
}

/// xorshift64*: the same schedule for the same seed.
struct Generator {
    var state: UInt64
    mutating func next(_ bound: Int) -> Int {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return Int((state &* 0x2545_F491_4F6C_DD1D) >> 33) % bound
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 || arguments.count == 4, let seed = UInt64(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: osd-attachment-writer STORE_PATH SEED [PROGRESS_PATH]\n".utf8))
    exit(2)
}
let progress = arguments.count == 4 ? FileHandle(forWritingAtPath: arguments[3]) : nil
progress?.seekToEndOfFile()

/// Appends a line to the progress file.
func report(_ line: String) {
    progress?.write(Data((line + "\n").utf8))
}
var random = Generator(state: seed | 1)
/// Eight values: five above the threshold, one of them twice (one file), one small (inline)
/// and nil.
let distinct: [Data] = (0..<6).map { index in
    var data = Data(repeating: UInt8(truncatingIfNeeded: index * 37 + 1), count: index < 5 ? 140_000 + index * 30_000 : 300)
    data[0] = UInt8(index)
    return data
}
let values: [Data?] = distinct + [distinct[4], nil]
var made: UInt64 = 0

/// A value for a property: four times in ten a new one above the threshold (a file the save
/// writes), else one of `values`.
@MainActor func pick() -> Data? {
    guard random.next(10) < 4 else { return values[random.next(values.count)] }
    made += 1
    var data = Data(repeating: UInt8(truncatingIfNeeded: made), count: 140_000 + random.next(60_000))
    // The 8 bytes of the counter, lent for the closure, copied into the value.
    withUnsafeBytes(of: (seed << 32 | made).littleEndian) { data.replaceSubrange(0..<8, with: $0) }
    return data
}

do {
    let container = try ModelContainer(
        for: CrashPhoto.self, CrashProgress.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: arguments[1])))
    let context = ModelContext(container)
    let counter = try context.fetch(FetchDescriptor<CrashProgress>()).first ?? CrashProgress(saves: 0)
    if counter.modelContext == nil { context.insert(counter) }
    var saves = 0
    while true {
        let photos = try context.fetch(FetchDescriptor<CrashPhoto>())
        for _ in 0...random.next(3) {
            let choice = random.next(10)
            if photos.count < 6 || choice < 3 {
                context.insert(CrashPhoto(slot: saves, image: pick(), thumb: pick()))
            } else if let photo = photos.randomElement(using: &random) {
                if photo.isDeleted { continue }
                switch choice {
                case 3, 4, 5: photo.image = pick()
                case 6: photo.thumb = pick()
                default: context.delete(photo)
                }
            }
        }
        counter.saves += 1
        report("begin \(counter.saves)")
        try context.save()
        report("end \(counter.saves)")
        saves += 1
        if random.next(25) == 0 { try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>()) }
    }
} catch {
    FileHandle.standardError.write(Data("osd-attachment-writer: \(error)\n".utf8))
    exit(1)
}

extension Generator: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        UInt64(next(Int(Int32.max))) << 32 | UInt64(next(Int(Int32.max)))
    }
}
