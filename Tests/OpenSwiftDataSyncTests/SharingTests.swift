import Foundation
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol
import OpenSwiftDataTestSupport
import Synchronization
import Testing

/// A card on a board that several users share; `votes` merges as a counter, so the engine
/// speaks protocol version 2.
@Model
final class BoardCard {
    var title: String
    var votes: Int = 0
    /// The scope the card syncs in (nil: the user's private scope).
    var board: String?

    init(title: String, board: String?) {
        self.title = title
        self.board = board
    }
}

extension LoopbackServer {
    /// A device of `user` syncing ``BoardCard``s over HTTP to this server.
    func boardDevice(_ user: String) throws -> (engine: SyncEngine, container: ModelContainer, log: EventLog) {
        let container = try ModelContainer(for: BoardCard.self, configurations: ModelConfiguration(url: directory.file("\(user)-board.sqlite")))
        let verifier = server.verifier
        let transport = HTTPSyncTransport(server: url) { try await verifier.mint(user: user) }
        var configuration = SyncConfiguration()
        configuration.sync(BoardCard.self, scope: \BoardCard.board)
        configuration.merge(\BoardCard.votes, .counter)
        configuration.pollInterval = .seconds(3600)
        let engine = try SyncEngine(
            container: container, transport: transport, user: user, configuration: configuration, clock: SystemSyncClock(), seed: seed(of: user))
        return (engine, container, EventLog(engine))
    }
}

/// The titles of the cards a container holds, sorted.
private func titles(_ container: ModelContainer) throws -> [String] {
    try ModelContext(container).fetch(FetchDescriptor<BoardCard>()).map(\.title).sorted()
}

@Suite("Sharing from the app: readers and writers, through a real server", .serialized)
struct SharingTests {
    @Test("the owner shares with a writer and a reader; the writer's save arrives, the reader's is refused; unshare removes the scope")
    func shareReadWriteUnshare() async throws {
        try await LoopbackServer.run { server in
            let alice = try server.boardDevice("alice")
            let bob = try server.boardDevice("bob")
            let carol = try server.boardDevice("carol")
            let scope: ScopeID = "board:b1"
            let context = ModelContext(alice.container)
            context.insert(BoardCard(title: "plan", board: scope.rawValue))
            try context.save()
            try await alice.engine.syncNow()
            // Bob's first pull records what he may read (his own scope): no event.
            try await bob.engine.syncNow()
            #expect(!bob.log.all.contains { if case .grantsChanged = $0 { true } else { false } })

            let withCarol = try await alice.engine.share(scope, with: "carol", role: .writer)
            #expect(withCarol == ScopeMembers(scope: scope, owner: "alice", writers: ["carol"], readers: []))
            let withBoth = try await alice.engine.share(scope, with: "bob", role: .reader)
            #expect(withBoth == ScopeMembers(scope: scope, owner: "alice", writers: ["carol"], readers: ["bob"]))
            #expect(withBoth.role(of: "bob") == .reader && withBoth.role(of: "carol") == .writer && withBoth.role(of: "alice") == nil)
            let shared = await alice.log.waitFor { $0 == .grantsChanged(SyncGrantsChange(members: withBoth)) }
            #expect(shared != nil, "the owner's engine reports its own share")

            // The writer pulls the card and edits it; the edit arrives at the owner.
            try await carol.engine.syncNow()
            let carolContext = ModelContext(carol.container)
            let carolCard = try #require(try carolContext.fetch(FetchDescriptor<BoardCard>()).first)
            carolCard.title = "carol's plan"
            try carolContext.save()
            try await carol.engine.syncNow()
            try await alice.engine.syncNow()
            #expect(try titles(alice.container) == ["carol's plan"])

            // The reader pulls the card, and hears that he may read the board now.
            try await bob.engine.syncNow()
            #expect(try titles(bob.container) == ["carol's plan"])
            let added = await bob.log.waitFor { $0 == .grantsChanged(SyncGrantsChange(added: [scope])) }
            #expect(added != nil, "\(bob.log.all)")
            // His save is refused (readOnly, naming the board), rolled back and reported.
            let bobContext = ModelContext(bob.container)
            let bobCard = try #require(try bobContext.fetch(FetchDescriptor<BoardCard>()).first)
            bobCard.title = "bob's plan"
            bobCard.votes += 1
            try bobContext.save()
            try await bob.engine.syncNow()
            let rejected = await bob.log.waitFor { if case .rejected = $0 { true } else { false } }
            guard case let .rejected(rejection)? = rejected else {
                Issue.record("no rejection: \(bob.log.all)")
                return
            }
            #expect(rejection.reason == .readOnly)
            #expect(rejection.message?.contains("board:b1") == true)
            #expect(try titles(bob.container) == ["carol's plan"])
            #expect(try ModelContext(bob.container).fetch(FetchDescriptor<BoardCard>()).first?.votes == 0)
            #expect(try await bob.engine.pendingChangeCount() == 0)
            try await alice.engine.syncNow()
            #expect(try titles(alice.container) == ["carol's plan"])

            // Anyone granted the board lists its members; only the owner shares it.
            #expect(try await bob.engine.members(of: scope) == withBoth)
            await #expect(throws: SyncEngineError.notScopeOwner(scope)) { try await bob.engine.share(scope, with: "dave", role: .reader) }
            await #expect(throws: SyncEngineError.notScopeOwner(scope)) { try await carol.engine.unshare(scope, from: "bob") }
            await #expect(throws: SyncEngineError.notScopeOwner("board:nobody")) { try await bob.engine.unshare("board:nobody", from: "carol") }
            await #expect(throws: SyncEngineError.self) { try await bob.engine.share("no-kind", with: "dave") }

            // Unshared: bob's next pull removes the board's card and says so.
            let afterUnshare = try await alice.engine.unshare(scope, from: "bob")
            #expect(afterUnshare.readers == [] && afterUnshare.writers == ["carol"])
            try await bob.engine.syncNow()
            #expect(try titles(bob.container) == [])
            #expect(await bob.log.waitFor { $0 == .revoked([scope]) } != nil)
            #expect(await bob.log.waitFor { $0 == .grantsChanged(SyncGrantsChange(removed: [scope])) } != nil, "\(bob.log.all)")
            await #expect(throws: SyncEngineError.scopeNotGranted(scope)) { try await bob.engine.members(of: scope) }
            await bob.engine.stop()
            await carol.engine.stop()
            await alice.engine.stop()
        }
    }

    @Test("an engine of protocol version 1 sees a reader's refused save as scopeNotGranted, rolled back like any rejection")
    func versionOneReader() async throws {
        try await LoopbackServer.run { server in
            let owner = try server.device("owner", user: "alice")
            let reader = try server.device("reader", user: "bob")
            let note = Note(title: "team plan")
            note.space = "team:t1"
            owner.context.insert(note)
            try owner.context.save()
            try await owner.engine.syncNow()
            let members = try await owner.engine.share("team:t1", with: "bob", role: .reader)
            #expect(members.readers == ["bob"])
            let log = EventLog(reader.engine)
            try await reader.engine.syncNow()
            let pulled = try #require(try reader.context.fetch(FetchDescriptor<Note>()).first)
            pulled.title = "bob was here"
            try reader.context.save()
            try await reader.engine.syncNow()
            let rejected = await log.waitFor { if case .rejected = $0 { true } else { false } }
            guard case let .rejected(rejection)? = rejected else {
                Issue.record("no rejection: \(log.all)")
                return
            }
            #expect(rejection.reason == .scopeNotGranted)
            #expect(rejection.message?.contains("read-only") == true)
            #expect(try reader.noteState() == ["team plan||false|-|"])
            await reader.engine.stop()
            await owner.engine.stop()
        }
    }

    @Test("a server that grants writing when asked for a reader (one from before roles): the grant is taken back and reported")
    func serverWithoutRoles() async throws {
        let directory = try TemporaryDirectory()
        let container = try ModelContainer(for: BoardCard.self, configurations: ModelConfiguration(url: directory.file("old.sqlite")))
        var configuration = SyncConfiguration()
        configuration.sync(BoardCard.self, scope: \BoardCard.board)
        let transport = RolelessTransport()
        let engine = try SyncEngine(
            container: container, transport: transport, user: "alice", configuration: configuration, clock: SystemSyncClock(), seed: 1)
        // Asked for a reader, granted a writer: the grant is taken back, and the call says why.
        await #expect {
            try await engine.share("board:b1", with: "bob", role: .reader)
        } throws: { error in
            guard case SyncEngineError.badServerAnswer(let message)? = error as? SyncEngineError else { return false }
            return message.contains("reader")
        }
        #expect(try await engine.members(of: "board:b1").writers == [])
        #expect(try await engine.share("board:b1", with: "bob", role: .writer).writers == ["bob"])
    }
}

/// A transport whose server knows no roles: every grant makes a writer, and answers carry no
/// readers.
private final class RolelessTransport: SyncTransport {
    private let writers = Mutex<Set<String>>([])

    func push(_ request: PushRequest) async throws -> PushResponse { throw SyncTransportError.unreachable("no server") }
    func pull(_ request: PullRequest) async throws -> PullResponse { throw SyncTransportError.unreachable("no server") }
    func live(clientID: ClientID) -> AsyncThrowingStream<LiveMessage, any Error> {
        AsyncThrowingStream { $0.finish(throwing: SyncTransportError.unreachable("no server")) }
    }
    func members(of scope: ScopeID) async throws -> ScopeMembersResponse {
        try answer(scope, writers.withLock { $0.sorted() })
    }
    func grant(_ request: GrantRequest, in scope: ScopeID) async throws -> ScopeMembersResponse {
        try answer(
            scope,
            writers.withLock {
                $0.insert(request.user)
                return $0.sorted()
            })
    }
    func revoke(_ user: String, in scope: ScopeID) async throws -> ScopeMembersResponse {
        try answer(
            scope,
            writers.withLock {
                $0.remove(user)
                return $0.sorted()
            })
    }
    /// The answer of a server from before roles: no `readers` member.
    private func answer(_ scope: ScopeID, _ members: [String]) throws -> ScopeMembersResponse {
        try JSONDecoder().decode(
            ScopeMembersResponse.self,
            from: Data(
                #"{"scope": "\#(scope.rawValue)", "owner": "alice", "members": \#(String(decoding: try JSONEncoder().encode(members), as: UTF8.self))}"#
                    .utf8))
    }
}
