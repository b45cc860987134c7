import Foundation
import Observation
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

/// Fetched models are observable whatever was done to them before the observation started.
@Suite("Observation of fetched models")
struct ObservationTests {
    @Test("a fetched model changed before its first read is observed from that read on", arguments: [false, true])
    func changedBeforeFirstRead(onDisk: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let configuration = onDisk ? ModelConfiguration(url: directory.file("notes.store")) : ModelConfiguration(isStoredInMemoryOnly: true)
        let container = try ModelContainer(for: Note.self, configurations: configuration)
        let writer = ModelContext(container)
        writer.insert(Note(title: "a"))
        try writer.save()

        let context = ModelContext(container)
        let note = try #require(try context.fetch(FetchDescriptor<Note>()).first)
        note.count = 3  // a write before any read or observation
        let fired = LockedFlag()
        withObservationTracking {
            _ = note.count
        } onChange: {
            fired.set()
        }
        #expect(!fired.value)
        note.count = 4
        #expect(fired.value, "a change after the tracked read reaches the observer")
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Note>()).map(\.count) == [4])
    }

    @Test("an inverse change reaches a related model's observers, read or not before", arguments: [false, true])
    func inverseOfUnreadModel(readFirst: Bool) throws {
        let container = try ModelContainer(for: Conversation.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let writer = ModelContext(container)
        writer.insert(Conversation(title: "first"))
        writer.insert(ChatMessage(text: "hello"))
        try writer.save()

        let context = ModelContext(container)
        let conversation = try #require(try context.fetch(FetchDescriptor<Conversation>()).first)
        let message = try #require(try context.fetch(FetchDescriptor<ChatMessage>()).first)
        if readFirst { _ = conversation.title }
        // The conversation's side changes through the inverse, without its setter.
        message.conversation = conversation
        let fired = LockedFlag()
        withObservationTracking {
            _ = conversation.messages
        } onChange: {
            fired.set()
        }
        #expect(conversation.messages.map(\.text) == ["hello"])
        message.conversation = nil
        #expect(fired.value)
        #expect(conversation.messages.isEmpty)
    }
}
