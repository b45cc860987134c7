import Foundation
import OpenSwiftData
import Testing

/// Many-to-many links to a class with subclasses (a table per concrete class): a link to a
/// subclass's row names that row's record, in the subclass's entity, on capture and on apply.
@Suite("Sync capture of links to a subclass member")
struct SyncInheritanceLinkTests {
    private func container(_ name: String = #function) throws -> ModelContainer {
        let container = try ModelContainer(
            for: Keeper.self, Sticker.self, Pet.self, Cat.self, configurations: ModelConfiguration(url: syncStoreURL(name)))
        try container.enableSyncCapture(SyncCaptureConfiguration(Keeper.self, Sticker.self, Pet.self, Cat.self))
        return container
    }

    @Test("a link to a subclass member names the member's own record (in the subclass's entity), and applies elsewhere")
    func linkToSubclassMember() throws {
        let container = try container()
        let context = ModelContext(container)
        let keeper = Keeper(name: "k")
        let rex = Pet(name: "Rex")
        let tom = Cat(name: "Tom", lives: 9)
        context.insert(keeper)
        context.insert(rex)
        context.insert(tom)
        keeper.favorites = [rex, tom]
        try context.save()

        let tomID = try #require(try container.syncRecordID(for: tom.persistentModelID))
        let rexID = try #require(try container.syncRecordID(for: rex.persistentModelID))
        let keeperID = try #require(try container.syncRecordID(for: keeper.persistentModelID))
        // The record is the Cat's, found under the Cat entity only.
        #expect(try container.persistentIdentifier(forSyncRecord: tomID, entity: "Cat") == tom.persistentModelID)
        #expect(try container.persistentIdentifier(forSyncRecord: tomID, entity: "Pet") == nil)

        let entries = try container.syncLogEntries()
        let links = entries.flatMap { entry in entry.changes.filter { $0.recordID == keeperID }.flatMap(\.links) }
        let favorites = try #require(links.first { $0.relationship == "favorites" })
        #expect(Set(favorites.added) == [rexID, tomID])
        // The log made no second record for the Cat's row under its superclass.
        let inserted = entries.flatMap(\.changes).filter { $0.kind == .insert }
        #expect(inserted.filter { $0.recordID == tomID }.map(\.entity) == ["Cat"])

        // Another device applying the log links its copy of the Cat, nothing left pending.
        let other = try self.container(#function + "-other")
        try other.applyRemoteChanges(
            entries.flatMap { entry in
                entry.changes.map { change in
                    RemoteRecordChange.upsert(
                        change.entity, recordID: change.recordID, serverVersion: entry.sequence, fields: change.fields, links: change.links)
                }
            })
        #expect(try other.pendingSyncReferenceCount() == 0)
        let copy = try #require(try ModelContext(other).fetch(FetchDescriptor<Keeper>()).first)
        #expect(Set(copy.favorites.map(\.name)) == ["Rex", "Tom"])
        #expect(copy.favorites.compactMap { $0 as? Cat }.map(\.lives) == [9])
    }

    @Test("a link to a subclass member that has not arrived waits, and is made when the member arrives")
    func pendingLinkToSubclassMember() throws {
        let container = try container()
        let context = ModelContext(container)
        let keeper = Keeper(name: "k")
        let tom = Cat(name: "Tom", lives: 9)
        context.insert(keeper)
        context.insert(tom)
        keeper.favorites = [tom]
        try context.save()
        let changes = try container.syncLogEntries().flatMap { entry in
            entry.changes.map { change in
                RemoteRecordChange.upsert(
                    change.entity, recordID: change.recordID, serverVersion: entry.sequence, fields: change.fields, links: change.links)
            }
        }
        let other = try self.container(#function + "-other")
        // The keeper first: its link to the Cat (named under the relationship's `Pet`) waits.
        try other.applyRemoteChanges(changes.filter { $0.entity == "Keeper" })
        #expect(try other.pendingSyncReferenceCount() == 1)
        try other.applyRemoteChanges(changes.filter { $0.entity == "Cat" })
        #expect(try other.pendingSyncReferenceCount() == 0)
        let copy = try #require(try ModelContext(other).fetch(FetchDescriptor<Keeper>()).first)
        #expect(copy.favorites.compactMap { $0 as? Cat }.map(\.name) == ["Tom"])
    }
}
