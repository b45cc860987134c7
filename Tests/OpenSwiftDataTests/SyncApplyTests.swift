import Foundation
import OpenSwiftData
import Testing

private func device(_ url: URL = syncStoreURL()) throws -> ModelContainer {
    let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
    var configuration = SyncCaptureConfiguration()
    configuration.sync(SyncProject.self)
    configuration.sync(SyncTask.self)
    configuration.sync(SyncUser.self)
    configuration.sync(SyncLabel.self)
    try container.enableSyncCapture(configuration)
    return container
}

/// What a server would send for a device's log entries: each change as an upsert or delete at
/// a version.
private func remoteChanges(_ entries: [SyncLogEntry], firstVersion: Int64 = 1) -> [RemoteRecordChange] {
    var version = firstVersion
    var changes: [RemoteRecordChange] = []
    for entry in entries {
        for change in entry.changes {
            defer { version += 1 }
            switch change.kind {
            case .delete: changes.append(.delete(change.entity, recordID: change.recordID, serverVersion: version))
            case .insert, .update:
                changes.append(
                    .upsert(
                        change.entity, recordID: change.recordID, serverVersion: version, scope: change.scope, fields: change.fields,
                        links: change.links))
            }
        }
    }
    return changes
}

private func text(_ value: String) -> SyncField { SyncField(name: "title", value: SyncFieldValue(kind: .string, stored: .text(value))) }

@Suite("Applying remote changes")
struct SyncApplyTests {
    @Test(
        "another device's log applied here recreates its records bit for bit, linked by record id, without echo, and keeps server versions as base versions"
    )
    func roundTrip() throws {
        let a = try device()
        let context = ModelContext(a)
        let project = SyncProject(title: "Launch")
        project.budget = Decimal(string: "3.14")!
        let task = SyncTask(title: "Write", project: project)
        task.due = Date(timeIntervalSinceReferenceDate: 0.1)
        task.estimate = -0.0
        task.payload = Data([9, 8])
        task.token = UUID()
        task.state = .closed
        task.notes = ["é", "\u{1F600}"]
        task.assignee = SyncUser(handle: "u1", name: "Ada")
        context.insert(task)
        try context.save()
        let taskID = try #require(try a.syncRecordID(for: task.persistentModelID))

        let b = try device()
        let result = try b.applyRemoteChanges(remoteChanges(try a.syncLogEntries()))
        #expect(result.inserted == 3)
        #expect(result.pendingReferences == 0)
        #expect(try b.syncLogCount() == 0)  // applied under the engine's author: nothing to push back
        let bContext = ModelContext(b)
        let copy = try #require(try bContext.fetch(FetchDescriptor<SyncTask>()).first)
        #expect(try b.syncRecordID(for: copy.persistentModelID) == taskID)
        #expect(copy.title == "Write")
        #expect(copy.due == task.due)
        #expect(copy.estimate == task.estimate)
        #expect(copy.payload == task.payload)
        #expect(copy.token == task.token)
        #expect(copy.state == .closed)
        #expect(copy.notes == task.notes)
        #expect(copy.project?.title == "Launch")
        #expect(copy.project?.budget == Decimal(string: "3.14")!)
        #expect(copy.project?.tasks.count == 1)  // the inverse was kept
        #expect(copy.assignee?.handle == "u1")
        #expect(try b.syncServerVersion(entity: "SyncTask", recordID: taskID) != nil)

        // A local edit on B names the server version it was based on.
        let version = try #require(try b.syncServerVersion(entity: "SyncTask", recordID: taskID))
        copy.priority = 5
        try bContext.save()
        let update = try #require(try b.syncLogEntries().first?.changes.first)
        #expect(update.kind == .update)
        #expect(update.recordID == taskID)
        #expect(update.baseVersion == version)

        // Applying the same batch again changes nothing but versions: the records are found by id.
        let again = try b.applyRemoteChanges(remoteChanges(try a.syncLogEntries(), firstVersion: 10))
        #expect(again.inserted == 0)
        #expect(again.updated == 3)
        #expect(try ModelContext(b).fetchCount(FetchDescriptor<SyncTask>()) == 1)
    }

    @Test("a reference to a record that is not local stays pending, the relationship empty, and is linked when the record arrives")
    func pendingReferences() throws {
        let b = try device()
        let projectID = "P-1"
        let labelID = "L-1"
        try b.applyRemoteChanges([
            .upsert(
                "SyncTask", recordID: "T-1", serverVersion: 1, fields: [text("orphan"), SyncField(name: "project", value: .reference(projectID))],
                links: [SyncLinkChange(relationship: "labels", added: [labelID])])
        ])
        let context = ModelContext(b)
        let task = try #require(try context.fetch(FetchDescriptor<SyncTask>()).first)
        #expect(task.project == nil)
        #expect(task.labels.isEmpty)
        #expect(try b.pendingSyncReferenceCount() >= 1)

        let result = try b.applyRemoteChanges([
            .upsert("SyncProject", recordID: projectID, serverVersion: 2, fields: [text("Found")]),
            .upsert(
                "SyncLabel", recordID: labelID, serverVersion: 3,
                fields: [SyncField(name: "name", value: SyncFieldValue(kind: .string, stored: .text("red")))]),
        ])
        #expect(result.resolvedReferences >= 1)
        #expect(result.pendingReferences == 0)
        let fresh = ModelContext(b)
        let linked = try #require(try fresh.fetch(FetchDescriptor<SyncTask>()).first)
        #expect(linked.project?.title == "Found")
        #expect(linked.labels.map(\.name) == ["red"])
        #expect(result.resolvedReferences == 2)
        #expect(try b.pendingSyncReferenceCount() == 0)
    }

    @Test("bad input fails with a typed error and applies nothing of the batch")
    func badInput() throws {
        let b = try device()
        let good = RemoteRecordChange.upsert("SyncProject", recordID: "ok", serverVersion: 1, fields: [text("fine")])
        #expect(throws: SyncCaptureError.unknownEntity("Nope")) {
            try b.applyRemoteChanges([good, .upsert("Nope", recordID: "x", serverVersion: 1, fields: [])])
        }
        #expect(throws: SyncCaptureError.unknownEntity("SyncLocalNote")) {
            try b.applyRemoteChanges([good, .upsert("SyncLocalNote", recordID: "x", serverVersion: 1, fields: [])])
        }
        #expect(throws: SyncCaptureError.unknownProperty(entity: "SyncProject", property: "colour")) {
            try b.applyRemoteChanges([
                good,
                .upsert(
                    "SyncProject", recordID: "y", serverVersion: 1,
                    fields: [SyncField(name: "colour", value: SyncFieldValue(kind: .string, stored: .text("red")))]),
            ])
        }
        #expect(throws: SyncCaptureError.wrongKind(entity: "SyncProject", property: "title", expected: .string, got: .int)) {
            try b.applyRemoteChanges([
                good,
                .upsert(
                    "SyncProject", recordID: "y", serverVersion: 1,
                    fields: [SyncField(name: "title", value: SyncFieldValue(kind: .int, stored: .integer(1)))]),
            ])
        }
        // Right kind, wrong stored form; an enum raw value that is no case; NULL for a required value.
        for field in [
            SyncField(name: "title", value: SyncFieldValue(kind: .string, stored: .integer(4))),
            SyncField(name: "state", value: SyncFieldValue(kind: .string, stored: .text("reopened"))),
            SyncField(name: "title", value: SyncFieldValue(kind: .string, stored: .null)),
            SyncField(name: "token", value: SyncFieldValue(kind: .uuid, stored: .blob(Data([1, 2])))),
        ] {
            do {
                try b.applyRemoteChanges([good, .upsert("SyncTask", recordID: "z", serverVersion: 1, fields: [text("t"), field])])
                Issue.record("\(field) was accepted")
            } catch let SyncCaptureError.undecodableValue(entity, property, _) {
                #expect(entity == "SyncTask")
                #expect(property == field.name)
            }
        }
        // A required value missing from a new record: the save refuses it.
        #expect(throws: (any Error).self) {
            try b.applyRemoteChanges([good, .upsert("SyncTask", recordID: "w", serverVersion: 1, fields: [])])
        }
        #expect(try ModelContext(b).fetchCount(FetchDescriptor<SyncProject>()) == 0)
        #expect(try ModelContext(b).fetchCount(FetchDescriptor<SyncTask>()) == 0)
        #expect(try b.syncServerVersion(entity: "SyncProject", recordID: "ok") == nil)
    }

    @Test(
        "a batch whose save fails leaves the store as it was: no rows, records, versions or pending references, and the models of the failed batch are not kept"
    )
    func failedSaveRollsBackWhole() throws {
        let b = try device()
        try b.applyRemoteChanges([.upsert("SyncProject", recordID: "kept", serverVersion: 1, fields: [text("before")])])
        // Passes the checks, then fails in the save (a required value missing from a new record),
        // after an update, a new record and a pending reference were prepared.
        let batch: [RemoteRecordChange] = [
            .upsert("SyncProject", recordID: "kept", serverVersion: 2, fields: [text("after")]),
            .upsert("SyncTask", recordID: "T", serverVersion: 3, fields: [text("waiting"), SyncField(name: "project", value: .reference("absent"))]),
            .upsert("SyncTask", recordID: "broken", serverVersion: 4, fields: []),
        ]
        #expect(throws: (any Error).self) { try b.applyRemoteChanges(batch) }
        let context = ModelContext(b)
        #expect(try context.fetch(FetchDescriptor<SyncProject>()).map(\.title) == ["before"])
        #expect(try context.fetchCount(FetchDescriptor<SyncTask>()) == 0)
        #expect(try b.syncServerVersion(entity: "SyncProject", recordID: "kept") == 1)
        #expect(try b.persistentIdentifier(forSyncRecord: "T", entity: "SyncTask") == nil)
        #expect(try b.pendingSyncReferenceCount() == 0)
        #expect(try b.syncLogCount() == 0)
        // The next batch starts from the store, not from the failed batch's models.
        try b.applyRemoteChanges([.upsert("SyncTask", recordID: "T", serverVersion: 5, fields: [text("arrived")])])
        #expect(try ModelContext(b).fetch(FetchDescriptor<SyncTask>()).map(\.title) == ["arrived"])
        #expect(try ModelContext(b).fetch(FetchDescriptor<SyncProject>()).map(\.title) == ["before"])
    }

    @Test("a record whose unique value a local row has is that row: the upsert updates it; an id that is not the unique value is refused")
    func uniqueMerge() throws {
        let b = try device()
        let context = ModelContext(b)
        context.insert(SyncUser(handle: "u42", name: "local"))
        try context.save()
        let name = SyncField(name: "name", value: SyncFieldValue(kind: .string, stored: .text("remote")))
        let handle = SyncField(name: "handle", value: SyncFieldValue(kind: .string, stored: .text("u42")))
        let result = try b.applyRemoteChanges([.upsert("SyncUser", recordID: "u42", serverVersion: 7, fields: [handle, name])])
        #expect(result.updated == 1)
        let users = try ModelContext(b).fetch(FetchDescriptor<SyncUser>())
        #expect(users.map(\.name) == ["remote"])
        #expect(try b.syncServerVersion(entity: "SyncUser", recordID: "u42") == 7)
        #expect(throws: SyncCaptureError.recordIDMismatch(entity: "SyncUser", recordID: "u43", uniqueValue: "u42")) {
            try b.applyRemoteChanges([.upsert("SyncUser", recordID: "u43", serverVersion: 8, fields: [handle, name])])
        }

        // A local row from before capture (no record yet) merges by its unique value too.
        let url = syncStoreURL()
        let plain = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(url: url))
        let early = ModelContext(plain)
        early.insert(SyncUser(handle: "u42", name: "before capture"))
        try early.save()
        let later = try device(url)
        try later.applyRemoteChanges([.upsert("SyncUser", recordID: "u42", serverVersion: 3, fields: [handle, name])])
        #expect(try ModelContext(later).fetch(FetchDescriptor<SyncUser>()).map(\.name) == ["remote"])
        #expect(try later.syncServerVersion(entity: "SyncUser", recordID: "u42") == 3)
    }

    @Test("a remote delete runs the delete rules and is announced like any save, under the engine's author")
    func remoteDelete() async throws {
        let b = try device()
        try b.applyRemoteChanges([
            .upsert("SyncProject", recordID: "P", serverVersion: 1, fields: [text("doomed")]),
            .upsert("SyncTask", recordID: "T", serverVersion: 2, fields: [text("child"), SyncField(name: "project", value: .reference("P"))]),
        ])
        let context = ModelContext(b)
        #expect(try context.fetchCount(FetchDescriptor<SyncTask>()) == 1)
        var events = b.saveEvents().makeAsyncIterator()
        let result = try b.applyRemoteChanges([
            .delete("SyncProject", recordID: "P", serverVersion: 3), .delete("SyncProject", recordID: "never-here", serverVersion: 4),
        ])
        #expect(result.deleted == 1)
        #expect(try context.fetchCount(FetchDescriptor<SyncTask>()) == 0)  // cascaded
        #expect(try b.persistentIdentifier(forSyncRecord: "T", entity: "SyncTask") == nil)
        let event = try #require(await events.next())
        #expect(event.author == SyncCaptureConfiguration.defaultEngineAuthor)
        #expect(event.deleted.count == 2)
        #expect(event.historyToken != nil)
        #expect(try b.syncLogCount() == 0)
    }

    @Test("a record inserted and deleted in one batch, its insert pointing at a local record, is not kept (simulator seeds 262, 634, 811)")
    func insertThenDeleteInOneBatch() throws {
        let b = try device()
        try b.applyRemoteChanges([.upsert("SyncProject", recordID: "P", serverVersion: 1, fields: [text("kept")])])
        let result = try b.applyRemoteChanges([
            .upsert(
                "SyncTask", recordID: "T", serverVersion: 2, fields: [text("short-lived"), SyncField(name: "project", value: .reference("P"))],
                links: [SyncLinkChange(relationship: "labels", added: ["L"])]),
            .delete("SyncTask", recordID: "T", serverVersion: 3),
        ])
        let context = ModelContext(b)
        #expect(try context.fetchCount(FetchDescriptor<SyncTask>()) == 0)
        #expect(try context.fetch(FetchDescriptor<SyncProject>()).first?.tasks.isEmpty == true)
        #expect(try b.persistentIdentifier(forSyncRecord: "T", entity: "SyncTask") == nil)
        #expect(result.pendingReferences == 0)  // nothing waits on behalf of the deleted record
    }

    @Test("a record the batch upserts stays when the batch deletes the record it points at, whose delete rule cascades (simulator seed 136)")
    func keptRecordSurvivesCascade() throws {
        let b = try device()
        try b.applyRemoteChanges([
            .upsert("SyncProject", recordID: "P", serverVersion: 1, fields: [text("gone")]),
            .upsert("SyncTask", recordID: "T", serverVersion: 2, fields: [text("kept"), SyncField(name: "project", value: .reference("P"))]),
        ])
        // A reset's snapshot holds the task (its reference left out: a pending local edit
        // masks it) and not the project, which the batch removes.
        try b.applyRemoteChanges([
            .upsert("SyncTask", recordID: "T", serverVersion: 3, fields: [text("still here")]),
            .delete("SyncProject", recordID: "P", serverVersion: 0),
        ])
        let context = ModelContext(b)
        let task = try #require(try context.fetch(FetchDescriptor<SyncTask>()).first)
        #expect(task.title == "still here")
        #expect(task.project == nil)
        #expect(try context.fetchCount(FetchDescriptor<SyncProject>()) == 0)
    }

    @Test("without local cascades, a remote delete keeps the records the batch does not delete, their reference cleared (simulator seeds 1286, 1912)")
    func deleteWithoutLocalCascades() throws {
        let b = try device()
        try b.applyRemoteChanges([
            .upsert("SyncProject", recordID: "P", serverVersion: 1, fields: [text("gone")]),
            .upsert("SyncTask", recordID: "T", serverVersion: 2, fields: [text("kept"), SyncField(name: "project", value: .reference("P"))]),
            .upsert("SyncTask", recordID: "U", serverVersion: 3, fields: [text("deleted too"), SyncField(name: "project", value: .reference("P"))]),
        ])
        // The server's cascade deleted U with P; T (whose reference to P the server does not
        // have) stays.
        try b.applyRemoteChanges(
            [.delete("SyncProject", recordID: "P", serverVersion: 4), .delete("SyncTask", recordID: "U", serverVersion: 5)], localCascades: false,
            alsoWriting: nil)
        let context = ModelContext(b)
        let tasks = try context.fetch(FetchDescriptor<SyncTask>())
        #expect(tasks.map(\.title) == ["kept"])
        #expect(tasks.first?.project == nil)
        #expect(try context.fetchCount(FetchDescriptor<SyncProject>()) == 0)
        #expect(try b.persistentIdentifier(forSyncRecord: "U", entity: "SyncTask") == nil)
    }

    @Test("a remote insert of a model whose attributes have no defaults (an enum among them) fills them without reading them first")
    func insertWithoutDefaults() throws {
        let container = try ModelContainer(for: Schema([SyncTicket.self]), configurations: ModelConfiguration(url: syncStoreURL()))
        var configuration = SyncCaptureConfiguration()
        configuration.sync(SyncTicket.self)
        try container.enableSyncCapture(configuration)
        let fields = [
            SyncField(name: "state", value: SyncFieldValue(kind: .string, stored: .text("closed"))),
            SyncField(name: "summary", value: SyncFieldValue(kind: .string, stored: .text("remote"))),
        ]
        let result = try container.applyRemoteChanges([.upsert("SyncTicket", recordID: "K", serverVersion: 1, fields: fields)])
        #expect(result.inserted == 1)
        let ticket = try #require(try ModelContext(container).fetch(FetchDescriptor<SyncTicket>()).first)
        #expect(ticket.state == .closed)
        #expect(ticket.summary == "remote")
        // The same record again: an update through the setters.
        try container.applyRemoteChanges([
            .upsert(
                "SyncTicket", recordID: "K", serverVersion: 2,
                fields: [SyncField(name: "state", value: SyncFieldValue(kind: .string, stored: .text("open")))])
        ])
        #expect(try ModelContext(container).fetch(FetchDescriptor<SyncTicket>()).map(\.state) == [.open])
    }

    @Test("applying requires capture to be on")
    func requiresCapture() throws {
        let container = try ModelContainer(for: Schema(syncTestTypes), configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        #expect(throws: SyncCaptureError.notEnabled) { try container.applyRemoteChanges([]) }
    }
}
