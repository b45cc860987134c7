import Foundation
import OpenSwiftData
import Testing

/// Smuggles a context to another thread, as `@unchecked Sendable` code can.
private final class Smuggled: @unchecked Sendable {
    // @unchecked Sendable: deliberately unsafe; the test proves the context stops it.
    let context: ModelContext
    init(_ context: ModelContext) { self.context = context }
}

@Suite("Runtime isolation check")
struct ExclusiveUseTests {
    @Test("a context used from two threads at once stops the process with a clear message")
    func concurrentUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
            let context = ModelContext(container)
            for index in 0..<10 { context.insert(Note(title: "\(index)")) }
            try context.save()
            let smuggled = Smuggled(context)
            let inside = DispatchSemaphore(value: 0)
            let thread = Thread {
                // Holds the context inside enumerate while the main thread fetches.
                try? smuggled.context.enumerate(FetchDescriptor<Note>()) { _ in
                    inside.signal()
                    Thread.sleep(forTimeInterval: 5)
                }
            }
            thread.start()
            // Bounded: an enumerate that never calls its body ends the child, which then exits
            // with success, and the expectation fails instead of waiting for good.
            guard inside.wait(timeout: .now() + 60) == .success else { exit(0) }
            _ = try smuggled.context.fetch(FetchDescriptor<Note>())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a ModelContext was used from two threads at once"))
    }

    @Test("nested use on one thread and use from one thread after another are fine")
    func sequentialUseIsFine() async throws {
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(Note(title: "a"))
        try context.save()
        try context.enumerate(FetchDescriptor<Note>()) { note in
            context.insert(Note(title: note.title + "2"))
        }
        let smuggled = Smuggled(context)
        let count = try await Task.detached { try smuggled.context.fetchCount(FetchDescriptor<Note>()) }.value
        #expect(count == 2)
    }
}
