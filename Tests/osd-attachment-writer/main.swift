// Saves `.externalStorage` values to a store without end, for the crash test that kills it
// with SIGKILL mid-save (Tests/OpenSwiftDataTests/AttachmentCrashTests.swift):
//   osd-attachment-writer STORE_PATH SEED
// Each save inserts, replaces or deletes values of at most 300 KB, most of them above the
// threshold that sends them to files, some equal to others (one file), some small (inline),
// and now and then deletes the history (a sweep).
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
guard arguments.count == 3, let seed = UInt64(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: osd-attachment-writer STORE_PATH SEED\n".utf8))
    exit(2)
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

do {
    let container = try ModelContainer(for: CrashPhoto.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: arguments[1])))
    let context = ModelContext(container)
    var saves = 0
    while true {
        let photos = try context.fetch(FetchDescriptor<CrashPhoto>())
        for _ in 0...random.next(3) {
            let choice = random.next(10)
            if photos.count < 6 || choice < 3 {
                context.insert(CrashPhoto(slot: saves, image: values[random.next(values.count)], thumb: values[random.next(values.count)]))
            } else if let photo = photos.randomElement(using: &random) {
                if photo.isDeleted { continue }
                switch choice {
                case 3, 4, 5: photo.image = values[random.next(values.count)]
                case 6: photo.thumb = values[random.next(values.count)]
                default: context.delete(photo)
                }
            }
        }
        try context.save()
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
