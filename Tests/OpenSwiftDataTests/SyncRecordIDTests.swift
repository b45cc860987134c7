import Foundation
@testable import OpenSwiftData
import Testing

@Suite("Sync record ids")
struct SyncRecordIDTests {
    @Test("new record ids are version 7 UUIDs, strictly increasing within a save, also past 4,096 in one millisecond")
    func timeOrdered() throws {
        var generator = RandomRecordID(clock: { 1_700_000_000_123 })
        var previous = ""
        for _ in 0..<5_000 {
            let id = generator.make()
            let uuid = try #require(UUID(uuidString: id))
            #expect(RandomRecordID.format(uuid) == id)
            #expect(id.count == 36)
            let bytes = uuid.uuid
            #expect(bytes.6 >> 4 == 7)
            #expect(bytes.8 >> 6 == 0b10)
            #expect(id > previous)
            previous = id
        }
        // The first id carries the clock's milliseconds.
        var fresh = RandomRecordID(clock: { 0x0123_4567_89AB })
        #expect(fresh.make().hasPrefix("01234567-89AB-7000-"))
    }

    @Test("a UUID's text written by hand is Foundation's")
    func formatting() {
        for _ in 0..<100 {
            let uuid = UUID()
            #expect(RandomRecordID.format(uuid) == uuid.uuidString)
        }
    }
}
