import Foundation
import GRDB
import OpenSwiftDataTestSupport
import Testing

@testable import OpenSwiftData

/// A model sorted by name, as list screens are.
@Model
final class SortedContact {
    var name: String
    var nickname: String?
    var rank: Int
    #Index<SortedContact>([\.name])

    init(name: String, nickname: String? = nil, rank: Int = 0) {
        self.name = name
        self.nickname = nickname
        self.rank = rank
    }
}

/// A team and its members, to sort members by their team's name through the relationship.
@Model
final class SortedTeam {
    var name: String
    init(name: String) { self.name = name }
}

@Model
final class SortedMember {
    var name: String
    var team: SortedTeam?
    init(name: String, team: SortedTeam?) {
        self.name = name
        self.team = team
    }
}

/// 10,000 names: mixed case, accents and other scripts, numbers with and without leading zeros.
private func generatedNames(count: Int = 10_000, seed: UInt64 = 0x5EED) -> [String] {
    var random = SeededGenerator(seed: seed)
    let stems = [
        "file", "File", "FILE", "éclair", "Eclair", "eclair", "Ärger", "arger", "Zoë", "zoe", "ñandú", "Nandu",
        "straße", "Strasse", "Ωmega", "ωmega", "ｆｕｌｌ", "full", "naïve", "Naive", "Ça va", "ca va", "café",
        "cafe\u{301}", "item-", "item_", "Item ", "Øre", "oe", "Łódź", "lodz", "İstanbul", "istanbul", "日本", "한국",
        "Banana", "apple", "Apple", "zebra", "Zebra", "x", "",
    ]
    return (0..<count).map { _ in
        var name = random.pick(stems)
        switch random.next() % 4 {
        case 0: name += String(random.next() % 1_000)
        case 1: name += String(format: "%03d", Int(random.next() % 200))
        case 2: name += " " + random.pick(stems) + String(random.next() % 20)
        default: break
        }
        return name
    }
}

@Suite("String sorting as Foundation does it")
struct StringSortTests {
    @Test("SortDescriptor(\\.name) sorts as Foundation's .localizedStandard: case-insensitive, numbers by value")
    func defaultIsLocalizedStandard() throws {
        let container = try inMemoryContainer(SortedContact.self)
        let context = ModelContext(container)
        for name in ["file10", "Banana", "file9", "apple", "éclair", "ezra"] { context.insert(SortedContact(name: name)) }
        try context.save()
        let fetched = try ModelContext(container).fetch(FetchDescriptor<SortedContact>(sortBy: [SortDescriptor(\.name)]))
        #expect(fetched.map(\.name) == ["apple", "Banana", "éclair", "ezra", "file9", "file10"])
        let reversed = try ModelContext(container).fetch(FetchDescriptor<SortedContact>(sortBy: [SortDescriptor(\.name, order: .reverse)]))
        #expect(reversed.map(\.name) == ["file10", "file9", "ezra", "éclair", "Banana", "apple"])
        let lexical = try ModelContext(container).fetch(FetchDescriptor<SortedContact>(sortBy: [SortDescriptor(\.name, comparator: .lexical)]))
        #expect(lexical.map(\.name) == ["Banana", "apple", "ezra", "file10", "file9", "éclair"])
    }

    @Test("The .localizedStandard, .localized and .lexical comparators compile and sort in memory as in the store")
    func namedComparators() throws {
        let container = try inMemoryContainer(SortedContact.self)
        let context = ModelContext(container)
        let names = ["item10", "Item9", "item-2", "Zoë", "zoe", "Øre", "ore"]
        for name in names { context.insert(SortedContact(name: name, nickname: name.hasPrefix("i") ? nil : name)) }
        try context.save()
        let descriptors: [[SortDescriptor<SortedContact>]] = [
            [SortDescriptor(\.name, comparator: .localizedStandard)],
            [SortDescriptor(\.name, comparator: .localized)],
            [SortDescriptor(\.name, comparator: .lexical)],
            [SortDescriptor(\.name, comparator: .localizedStandard, order: .reverse)],
            [SortDescriptor(\.name, comparator: .localized, order: .reverse)],
            [SortDescriptor(\.nickname), SortDescriptor(\.name)],
            [SortDescriptor(\.nickname, comparator: .localized, order: .reverse), SortDescriptor(\.name, order: .reverse)],
        ]
        let all = try ModelContext(container).fetch(FetchDescriptor<SortedContact>())
        for sortBy in descriptors {
            let check = ModelContext(container)
            let fromStore = try check.fetch(FetchDescriptor<SortedContact>(sortBy: sortBy)).map(\.name)
            #expect(fromStore == all.sorted(using: sortBy).map(\.name), "\(sortBy)")
            #expect(try check.explain(FetchDescriptor<SortedContact>(sortBy: sortBy)).runsEntirelyInSQL, "\(sortBy)")
        }
        #expect(names.sorted(using: LocalizedStringComparator.localizedStandard).prefix(3) == ["item-2", "Item9", "item10"])
    }

    @Test("10,000 mixed-case, accented and numbered names: the store's order equals sorted(using:), for every comparator")
    func differential() throws {
        try differential(
            names: generatedNames(),
            sorts: [
                ("default", [SortDescriptor(\.name)]),
                ("localized", [SortDescriptor(\.name, comparator: .localized)]),
                ("localized standard reverse", [SortDescriptor(\.name, comparator: .localizedStandard, order: .reverse)]),
                ("optional default", [SortDescriptor(\.nickname), SortDescriptor(\.rank)]),
            ])
        // The lexical order is SQLite's binary one, which equals Swift's `<` on text in one
        // normalization form (canonically equivalent strings in two forms are a documented
        // limit), so these names are in NFC.
        try differential(
            names: generatedNames().map(\.precomposedStringWithCanonicalMapping),
            sorts: [
                ("lexical", [SortDescriptor(\.name, comparator: .lexical)]),
                ("lexical reverse", [SortDescriptor(\.name, comparator: .lexical, order: .reverse)]),
            ])
    }

    private func differential(names: [String], sorts: [(String, [SortDescriptor<SortedContact>])]) throws {
        let container = try inMemoryContainer(SortedContact.self)
        let context = ModelContext(container)
        for (index, name) in names.enumerated() { context.insert(SortedContact(name: name, nickname: index % 7 == 0 ? nil : name, rank: index)) }
        try context.save()
        let inMemory = try ModelContext(container).fetch(FetchDescriptor<SortedContact>(sortBy: [SortDescriptor(\.rank)]))
        #expect(inMemory.count == names.count)
        for (label, sortBy) in sorts {
            let check = ModelContext(container)
            #expect(try check.explain(FetchDescriptor<SortedContact>(sortBy: sortBy)).runsEntirelyInSQL, "\(label)")
            let fromStore = try check.fetch(FetchDescriptor<SortedContact>(sortBy: sortBy)).map(\.name)
            let expected = inMemory.sorted(using: sortBy).map(\.name)
            let mismatches = zip(fromStore, expected).enumerated().filter { $0.element.0 != $0.element.1 }
            #expect(fromStore.count == expected.count)
            #expect(
                mismatches.isEmpty,
                "\(label): \(mismatches.count) mismatches, first at \(mismatches.first.map { "\($0.offset): \($0.element)" } ?? "")")
        }
    }

    @Test("A localized sort through a to-one relationship runs in SQL, in the order of sorted(using:)")
    func throughRelationship() throws {
        let container = try inMemoryContainer(SortedMember.self, SortedTeam.self)
        let context = ModelContext(container)
        for (member, team) in [("m1", "gamma10"), ("m2", "Beta"), ("m3", "gamma9"), ("m4", "alpha"), ("m5", "Émile")] {
            context.insert(SortedMember(name: member, team: SortedTeam(name: team)))
        }
        context.insert(SortedMember(name: "m6", team: nil))
        try context.save()
        let check = ModelContext(container)
        let sortBy = [SortDescriptor(\SortedMember.team?.name)]
        #expect(try check.explain(FetchDescriptor(sortBy: sortBy)).runsEntirelyInSQL)
        let fetched = try check.fetch(FetchDescriptor(sortBy: sortBy))
        #expect(fetched.map(\.name) == ["m6", "m4", "m2", "m5", "m3", "m1"])
        #expect(fetched.map(\.name) == fetched.sorted(using: sortBy).map(\.name))
    }

    @Test("A lexical sort still uses the name index; a localized one filters through indexes and sorts after")
    func queryPlans() throws {
        let container = try inMemoryContainer(SortedContact.self)
        let layout = try EntityLayout.of(SortedContact.self)
        func plan(_ predicate: Predicate<SortedContact>?, _ sort: [SortDescriptor<SortedContact>]) throws -> String {
            let translation = predicate.map { PredicateTranslator.translate($0, layout: layout) }
            let order = try #require(layout.orderTerms(for: sort))
            let query = SelectBuilder.rows(layout.table, filter: translation, order: order, limit: 20, offset: nil)
            return try container.store.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql, arguments: query.arguments).map { $0["detail"] as String? ?? "" }.joined(
                    separator: "\n")
            }
        }
        let lexical = try plan(nil, [SortDescriptor(\.name, comparator: .lexical)])
        #expect(lexical.contains("osd_SortedContact_index_name"), "\(lexical)")
        #expect(!lexical.contains("TEMP B-TREE"), "\(lexical)")
        let localized = try plan(nil, [SortDescriptor(\.name)])
        #expect(localized.contains("TEMP B-TREE"), "\(localized)")
        let filtered = try plan(#Predicate { $0.name == "x" }, [SortDescriptor(\.name)])
        #expect(filtered.contains("USING INDEX osd_SortedContact_index_name"), "\(filtered)")
    }
}
