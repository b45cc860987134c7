import Foundation
import OpenSwiftData
import Testing

@Suite("Sync capture of many-to-many links")
struct SyncLinkTests {
    private func container() throws -> ModelContainer {
        let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: syncStoreURL()))
        try container.enableSyncCapture(SyncCaptureConfiguration(SyncProject.self, SyncTask.self, SyncUser.self, SyncLabel.self))
        return container
    }

    /// The link changes of an entry, as (owner record, relationship, added, removed).
    private func links(_ entry: SyncLogEntry) -> [(String, String, Set<String>, Set<String>)] {
        entry.changes.flatMap { change in change.links.map { (change.recordID, $0.relationship, Set($0.added), Set($0.removed)) } }
    }

    @Test("links are logged as additions and removals by record id, on the side that writes the join table, not as snapshots")
    func additionsAndRemovals() throws {
        let container = try container()
        let context = ModelContext(container)
        let task = SyncTask(title: "t")
        let red = SyncLabel(name: "red")
        let blue = SyncLabel(name: "blue")
        context.insert(task)
        context.insert(red)
        context.insert(blue)
        task.labels = [red]
        try context.save()
        let ids = try [task.persistentModelID, red.persistentModelID, blue.persistentModelID].map {
            try #require(try container.syncRecordID(for: $0))
        }
        let (taskID, redID, blueID) = (ids[0], ids[1], ids[2])

        var entries = try container.syncLogEntries()
        let inserted = links(entries[0])
        #expect(inserted.count == 1)
        let (owner, relationship, added, removed) = try #require(inserted.first)
        // Whichever side writes the join table records the link.
        let taskOwns = relationship == "labels"
        #expect(taskOwns ? owner == taskID : (owner == redID && relationship == "tasks"))
        #expect(added == [taskOwns ? redID : taskID])
        #expect(removed.isEmpty)

        // Add blue, remove red: two owners' (or one owner's) additions and removals, nothing else.
        task.labels = [blue]
        try context.save()
        entries = try container.syncLogEntries(after: 1)
        let changed = links(entries[0])
        if taskOwns {
            #expect(changed.count == 1)
            #expect(changed.first?.2 == [blueID])
            #expect(changed.first?.3 == [redID])
        } else {
            let byOwner = Dictionary(changed.map { ($0.0, ($0.2, $0.3)) }, uniquingKeysWith: { first, _ in first })
            #expect(byOwner[blueID]?.0 == [taskID])
            #expect(byOwner[redID]?.1 == [taskID])
        }
        // No field changed: the updates carry links only.
        #expect(entries[0].changes.allSatisfy { $0.kind == .update && $0.fields.isEmpty })

        // Two devices each adding a label converge: applying additions adds, it does not replace.
        let other = try self.container()
        try other.applyRemoteChanges(
            try container.syncLogEntries().flatMap { entry in
                entry.changes.map { change in
                    change.kind == .delete
                        ? RemoteRecordChange.delete(change.entity, recordID: change.recordID, serverVersion: entry.sequence)
                        : RemoteRecordChange.upsert(
                            change.entity, recordID: change.recordID, serverVersion: entry.sequence, fields: change.fields, links: change.links)
                }
            })
        let otherContext = ModelContext(other)
        let copy = try #require(try otherContext.fetch(FetchDescriptor<SyncTask>()).first)
        #expect(copy.labels.map(\.name) == ["blue"])
        let green = SyncLabel(name: "green")
        otherContext.insert(green)
        copy.labels.append(green)
        try otherContext.save()
        let greenID = try #require(try other.syncRecordID(for: green.persistentModelID))
        let addedOnOther = try other.syncLogEntries().flatMap(links)
        #expect(addedOnOther.contains { $0.2 == [taskOwns ? greenID : taskID] && $0.3.isEmpty })
        // Back on the first device, the addition joins the link it has, without removing it.
        try container.applyRemoteChanges([
            .upsert(
                "SyncLabel", recordID: greenID, serverVersion: 100,
                fields: [SyncField(name: "name", value: SyncFieldValue(kind: .string, stored: .text("green")))]),
            .upsert("SyncTask", recordID: taskID, serverVersion: 101, fields: [], links: [SyncLinkChange(relationship: "labels", added: [greenID])]),
        ])
        let fresh = try #require(try ModelContext(container).fetch(FetchDescriptor<SyncTask>()).first)
        #expect(Set(fresh.labels.map(\.name)) == ["blue", "green"])
    }

    /// A container holding a task linked to red and blue, and the three record ids.
    private func linkedTask() throws -> (ModelContainer, task: String, red: String, blue: String) {
        let container = try container()
        let context = ModelContext(container)
        let task = SyncTask(title: "t")
        let red = SyncLabel(name: "red")
        let blue = SyncLabel(name: "blue")
        context.insert(task)
        context.insert(red)
        context.insert(blue)
        task.labels = [red, blue]
        try context.save()
        let ids = try [task.persistentModelID, red.persistentModelID, blue.persistentModelID].map {
            try #require(try container.syncRecordID(for: $0))
        }
        return (container, ids[0], ids[1], ids[2])
    }

    @Test("a whole link set (a pulled insert's) unlinks the other linked records, except those kept")
    func wholeSetReplaces() throws {
        let (container, taskID, _, blueID) = try linkedTask()
        try container.applyRemoteChanges([
            .upsert(
                "SyncTask", recordID: taskID, serverVersion: 100, fields: [],
                links: [SyncLinkChange(relationship: "labels", added: [blueID], replacingExcept: [])])
        ])
        let task = try #require(try ModelContext(container).fetch(FetchDescriptor<SyncTask>()).first)
        #expect(task.labels.map(\.name) == ["blue"])

        let (kept, keptTaskID, redID, _) = try linkedTask()
        try kept.applyRemoteChanges([
            .upsert(
                "SyncTask", recordID: keptTaskID, serverVersion: 100, fields: [],
                links: [SyncLinkChange(relationship: "labels", added: [], replacingExcept: [redID])])
        ])
        let keptTask = try #require(try ModelContext(kept).fetch(FetchDescriptor<SyncTask>()).first)
        #expect(keptTask.labels.map(\.name) == ["red"])
    }

    @Test("a record inserted, linked and deleted in one remote batch stays deleted")
    func linkedThenDeletedInOneBatch() throws {
        let (source, taskID, redID, _) = try linkedTask()
        let entries = try source.syncLogEntries()
        let fields = try #require(entries.first?.changes.first { $0.recordID == taskID }?.fields)
        let redFields = try #require(entries.first?.changes.first { $0.recordID == redID }?.fields)
        let target = try container()
        try target.applyRemoteChanges([
            .upsert("SyncLabel", recordID: redID, serverVersion: 1, fields: redFields),
            .upsert("SyncTask", recordID: taskID, serverVersion: 2, fields: fields),
            .upsert("SyncTask", recordID: taskID, serverVersion: 3, fields: [], links: [SyncLinkChange(relationship: "labels", added: [redID])]),
            .delete("SyncTask", recordID: taskID, serverVersion: 4),
        ])
        let context = ModelContext(target)
        #expect(try context.fetch(FetchDescriptor<SyncTask>()).isEmpty)
        #expect(try context.fetch(FetchDescriptor<SyncLabel>()).first?.tasks.isEmpty == true)
    }

    @Test("a link kept pending for a record that is not local stays off when the batch that brings the record also removes it")
    func pendingLinkRemovedWhenItsRecordArrives() throws {
        let (source, taskID, redID, _) = try linkedTask()
        let entries = try source.syncLogEntries()
        let fields = try #require(entries.first?.changes.first { $0.recordID == taskID }?.fields)
        let redFields = try #require(entries.first?.changes.first { $0.recordID == redID }?.fields)
        for removal in [
            SyncLinkChange(relationship: "labels", added: [], removed: [redID]),
            SyncLinkChange(relationship: "labels", added: [], replacingExcept: []),
        ] {
            let target = try container()
            // The task arrives linked to a label that is not local: the link waits for it.
            let first = try target.applyRemoteChanges([
                .upsert(
                    "SyncTask", recordID: taskID, serverVersion: 1, fields: fields, links: [SyncLinkChange(relationship: "labels", added: [redID])])
            ])
            #expect(first.pendingReferences == 1)
            // The label arrives in the batch that unlinks it (seed 6469: a rejection's rollback).
            let second = try target.applyRemoteChanges([
                .upsert("SyncLabel", recordID: redID, serverVersion: 2, fields: redFields),
                .upsert("SyncTask", recordID: taskID, serverVersion: 3, fields: [], links: [removal]),
            ])
            #expect(second.pendingReferences == 0)
            let context = ModelContext(target)
            #expect(try context.fetch(FetchDescriptor<SyncTask>()).first?.labels.isEmpty == true)
            #expect(try context.fetch(FetchDescriptor<SyncLabel>()).first?.tasks.isEmpty == true)
        }
    }

}
