import Foundation
import Testing

/// Runs the built `osd-simulate` command (it restarts itself with deterministic hashing, which
/// Swift only takes from the environment at launch: a schedule is the same in every process).
enum SimulateCommand {
    struct Output: Sendable {
        var lines: [String]
        var status: Int32

        /// The seeds the run reported as failing.
        var failingSeeds: [UInt64] {
            lines.compactMap { line in
                guard line.hasPrefix("seed "), line.contains(" FAILED") else { return nil }
                return UInt64(line.dropFirst(5).prefix { $0.isNumber })
            }
        }

        /// The `counts:` section of a run: fault, operation and event counts.
        var counts: [String: Int] {
            var counts: [String: Int] = [:]
            for line in lines where line.hasPrefix("  ") && line.contains(": ") && !line.contains("replay") {
                let parts = line.trimmingCharacters(in: .whitespaces).split(separator: ":", maxSplits: 1)
                if parts.count == 2, let value = Int(parts[1].trimmingCharacters(in: .whitespaces)) { counts[String(parts[0])] = value }
            }
            return counts
        }
    }

    static func executable() throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("osd-simulate")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = root.appendingPathComponent(".build/debug/osd-simulate")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw CocoaError(
                .fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "osd-simulate is not built (swift build --build-tests builds it)"])
        }
        return candidate
    }

    /// How long one run may take: CI's sweep takes about two minutes in a debug build; a run
    /// past this is stuck (a schedule that never ends), and is killed so that the test fails.
    static let deadline: Duration = .seconds(20 * 60)

    /// Runs the command with `arguments` to its end, or kills it at ``deadline``. Its output goes
    /// to a file, not a pipe, and its exit is awaited by polling: no thread of the tests' pool
    /// blocks for the minutes a sweep takes, and no other process that came to hold a copy of a
    /// pipe can keep the read from ending.
    static func run(_ arguments: [String]) async throws -> Output {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("osd-simulate-\(UUID().uuidString).out")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot create \(output.path)"])
        }
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = FileHandle.nullDevice
        try process.run()
        try handle.close()
        let start = ContinuousClock.now
        while process.isRunning {
            guard ContinuousClock.now - start < deadline else {
                kill(process.processIdentifier, SIGKILL)
                Issue.record("osd-simulate \(arguments.joined(separator: " ")) ran past \(deadline) and was killed")
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        process.waitUntilExit()
        let data = try Data(contentsOf: output)
        return Output(lines: String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init), status: process.terminationStatus)
    }

    /// CI's sweep: `seeds` schedules of `steps` steps from seed 1, in two processes at once.
    static func sweep(seeds: Int, steps: Int) async throws -> [Output] {
        let half = seeds / 2
        async let first = run(["--seeds", "\(half)", "--first-seed", "1", "--steps", "\(steps)"])
        async let second = run(["--seeds", "\(seeds - half)", "--first-seed", "\(half + 1)", "--steps", "\(steps)"])
        return try await [first, second]
    }
}

/// The one CI sweep, shared by the tests that read it.
let ciSweep = Task { try await SimulateCommand.sweep(seeds: SimulatorTests.ciSeeds, steps: SimulatorTests.ciSteps) }

@Suite("Deterministic sync simulator")
struct SimulatorTests {
    static let ciSeeds = 300
    static let ciSteps = 40

    /// Seeds of the CI sweep (300 seeds of 40 steps) that fail on bugs the simulator found and
    /// that are not fixed yet, kept out of the sweep's verdict (the checks stay as they are):
    /// none at the moment. (63 and 267, the cascade-delete divergence, pass since the server
    /// enforces the schema's delete rules. 209, a revoke and
    /// re-grant with a pending save in the scope, passes since masked records outlive the purge.) (Restores that lost acknowledged
    /// saves pass since the engine resends them; 65, 81, 148, 190 and 240, cursors that
    /// survived a plain-copy restore, pass since cursors carry the log mark of their position.)
    static let knownFailing: Set<UInt64> = []

    @Test("the same seed gives the same trace, in two processes")
    func sameSeedSameTrace() async throws {
        let first = try await SimulateCommand.run(["--seed", "3", "--steps", "40"])
        let second = try await SimulateCommand.run(["--seed", "3", "--steps", "40"])
        #expect(first.lines.count > 40)
        #expect(first.lines == second.lines)
        let other = try await SimulateCommand.run(["--seed", "4", "--steps", "40"])
        #expect(other.lines != first.lines)
    }

    @Test("CI's sweep of seeded schedules passes, apart from the known-failing seeds")
    func sweepPasses() async throws {
        let outputs = try await ciSweep.value
        for output in outputs {
            #expect(output.lines.last?.hasSuffix("failed") == true)
        }
        let failing = Set(outputs.flatMap(\.failingSeeds))
        let unexpected = failing.subtracting(Self.knownFailing).sorted()
        #expect(unexpected == [], "new failing seeds: replay each with swift run -c release osd-simulate --seed S --steps \(Self.ciSteps)")
    }

    @Test("over the sweep, every fault and every workload operation happens")
    func everyFaultAndOperationHappens() async throws {
        let outputs = try await ciSweep.value
        var counts: [String: Int] = [:]
        for output in outputs {
            for (key, value) in output.counts { counts[key, default: 0] += value }
        }
        let expected = [
            "fault.push.dropRequest", "fault.push.dropResponse", "fault.push.duplicate", "fault.push.delay",
            "fault.pull.dropRequest", "fault.pull.dropResponse", "fault.pull.duplicate", "fault.pull.delay",
            "fault.reordered", "fault.crashIdle", "fault.crashMidPush", "fault.serverRestart", "fault.snapshotTaken",
            "fault.snapshotRestore", "fault.snapshotRestoreNewEpoch", "fault.compaction", "fault.revoke", "fault.regrant", "fault.partition",
            "fault.partitionedRequest", "fault.liveDrop",
            "op.insertItem", "op.updateItem", "op.deleteItem", "op.reinsert", "op.toOne", "op.manyToMany",
            "op.insertList", "op.insertTag", "op.cascade", "op.counter", "op.largeSave", "op.tally", "check.tally", "op.roster",
            "check.roster", "op.photo", "check.blob", "fault.crashMidUpload", "fault.upload.dropRequest", "fault.download.dropResponse",
            "event.rejected.stale", "event.conflict", "event.reset.historyCompacted", "event.revoked",
        ]
        for key in expected {
            #expect((counts[key] ?? 0) > 0, "\(key) never happened")
        }
    }

    @Test(
        "seeds of bugs the simulator found and that were fixed pass",
        arguments: [
            // A record deleted locally and on the server came back from older field shadows
            // (resurrected row, or a queue wedged on "SimItem.key has no value").
            "--seed 24 --faults none", "--seed 27 --faults none",
            // A record deleted and inserted again, both pulled in one page, stayed deleted.
            "--seed 13 --faults none", "--seed 40 --steps 40", "--seed 220 --steps 40",
            // A rejected save that also touched another record (the inverse side of a link):
            // the server returned no state for it, so the client deleted it locally.
            "--seed 266 --steps 40",
            // A record pushed by this client, then deleted by another (or in a scope revoked)
            // before this client's first download, stayed on this client.
            "--seed 90 --steps 40", "--seed 263 --steps 40", "--seed 153 --steps 40", "--seed 10 --faults none",
            // The server restored from an older copy of its database: acknowledged saves the copy
            // lost were neither resent nor reported (the engine now keeps and resends them).
            "--seed 4 --steps 40", "--seed 10 --steps 40", "--seed 53 --steps 40", "--seed 84 --steps 40",
            // The server restored from a plain copy of its database (same epoch), then written
            // past a client's cursor: the cursor was not past the head, so the client continued
            // it and never received what the new log holds below it.
            "--seed 65 --steps 40", "--seed 81 --steps 40", "--seed 148 --steps 40", "--seed 190 --steps 40", "--seed 240 --steps 40",
            // bob's grant revoked and given again while his save in that scope was pending: the
            // queue wedged on "SimItem.key has no value" (a partial upsert of a purged record);
            // 120 is the leak a first fix made (a record kept for a mutation already applied).
            "--seed 209 --steps 40", "--seed 120 --steps 40",
            // A list deleted (cascade) on one client while another pointed an item at it (or
            // inserted one into it): the server kept the item, the other clients deleted it
            // locally by cascade. The server now enforces the schema's delete rules.
            "--seed 34 --faults none", "--seed 63 --steps 40", "--seed 267 --steps 40",
            // A rejected save whose answer was lost (answer dropped, or the client killed before
            // recording it): compaction deleted the stored answer by age, and the resend was told
            // "applied". Answers are now kept until the client acknowledges them.
            // 122, 206, 210, 800 and 824 are the same loss, seen first as a client keeping records
            // the server refused.
            "--seed 52 --steps 60", "--seed 180 --steps 60", "--seed 122 --steps 60", "--seed 206 --steps 60",
            "--seed 210 --steps 60", "--seed 800 --steps 60", "--seed 824 --steps 60",
            // An insert pulled for a record with no local row while pending mutations masked some
            // of its fields (deleted and inserted again on the server under a pending update; or
            // an insert resent after a restore, its row removed by a pulled delete): the row was
            // made without the masked fields and every pull wedged on "… has no value".
            "--seed 58", "--seed 149", "--seed 187",
            // A reset settled a record's rejected edit and then its delete: the rejection's
            // "exists" shadow was written back as a row without values (queue wedged).
            "--seed 253", "--seed 326",
            // The server restored from a plain copy its cursor did not pass: saves it had answered
            // after the copy were never resent (no reset), and stayed pending forever.
            "--seed 953",
            // A blob the server's restore lost, whose record its writer sent again without the
            // bytes (removed with the record by a revoke): it never arrived anywhere.
            "--seed 1526", "--seed 1553",
            // A save resent after a restore, settled: its values matched the server's, so the
            // server's were not written, while the model showed a later edit the restore had lost.
            "--seed 181", "--seed 520",
            // An edit rejected as recordNotFound (a restored server that had not the record yet),
            // settled by a download holding the record again: the rollback deleted it locally.
            "--seed 161", "--seed 234",
            // A cursor issued at a fully compacted head carried no log mark, so a plain-copy
            // restore's log written again past its position was continued: the changes below it
            // (a counter's insert) were never sent, and the counter's next update wedged the pull.
            "--seed 311",
            // A reset after a restore settled a counter's rejected increment: the value pulled
            // before the restore, kept aside at a version higher than the restored server's, won
            // over the snapshot's and the rejection's, and was written back.
            "--seed 143",
            // A record inserted, linked and deleted on the server, pulled in one page: the link,
            // applied after the batch's delete, brought the deleted record back.
            "--seed 895", "--seed 899", "--seed 941",
            // A pulled insert (a reset's snapshot; a resent insert after a restore) carries the
            // record's whole link sets, but was applied as additions: links the server no longer
            // had stayed on the client.
            "--seed 170", "--seed 494", "--seed 825",
            // An item pulled with its insert and its delete in one page, pointing at a local list:
            // linking the deleted model put it back through the list's inverse (client-only item).
            "--seed 262", "--seed 634", "--seed 811",
            // A reset removed a list the restored server lacked; its local cascade deleted an item
            // the snapshot held (its reference to the list a pending edit): the queue wedged.
            "--seed 136",
            // A cursor of the history a plain-copy restore lost, at exactly the horizon of the
            // restored log written again and compacted: no mark was left there to check, so it was
            // continued and the changes below it never sent (1087: records missing; 1619: the
            // queue wedged on a field with no value).
            "--seed 1087", "--seed 1619",
            // An increment rejected as recordNotFound by a restored server before the counter's
            // creator resent it, answered again from the server's stored results after this client
            // had pulled the resent counter in an earlier download: the rollback deleted it.
            "--seed 680",
            // A push held by the network and delivered after a restore was decided again by the
            // restored server, with another answer than the one the client held (applied, then
            // rejected; or colliding with the ids renumbered after the restore): the restored
            // server now refuses pushes made against another epoch (`staleEpoch`).
            "--seed 153", "--seed 603", "--seed 1955",
            // A newly granted scope's snapshot, read after another client deleted records this
            // client had pushed into the scope (or edited and deleted there): the delete is in the
            // log before the snapshot and never sent, so the records stayed (2538) or a pulled
            // field shadowed under the edit was written back into a new row and wedged the queue
            // (2401).
            "--seed 2538", "--seed 2401",
            // An item's pending move into a list another client deleted: the pulled delete's local
            // cascade deleted the item the server keeps; the move's rollback then wedged the queue.
            "--seed 1286", "--seed 1912", "--seed 2116",
            // A record deleted and inserted again on the server under pending edits: the insert
            // was applied whole over them, and settling the edits (applied) wrote nothing.
            "--seed 420",
            // An edit pushed while bob's grant was revoked, settled after a re-grant his pulls never
            // saw revoked: the rejection (no server state) deleted the record the server holds.
            "--seed 694",
            // A push held by the network past a restore from a plain copy (same epoch) was decided
            // by the restored server after the client had been told it was rejected: a push whose
            // cursor is past the head or sees another change at its position is `staleEpoch` too.
            "--seed 2458",
            // A delete pushed while bob's grant was revoked (rejected, no server state), settled
            // after a re-grant his pulls never saw revoked, in a page holding another client's edit
            // of the record: the edit's fields alone were written into a new row, and every pull
            // failed on a field with no value.
            "--seed 3375",
            // A push sent without a cursor (bob's first download not finished), held by the
            // network and delivered after a restore with a new epoch: no epoch fence, so the
            // restored server applied a save the client had been told was rejected. The engine now
            // pushes only with a cursor.
            "--seed 6203",
            // Listed as lost writes by the release sweeps of 3001-6000 and 6001-9472; on this main
            // they pass alone (debug and release) and inside sweeps from 3001 and 6001, also with
            // the descriptor-leak fix (f530cf9) taken out. Kept as regression seeds.
            "--seed 4795", "--seed 8775",
            // A list bob pushed into the team scope granted again, revoked before his download of
            // the scope completed: his cursor never held it, so no revoke named it and the list
            // stayed. Pull pages now say which scopes the cursor holds.
            "--seed 9243",
            // An item c0 filed in list l9, pending while a reset whose snapshot lacked l9 deleted
            // it locally (no cascade: the item's reference was cleared without a mutation); l9
            // resent, the insert was accepted with list l9, and settling it skipped the value as
            // equal to the mutation's own, though the model no longer showed it.
            "--seed 3617",
            // Bob's edit, refused as stale while the scope was granted again for a moment, settled
            // after it was revoked once more and a reset had removed the record: the rollback
            // made a row of the edited field alone, and every pull failed on a field with no value.
            "--seed 3032",
            // A record this client inserted, pulled with another client's delete while the insert
            // was unanswered; the delete settled while a later edit of the record was pending, whose
            // refusal (recordDeleted) then wrote the deleted row's masked field back as a row.
            "--seed 3500",
            // A title that lost to a later write of the value the field already held: that write
            // logged nothing, so the losing client kept showing its own title. A losing write is
            // now logged with the value that won.
            "--seed 3111", "--seed 9896",
            // A tag link kept pending while the tag had no local row, removed by a rejection's
            // rollback in the batch that brought the tag: linking the pending reference when the
            // tag arrived brought the link back.
            "--seed 6469",
            // A tally inserted at 0 and incremented, both settled by a download whose total was 0:
            // the insert's value was taken as what the model showed, and it kept the increment.
            "--seed 5741",
            // A push held by the network past a restore from a plain copy whose log reached its
            // cursor: decided there, it contradicted the answer the client held from the lost
            // history (rejected after "applied", applied after "rejected"). A push whose cursor
            // predates the server's start is now refused.
            "--seed 5203", "--seed 7916", "--seed 8451",
        ])
    func fixedBugSeeds(arguments: String) async throws {
        let output = try await SimulateCommand.run(arguments.split(separator: " ").map(String.init))
        #expect(output.lines.last?.hasSuffix(" passed") == true, "\(output.lines.suffix(4))")
    }
}
