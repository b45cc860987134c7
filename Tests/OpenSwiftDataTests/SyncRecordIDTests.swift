import Foundation
import GRDB
import Testing

@testable import OpenSwiftData

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

    @Test("record ids in canonical UUID text are stored as 16 bytes, any other id as text, and read back exactly")
    func storedForm() throws {
        var generator = RandomRecordID()
        let made = generator.make()
        for id in [
            made, "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", "u42", "", "E621E1F8C36C495A93FC0C247A3E6E5F0000",
        ] {
            let stored = SyncRecords.storedID(id)
            #expect(SyncRecords.recordID(stored: stored) == id)
        }
        if case let .blob(data) = SyncRecords.storedID(made).storage { #expect(data.count == 16) } else { Issue.record("not a blob") }
        if case .string = SyncRecords.storedID("e621e1f8-c36c-495a-93fc-0c247a3e6e5f").storage {} else { Issue.record("lowercase became a blob") }
    }
}
