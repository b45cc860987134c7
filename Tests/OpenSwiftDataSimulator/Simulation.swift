import Foundation
import OpenSwiftData
import OpenSwiftDataMerge
import OpenSwiftDataServer
import OpenSwiftDataSync
import OpenSwiftDataSyncProtocol

/// One schedule's outcome.
public struct SimulationResult: Sendable {
    /// The seed that made it.
    public var seed: UInt64
    /// What failed (empty: every check passed).
    public var failures: [String]
    /// Every step and its outcome, in order: the same seed gives the same trace.
    public var trace: [String]
    /// How often each fault, workload operation and engine event happened.
    public var counts: [String: Int]

    /// Whether every check passed.
    public var passed: Bool { failures.isEmpty }

    /// The command that replays this schedule.
    public var replayCommand: String { "swift run -c release osd-simulate --seed \(seed)" }
}

/// Runs deterministic schedules: the real engine and the real server core in one process, N
/// clients each with its own store file, one server on its SQLite file, an in-memory network
/// that drops, delays, duplicates and reorders requests, a simulated clock, and process
/// crashes, server restarts and restores, compaction, partitions and revoked grants, all drawn
/// from one seeded generator. Nothing runs in the background: each client is driven by
/// awaited `syncNow()` calls, one at a time.
public struct Simulation: Sendable {
    /// Workload and fault steps per schedule.
    public var steps: Int
    /// Faults the schedule may draw (all by default).
    public var faults: Set<SimFault>

    /// A simulation of `steps` steps per schedule.
    public init(steps: Int = 60, faults: Set<SimFault> = Set(SimFault.allCases)) {
        self.steps = steps
        self.faults = faults
    }

    /// Runs the schedule of `seed` and checks it.
    public func run(seed: UInt64) async -> SimulationResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osd-sim-\(seed)-\(UInt64.random(in: 0...UInt64.max))")
        defer { try? FileManager.default.removeItem(at: directory) }
        var result = await Self.execute(seed: seed, steps: steps, faults: faults, directory: directory)
        // Every client, engine, container and server of the schedule is gone now: a file of its
        // folder still open is a leak (a long run would hit the process's descriptor limit).
        let open = Self.openFiles(under: directory)
        if !open.isEmpty {
            result.failures.append("leak: \(open.count) files of the schedule still open after it ended: \(open.prefix(4).joined(separator: ", "))")
        }
        return result
    }

    private static func execute(seed: UInt64, steps: Int, faults: Set<SimFault>, directory: URL) async -> SimulationResult {
        var run = SimRun(seed: seed, steps: steps, faults: faults, directory: directory)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try await run.execute()
        } catch {
            run.failures.append("the simulator itself failed: \(error)")
        }
        var counts = run.counts.values
        for client in run.clients {
            for (key, value) in client.reports.eventCounts { counts[key, default: 0] += value }
        }
        return SimulationResult(seed: seed, failures: run.failures, trace: run.trace, counts: counts)
    }

    /// The files under `directory` this process holds open (Linux's `/proc/self/fd`; none
    /// where it does not exist).
    static func openFiles(under directory: URL) -> [String] {
        let manager = FileManager.default
        let prefix = directory.resolvingSymlinksInPath().path
        let descriptors = (try? manager.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.compactMap { try? manager.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
            .filter { $0.hasPrefix(prefix) || $0.hasPrefix(directory.path) }
            .map { ($0 as NSString).lastPathComponent }
    }
}

/// A fault kind a schedule may draw.
public enum SimFault: String, CaseIterable, Sendable {
    /// Requests or answers dropped, delayed (then delivered late, out of order), duplicated.
    case network
    /// A client process killed (idle or mid-push) and restarted from its file.
    case crash
    /// The server process restarted.
    case serverRestart
    /// The server's database replaced by an older copy.
    case snapshotRestore
    /// History compacted past clients' cursors.
    case compaction
    /// The shared scope's grant revoked (and granted again later).
    case revoke
    /// Some clients cut off from the server for a while.
    case partition
    /// A client's live channel dropped (it syncs only when it polls).
    case liveDrop
}

/// The state of one schedule while it runs.
struct SimRun {
    let seed: UInt64
    let steps: Int
    let faults: Set<SimFault>
    let directory: URL
    var rng: SyncRandom
    let clock = SimClock()
    let counts = SimCounts()
    var trace: [String] = []
    var failures: [String] = []
    var clients: [SimClient] = []
    var server: SimServer?
    var network: SimNetwork?
    var nextKey = 0
    var deletedItems: [(key: String, space: String?)] = []
    /// Every committed save's contribution to a counter (`SimTally.hits`), with its mark.
    var tallyLedger: [(tally: String, mark: String, delta: Int)] = []
    /// Every committed save's edit of a text (`SimNote.body`), with its mark: the characters it
    /// typed and those it deleted (each character is typed once in a run, see `glyphs`).
    var noteLedger: [(note: String, mark: String, typed: [Character], deleted: [Character])] = []
    var nextGlyph = 0
    /// The attachments the workload wrote (each one's bytes are new).
    var photoSerial = 0
    var probes = 0

    static let team = "team:t1"

    init(seed: UInt64, steps: Int, faults: Set<SimFault>, directory: URL) {
        self.seed = seed
        self.steps = steps
        self.faults = faults
        self.directory = directory
        rng = SyncRandom(seed: seed)
    }

    mutating func random(_ bound: Int) -> Int { Int(rng.next() % UInt64(max(1, bound))) }
    mutating func chance(_ perMille: Int) -> Bool { random(1000) < perMille }
    /// `count` characters no save of this run typed before (CJK ideographs, and every fourth one
    /// followed by a combining accent, a character of two scalars).
    mutating func glyphs(_ count: Int) -> [Character] {
        var typed: [Character] = []
        for _ in 0..<count {
            nextGlyph += 1
            guard let scalar = Unicode.Scalar(0x4E00 + nextGlyph % 20_000) else { continue }
            var text = String(Character(scalar))
            if nextGlyph % 4 == 0 { text.unicodeScalars.append("\u{301}") }
            typed.append(contentsOf: text)
        }
        return typed
    }

    mutating func key(_ prefix: String) -> String {
        nextKey += 1
        return "\(prefix)\(nextKey)"
    }

    mutating func execute() async throws {
        let server = try await SimServer(directory: directory, clock: clock)
        self.server = server
        let network = SimNetwork(server: server, rng: SyncRandom(seed: rng.next()), counts: counts)
        self.network = network
        network.faultPerMille = faults.contains(.network) ? 150 + random(250) : 0
        _ = try await server.service.grant(user: "alice", scope: ScopeID(rawValue: Self.team), request: GrantRequest(user: "bob"))
        let users = ["alice", "alice", "bob"]
        for (index, user) in users.enumerated() {
            let client = SimClient(name: "c\(index)", user: user, index: index, directory: directory)
            try await client.open(network: network, clock: clock, seed: seed)
            clients.append(client)
        }
        for _ in 0..<steps {
            clock.advance(milliseconds: Int64(random(3000)))
            try await step()
            trace += network.trace
            network.trace = []
        }
        try await heal()
        try await check()
        trace += network.trace
    }

    // MARK: Steps

    mutating func step() async throws {
        let roll = random(1000)
        let client = clients[random(clients.count)]
        if roll < 450 {
            guard client.isUp else { return try await restart(client) }
            workload(client)
        } else if roll < 800 {
            guard client.isUp else { return try await restart(client) }
            try await sync(client, why: "sync")
        } else if roll < 850 {
            await network?.deliverHeld()
        } else {
            try await fault(client)
        }
    }

    mutating func restart(_ client: SimClient) async throws {
        guard let network else { return }
        try await client.open(network: network, clock: clock, seed: seed)
        trace.append("\(client.name) restarted (incarnation \(client.incarnation))")
    }

    mutating func sync(_ client: SimClient, why: String) async throws {
        guard let engine = client.engine else { return }
        do {
            try await engine.syncNow()
            trace.append("\(client.name) \(why): ok")
            // The records first, then the attachments' bytes, as a started engine does.
            try await engine.transferAttachments()
        } catch is SimCrash {
            trace.append("\(client.name) \(why): crashed")
        } catch {
            trace.append("\(client.name) \(why): \(Self.describe(error))")
        }
        trace += client.reports.takeRecent()
        if client.transport?.dead == true {
            client.crash()
            return
        }
        // The live channel: clients with it up hear of the push and sync (one level deep).
        if why == "sync" {
            for other in clients where other !== client && other.liveUp && other.isUp && !other.partitioned {
                if chance(500) { try await sync(other, why: "live") }
            }
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? SyncEngineError {
            if case let .transport(transport) = error, case .unreachable = transport { return "unreachable" }
            return "\(error)"
        }
        return "\(error)"
    }

    mutating func fault(_ client: SimClient) async throws {
        guard let server, let network else { return }
        let available = SimFault.allCases.filter { faults.contains($0) && $0 != .network }
        guard !available.isEmpty else { return try await sync(client, why: "sync") }
        switch available[random(available.count)] {
        case .network:
            break
        case .crash:
            guard client.isUp else { return try await restart(client) }
            if chance(500) {
                counts.add("fault.crashIdle")
                client.crash()
                trace.append("\(client.name) killed while idle")
            } else {
                client.transport?.crashOnNextPush = true
                try await sync(client, why: "sync (dies at push)")
                if client.isUp { client.transport?.crashOnNextPush = false }
            }
        case .serverRestart:
            counts.add("fault.serverRestart")
            try await server.restart()
            trace.append("server restarted")
        case .snapshotRestore:
            if server.hasSnapshot, chance(500) {
                let newEpoch = chance(500) ? "epoch-\(rng.next())" : nil
                counts.add(newEpoch == nil ? "fault.snapshotRestore" : "fault.snapshotRestoreNewEpoch")
                try await server.restoreSnapshot(newEpoch: newEpoch)
                network.snapshotRestored()
                trace.append("server restored from its snapshot\(newEpoch == nil ? "" : " with a new epoch")")
            } else {
                counts.add("fault.snapshotTaken")
                try await server.takeSnapshot()
                network.snapshotTaken()
                trace.append("server snapshot taken")
            }
        case .compaction:
            // Past the retention window: every cursor from before now is below the horizon.
            clock.advance(milliseconds: 61_000)
            let result = try await server.compact()
            counts.add("fault.compaction")
            trace.append("server compacted to \(result.horizon) (\(result.changesRemoved) changes, \(result.tombstonesRemoved) tombstones)")
        case .revoke:
            let team = ScopeID(rawValue: Self.team)
            // The server's grants (a restored snapshot may have brought an older one back).
            let bobGranted = try await server.service.scopes(user: "bob").scopes.contains { $0.scope == team }
            if bobGranted {
                _ = try await server.service.revoke(user: "alice", scope: team, member: "bob")
                counts.add("fault.revoke")
                trace.append("bob's grant of \(Self.team) revoked")
            } else {
                _ = try await server.service.grant(user: "alice", scope: team, request: GrantRequest(user: "bob"))
                counts.add("fault.regrant")
                trace.append("bob granted \(Self.team) again")
            }
        case .partition:
            client.partitioned.toggle()
            counts.add(client.partitioned ? "fault.partition" : "fault.partitionHealed")
            trace.append("\(client.name) \(client.partitioned ? "partitioned" : "reconnected")")
        case .liveDrop:
            client.liveUp.toggle()
            counts.add(client.liveUp ? "fault.liveReconnected" : "fault.liveDrop")
            trace.append("\(client.name) live channel \(client.liveUp ? "up" : "dropped")")
        }
        _ = network
    }

    // MARK: Workload

    func spaces(of client: SimClient) -> [String?] { [nil, Self.team] }

    mutating func workload(_ client: SimClient) {
        let ops = [
            "insertItem", "insertItem", "updateItem", "updateItem", "deleteItem", "reinsert", "toOne", "manyToMany", "insertList", "insertTag",
            "cascade", "counter", "counter", "largeSave", "tally", "tally", "roster", "roster", "note", "note", "photo",
        ]
        let op = ops[random(ops.count)]
        let space = spaces(of: client)[random(2)]
        let mark = key("m-\(client.name)-")
        let items = ((try? client.fetch(SimItem.self)) ?? []).sorted { $0.key < $1.key }
        let pickItem: SimItem? = items.isEmpty ? nil : items[random(items.count)]
        var detail = ""
        let committed: Bool
        switch op {
        case "insertItem":
            let itemKey = key("i")
            let lists = ((try? client.fetch(SimList.self)) ?? []).filter { $0.space == space }.sorted { $0.key < $1.key }
            let listKey: String? = lists.isEmpty || chance(400) ? nil : lists[random(lists.count)].key
            detail = "\(itemKey) in \(space ?? "private")"
            committed = client.save(mark: mark) { context in
                let item = SimItem(key: itemKey, title: "new", space: space)
                context.insert(item)
                if let listKey, let list = try context.fetch(FetchDescriptor<SimList>()).first(where: { $0.key == listKey }) { item.list = list }
            }
        case "updateItem":
            guard let target = pickItem?.key else { return }
            let title = "t\(random(5))"
            let count = random(10)
            let which = random(3)
            detail = "\(target)"
            committed = client.save(mark: mark) { context in
                guard let item = try context.fetch(FetchDescriptor<SimItem>()).first(where: { $0.key == target }) else { return }
                if which != 1 { item.title = title }
                if which != 0 { item.count = count }
                if which == 2 { item.done.toggle() }
            }
        case "deleteItem":
            guard let target = pickItem else { return }
            let targetKey = target.key
            deletedItems.append((targetKey, target.space))
            detail = targetKey
            committed = client.save(mark: mark) { context in
                guard let item = try context.fetch(FetchDescriptor<SimItem>()).first(where: { $0.key == targetKey }) else { return }
                context.delete(item)
            }
        case "reinsert":
            guard !deletedItems.isEmpty else { return }
            let again = deletedItems[random(deletedItems.count)]
            detail = again.key
            committed = client.save(mark: mark) { context in
                if let existing = try context.fetch(FetchDescriptor<SimItem>()).first(where: { $0.key == again.key }) {
                    existing.title = "again"
                } else {
                    context.insert(SimItem(key: again.key, title: "again", space: again.space))
                }
            }
        case "toOne":
            guard let target = pickItem else { return }
            let targetKey = target.key
            let lists = ((try? client.fetch(SimList.self)) ?? []).filter { $0.space == target.space }.sorted { $0.key < $1.key }
            let listKey: String? = lists.isEmpty || chance(250) ? nil : lists[random(lists.count)].key
            detail = "\(targetKey) → \(listKey ?? "nil")"
            committed = client.save(mark: mark) { context in
                guard let item = try context.fetch(FetchDescriptor<SimItem>()).first(where: { $0.key == targetKey }) else { return }
                item.list = try listKey.flatMap { key in try context.fetch(FetchDescriptor<SimList>()).first { $0.key == key } }
            }
        case "manyToMany":
            guard let target = pickItem else { return }
            let targetKey = target.key
            let tags = ((try? client.fetch(SimTag.self)) ?? []).filter { $0.space == target.space }.sorted { $0.key < $1.key }
            guard !tags.isEmpty else { return }
            let tagKey = tags[random(tags.count)].key
            detail = "\(targetKey) ± \(tagKey)"
            committed = client.save(mark: mark) { context in
                guard let item = try context.fetch(FetchDescriptor<SimItem>()).first(where: { $0.key == targetKey }),
                    let tag = try context.fetch(FetchDescriptor<SimTag>()).first(where: { $0.key == tagKey })
                else { return }
                if item.tags.contains(where: { $0.key == tagKey }) {
                    item.tags.removeAll { $0.key == tagKey }
                } else {
                    item.tags.append(tag)
                }
            }
        case "insertList":
            let listKey = key("l")
            detail = listKey
            committed = client.save(mark: mark) { context in context.insert(SimList(key: listKey, name: "list", space: space)) }
        case "insertTag":
            let tagKey = key("t")
            detail = tagKey
            committed = client.save(mark: mark) { context in context.insert(SimTag(key: tagKey, label: "tag", space: space)) }
        case "cascade":
            let lists = ((try? client.fetch(SimList.self)) ?? []).sorted { $0.key < $1.key }
            guard !lists.isEmpty else { return }
            let list = lists[random(lists.count)]
            let listKey = list.key
            for item in list.items { deletedItems.append((item.key, item.space)) }
            detail = listKey
            committed = client.save(mark: mark) { context in
                guard let list = try context.fetch(FetchDescriptor<SimList>()).first(where: { $0.key == listKey }) else { return }
                context.delete(list)
            }
        case "counter":
            let counters = ((try? client.fetch(SimCounter.self)) ?? []).sorted { $0.key < $1.key }
            if counters.isEmpty || chance(150) {
                let counterKey = key("k")
                detail = "new \(counterKey)"
                committed = client.save(mark: mark) { context in context.insert(SimCounter(key: counterKey, value: 0, space: space)) }
            } else {
                let counterKey = counters[random(counters.count)].key
                detail = counterKey
                committed = client.save(mark: mark) { context in
                    guard let counter = try context.fetch(FetchDescriptor<SimCounter>()).first(where: { $0.key == counterKey }) else { return }
                    counter.value += 1
                }
            }
        case "tally":
            let tallies = ((try? client.fetch(SimTally.self)) ?? []).sorted { $0.key < $1.key }
            if tallies.isEmpty || chance(100) {
                let tallyKey = key("y")
                detail = "new \(tallyKey)"
                committed = client.save(mark: mark) { context in context.insert(SimTally(key: tallyKey, space: space)) }
            } else {
                // Mostly an increment; sometimes the counter set outright (a difference too).
                let tallyKey = tallies[random(tallies.count)].key
                let outright: Int? = chance(150) ? random(5) : nil
                let step = 1 + random(3)
                var delta = 0
                committed = client.save(mark: mark) { context in
                    guard let tally = try context.fetch(FetchDescriptor<SimTally>()).first(where: { $0.key == tallyKey }) else { return }
                    let before = tally.hits
                    tally.hits = outright ?? before + step
                    delta = tally.hits - before
                }
                detail = "\(tallyKey) \(outright.map { "= \($0)" } ?? "+= \(step)") (\(delta >= 0 ? "+" : "")\(delta))"
                if committed, delta != 0 { tallyLedger.append((tally: tallyKey, mark: mark, delta: delta)) }
            }
        case "roster":
            let rosters = ((try? client.fetch(SimRoster.self)) ?? []).sorted { $0.key < $1.key }
            let pool = ["u1", "u2", "u3", "u4", "u5"]
            if rosters.isEmpty || chance(100) {
                let rosterKey = key("r")
                let initial = chance(500) ? [pool[random(pool.count)], pool[random(pool.count)]] : []
                detail = "new \(rosterKey) \(initial)"
                committed = client.save(mark: mark) { context in
                    let roster = SimRoster(key: rosterKey, space: space)
                    roster.members = initial
                    context.insert(roster)
                }
            } else {
                // Adds and removes of a small pool's members, so that devices add and remove
                // the same ones concurrently; sometimes the whole array rewritten.
                let rosterKey = rosters[random(rosters.count)].key
                let added = pool[random(pool.count)]
                let removedAt = random(8)
                let rewrite: [String]? = chance(100) ? [pool[random(pool.count)], pool[random(pool.count)]] : nil
                var shown: [String] = []
                committed = client.save(mark: mark) { context in
                    guard let roster = try context.fetch(FetchDescriptor<SimRoster>()).first(where: { $0.key == rosterKey }) else { return }
                    if let rewrite {
                        roster.members = rewrite
                    } else {
                        if removedAt < roster.members.count { roster.members.remove(at: removedAt) }
                        if removedAt % 2 == 0 { roster.members.append(added) }
                    }
                    shown = roster.members
                }
                detail = "\(rosterKey) \(rewrite.map { "= \($0)" } ?? "-#\(removedAt) +\(removedAt % 2 == 0 ? added : "-")") → \(shown)"
            }
        case "note":
            let notes = ((try? client.fetch(SimNote.self)) ?? []).sorted { $0.key < $1.key }
            if notes.isEmpty || chance(100) {
                let noteKey = key("n")
                let typed = glyphs(random(3))
                detail = "new \(noteKey) \(String(typed).debugDescription)"
                committed = client.save(mark: mark) { context in context.insert(SimNote(key: noteKey, body: String(typed), space: space)) }
                if committed { noteLedger.append((noteKey, mark, typed, [])) }
            } else {
                // One edit per save, so that it is one stretch: typing a few characters at a
                // place, deleting a few, or (rarely) writing the text anew.
                let noteKey = notes[random(notes.count)].key
                let kind = random(10)
                let typed = kind < 6 ? glyphs(1 + random(3)) : kind == 9 ? glyphs(random(3)) : []
                let position = random(1000)
                let length = 1 + random(3)
                var deleted: [Character] = []
                var shown = ""
                committed = client.save(mark: mark) { context in
                    guard let note = try context.fetch(FetchDescriptor<SimNote>()).first(where: { $0.key == noteKey }) else { return }
                    var characters = Array(note.body)
                    if kind == 9 {
                        deleted = characters
                        characters = typed
                    } else if typed.isEmpty {
                        if !characters.isEmpty {
                            let start = position % characters.count
                            let end = min(characters.count, start + length)
                            deleted = Array(characters[start..<end])
                            characters.removeSubrange(start..<end)
                        }
                    } else {
                        characters.insert(contentsOf: typed, at: position % (characters.count + 1))
                    }
                    note.body = String(characters)
                    shown = note.body
                }
                let edit =
                    kind == 9
                    ? "= \(String(typed).debugDescription)"
                    : typed.isEmpty ? "-\(String(deleted).debugDescription)" : "+\(String(typed).debugDescription)"
                detail = "\(noteKey) \(edit) → \(shown.debugDescription)"
                if committed { noteLedger.append((noteKey, mark, typed, deleted)) }
            }
        case "photo":
            // Bytes no other save wrote, over 128 KiB: a blob of their own.
            photoSerial += 1
            var bytes = [UInt8](repeating: 0, count: 131_073 + random(4096))
            var generator = SyncRandom(seed: seed &* 31 &+ UInt64(photoSerial))
            for index in stride(from: 0, to: bytes.count, by: 8) {
                let word = generator.next()
                for offset in 0..<min(8, bytes.count - index) { bytes[index + offset] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(offset))) }
            }
            let image = Data(bytes)
            let photos = ((try? client.fetch(SimPhoto.self)) ?? []).sorted { $0.key < $1.key }
            if photos.isEmpty || chance(400) {
                let photoKey = key("p")
                detail = "new \(photoKey) \(SimState.digest(image).prefix(8)) in \(space ?? "private")"
                committed = client.save(mark: mark) { context in context.insert(SimPhoto(key: photoKey, image: image, space: space)) }
            } else {
                let photoKey = photos[random(photos.count)].key
                detail = "\(photoKey) = \(SimState.digest(image).prefix(8))"
                committed = client.save(mark: mark) { context in
                    guard let photo = try context.fetch(FetchDescriptor<SimPhoto>()).first(where: { $0.key == photoKey }) else { return }
                    photo.image = image
                }
            }
        default:  // largeSave
            let first = nextKey + 1
            var keys: [String] = []
            for _ in 0..<40 { keys.append(key("i")) }
            detail = "40 items from i\(first) in \(space ?? "private")"
            committed = client.save(mark: mark) { context in
                for itemKey in keys { context.insert(SimItem(key: itemKey, title: "bulk", space: space)) }
            }
        }
        counts.add("op.\(op)")
        trace.append("\(client.name) \(op) \(detail): \(committed ? "saved \(mark)" : "save failed")")
    }

    // MARK: Healing and checks

    /// Heals every fault, delivers what the network held, and syncs every client until
    /// nothing is pending (bounded: not drained in time is a liveness failure).
    mutating func heal() async throws {
        guard let network else { return }
        network.faultPerMille = 0
        while !network.held.isEmpty { await network.deliverHeld() }
        for client in clients {
            client.partitioned = false
            client.liveUp = true
            if !client.isUp { try await restart(client) }
        }
        trace.append("healed")
        var quiet = 0
        for _ in 0..<12 {
            for client in clients { try await sync(client, why: "drain") }
            var pending = 0
            for client in clients {
                pending += (try? await client.engine?.pendingChangeCount()) ?? 0
                // Attachments still to upload or to download.
                pending += (try? client.container?.pendingSyncAttachmentUploads().count) ?? 0
                pending += (try? client.container?.missingSyncAttachments().count) ?? 0
            }
            quiet = pending == 0 ? quiet + 1 : 0
            if quiet >= 2 { return }
        }
        failures.append("liveness: clients still had pending changes or attachments after 12 drain rounds")
    }

    mutating func check() async throws {
        guard let server else { return }
        var serverViews: [String: (lines: [String], records: [String: (scope: String, fields: [String: SyncValue], links: [String: Set<String>])])] =
            [:]
        for user in ["alice", "bob"] {
            probes += 1
            serverViews[user] = try await SimState.server(server.service, user: user, probe: "probe-\(user)-\(probes)")
        }
        var granted: [String: Set<String>] = [:]
        for user in ["alice", "bob"] {
            granted[user] = Set(try await server.service.scopes(user: user).scopes.map(\.scope.rawValue))
        }
        // Every mark the server holds, whoever may read it (alice and bob between them see
        // every scope the workload writes).
        var serverMarks: Set<String> = []
        for view in serverViews.values {
            for (id, record) in view.records where id.hasPrefix("m-") {
                _ = record
                serverMarks.insert(id)
            }
        }
        for client in clients {
            guard let view = serverViews[client.user] else { continue }
            // 1. Convergence.
            let local = try SimState.client(client)
            if local != view.lines {
                let missing = view.lines.filter { !local.contains($0) }.prefix(4)
                let extra = local.filter { !view.lines.contains($0) }.prefix(4)
                failures.append(
                    "convergence: \(client.name) (\(client.user)) differs from the server: server-only \(Array(missing)), client-only \(Array(extra))"
                )
            }
            // 2 and 9. Every committed save is on the server or was reported rejected.
            for mark in client.committedMarks {
                let onServer = serverMarks.contains(mark)
                let rejected = client.reports.wasRejected(entity: "SimMark", recordID: mark)
                if !onServer && !rejected {
                    failures.append("lost write: \(client.name)'s save \(mark) is neither on the server nor reported rejected")
                }
                if onServer && rejected {
                    failures.append("false rejection: \(client.name)'s save \(mark) was reported rejected but is on the server")
                }
            }
            // 11. No record of a scope the user is not granted.
            let allowed = granted[client.user] ?? []
            for entry in try client.recordEntries() {
                let scope = entry.scope ?? "user:\(client.user)"
                if !allowed.contains(scope) { failures.append("scope leak: \(client.name) holds \(entry.entity) \(entry.recordID) of \(scope)") }
            }
        }
        // 15a. A counter is the sum of the contributions of the saves the server applied
        // (their marks are on the server): none lost, none counted twice.
        var expected: [String: Int] = [:]
        for entry in tallyLedger where serverMarks.contains(entry.mark) { expected[entry.tally, default: 0] += entry.delta }
        var checkedTallies: Set<String> = []
        for view in serverViews.values {
            for (id, record) in view.records where id.hasPrefix("y") && !checkedTallies.contains(id) {
                checkedTallies.insert(id)
                counts.add("check.tally")
                let want = SyncValue.int(Int64(expected[id] ?? 0))
                if record.fields["hits"] != want {
                    failures.append(
                        "counter: \(id) holds \(SimState.render(record.fields["hits"])) on the server, the applied contributions sum to \(SimState.render(want))"
                    )
                }
            }
        }
        // 15b. A set is what an observed-remove set fed the changes the server applied, in the
        // server's order, holds, in the same order: on the server and on every client.
        var models: [String: SimRosterModel] = [:]
        for change in (network?.rosterChanges ?? []).enumerated().sorted(by: { ($0.element.txn, $0.offset) < ($1.element.txn, $1.offset) }) {
            models[change.element.roster, default: SimRosterModel()].apply(change.element)
        }
        // 15c. Whatever the algorithm: since a roster's last delete, an element the server
        // holds was added by an applied change, and one that an applied change added and no
        // applied change removed is held (no acknowledged add is lost).
        var sinceDelete: [String: (added: Set<String>, removed: Set<String>)] = [:]
        for change in (network?.rosterChanges ?? []).enumerated().sorted(by: { ($0.element.txn, $0.offset) < ($1.element.txn, $1.offset) }) {
            let change = change.element
            if change.op == .delete {
                sinceDelete[change.roster] = nil
                continue
            }
            sinceDelete[change.roster, default: ([], [])].added.formUnion(change.adds)
            sinceDelete[change.roster, default: ([], [])].removed.formUnion(change.removes)
        }
        var checkedRosters: Set<String> = []
        for view in serverViews.values {
            for (id, record) in view.records where id.hasPrefix("r") && !checkedRosters.contains(id) {
                checkedRosters.insert(id)
                counts.add("check.roster")
                var held: Set<String> = []
                if case let .json(text)? = record.fields["members"] { held = Set(SetElements.split(text) ?? []) }
                let history = sinceDelete[id] ?? ([], [])
                if !held.isSubset(of: history.added) {
                    failures.append("set: \(id) holds \(held.subtracting(history.added).sorted()) on the server, which no applied change added")
                }
                let kept = history.added.subtracting(history.removed)
                if !kept.isSubset(of: held) {
                    failures.append("set: \(id) lost \(kept.subtracting(held).sorted()), added by applied changes and removed by none")
                }
                let want = SimState.members((models[id]?.elements ?? []).map { String($0.dropFirst().dropLast()) })
                if SimState.render(record.fields["members"]) != want {
                    failures.append("set: \(id) holds \(SimState.render(record.fields["members"])) on the server, the applied changes give \(want)")
                }
            }
        }
        for client in clients {
            for roster in (try? client.fetch(SimRoster.self)) ?? [] {
                let want = SimState.members((models[roster.key]?.elements ?? []).map { String($0.dropFirst().dropLast()) })
                if SimState.members(roster.members) != want {
                    failures.append(
                        "set: \(client.name) shows \(roster.key) as \(SimState.members(roster.members)), the applied changes give \(want)")
                }
            }
        }
        // 15d. A text holds every character an applied save typed and no applied save deleted,
        // exactly once, and nothing else: no acknowledged insertion lost or repeated, no
        // acknowledged deletion undone, on the server and on every client.
        var typed: [String: Set<Character>] = [:]
        var deleted: [String: Set<Character>] = [:]
        for entry in noteLedger where serverMarks.contains(entry.mark) {
            typed[entry.note, default: []].formUnion(entry.typed)
            deleted[entry.note, default: []].formUnion(entry.deleted)
        }
        func checkText(_ body: String, of note: String, on replica: String) {
            counts.add("check.text")
            let held = Array(body)
            let heldSet = Set(held)
            if heldSet.count != held.count {
                let repeated = Dictionary(grouping: held, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
                failures.append("text: \(note) holds \(String(repeated).debugDescription) more than once on \(replica)")
            }
            let notTyped = heldSet.subtracting(typed[note] ?? [])
            if !notTyped.isEmpty {
                failures.append("text: \(note) holds \(String(notTyped.sorted()).debugDescription) on \(replica), which no applied save typed")
            }
            let undeleted = heldSet.intersection(deleted[note] ?? [])
            if !undeleted.isEmpty {
                failures.append("text: \(note) holds \(String(undeleted.sorted()).debugDescription) on \(replica), which an applied save deleted")
            }
            let lost = (typed[note] ?? []).subtracting(deleted[note] ?? []).subtracting(heldSet)
            if !lost.isEmpty {
                failures.append(
                    "text: \(note) lost \(String(lost.sorted()).debugDescription) on \(replica), typed by an applied save and deleted by none")
            }
        }
        var checkedNotes: Set<String> = []
        for view in serverViews.values {
            for (id, record) in view.records where id.hasPrefix("n") && !checkedNotes.contains(id) {
                checkedNotes.insert(id)
                guard case let .string(body)? = record.fields["body"] else {
                    failures.append("text: \(id) has no body on the server")
                    continue
                }
                checkText(body, of: id, on: "the server")
            }
        }
        for client in clients {
            for note in (try? client.fetch(SimNote.self)) ?? [] { checkText(note.body, of: note.key, on: client.name) }
        }
        // 16. Attachments follow their records: every photo a client holds shows the bytes of
        // the blob the server's record names, not an absent value.
        for client in clients {
            guard let view = serverViews[client.user] else { continue }
            for photo in (try? client.fetch(SimPhoto.self)) ?? [] {
                guard case let .blob(blob)? = view.records[photo.key]?.fields["image"] else { continue }
                counts.add("check.blob")
                guard let image = photo.image else {
                    failures.append("attachment: \(photo.key)'s blob \(blob.digest.prefix(12)) never arrived on \(client.name)")
                    continue
                }
                if SimState.digest(image) != blob.digest || Int64(image.count) != blob.size {
                    failures.append("attachment: \(photo.key) on \(client.name) holds other bytes than the blob \(blob.digest.prefix(12))")
                }
            }
        }
        // 3 and 4. Exactly once, in order.
        failures += try SimState.applications(server)
        if !failures.isEmpty { failures.append("replay: swift run -c release osd-simulate --seed \(seed)") }
        for client in clients {
            trace.append("final \(client.name): \(try SimState.client(client).count) records, hash \(Self.hash(try SimState.client(client)))")
        }
    }

    static func hash(_ lines: [String]) -> String {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in lines.joined(separator: "\n").utf8 {
            value ^= UInt64(byte)
            value = value &* 0x0000_0100_0000_01B3
        }
        return String(value, radix: 16)
    }
}
