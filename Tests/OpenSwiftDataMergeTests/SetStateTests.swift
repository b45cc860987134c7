import Foundation
import OpenSwiftDataMerge
import Testing

@Suite struct SetStateTests {
    @Test func concurrentAddsAreAllKeptInServerOrder() {
        var set = SetState()
        set.apply(adds: ["\"bob\""], removes: [], client: "phone", version: 3, seen: 2)
        set.apply(adds: ["\"carol\"", "\"ann\""], removes: [], client: "laptop", version: 4, seen: 2)
        #expect(set.elements == ["\"bob\"", "\"carol\"", "\"ann\""])
    }

    @Test func anAddConcurrentWithARemoveWins() {
        // phone added bob at 2; tablet saw it (base 2) and removes it, while laptop, based on
        // 1, added bob too: laptop's add was not observed.
        var removeFirst = SetState()
        removeFirst.apply(adds: ["\"bob\""], removes: [], client: "phone", version: 2, seen: 1)
        removeFirst.apply(adds: [], removes: ["\"bob\""], client: "tablet", version: 3, seen: 2)
        removeFirst.apply(adds: ["\"bob\""], removes: [], client: "laptop", version: 4, seen: 1)
        var addFirst = SetState()
        addFirst.apply(adds: ["\"bob\""], removes: [], client: "phone", version: 2, seen: 1)
        addFirst.apply(adds: ["\"bob\""], removes: [], client: "laptop", version: 3, seen: 1)
        addFirst.apply(adds: [], removes: ["\"bob\""], client: "tablet", version: 4, seen: 2)
        #expect(removeFirst.elements == ["\"bob\""])
        #expect(addFirst.elements == ["\"bob\""])
    }

    @Test func aRemoveTakesEveryObservedTagAndTheClientsOwn() {
        var set = SetState()
        set.apply(adds: ["1"], removes: [], client: "a", version: 2, seen: 1)
        set.apply(adds: ["1"], removes: [], client: "b", version: 3, seen: 1)
        // c saw version 3: both adds.
        set.apply(adds: [], removes: ["1"], client: "c", version: 4, seen: 3)
        #expect(set.elements == [])
        // a's own add not yet seen through a pull (base 1) is still observed by a.
        set.apply(adds: ["2"], removes: [], client: "a", version: 5, seen: 4)
        set.apply(adds: [], removes: ["2"], client: "a", version: 6, seen: 1)
        #expect(set.elements == [])
        // Without a base, only the client's own tags go.
        set.apply(adds: ["3"], removes: [], client: "a", version: 7, seen: 6)
        set.apply(adds: [], removes: ["3"], client: "b", version: 8, seen: nil)
        #expect(set.elements == ["3"])
    }

    @Test func aRemoveUnderANewClientIDTakesTheAddsOfTheOldIDsProcessedMutations() {
        // "old" added 1 in its mutation 4 and 2 in its mutation 9; the installation took the
        // id "new" when the server had processed "old" through mutation 6.
        var set = SetState()
        set.apply(adds: ["1"], removes: [], client: "old", version: 5, seen: 1, mutation: 4)
        set.apply(adds: ["2"], removes: [], client: "old", version: 8, seen: 1, mutation: 9)
        set.apply(adds: ["1", "2"], removes: [], client: "other", version: 9, seen: 1, mutation: 1)
        set.apply(adds: [], removes: ["1", "2"], client: "new", version: 10, seen: 1, mutation: 1, predecessors: ["old": 6])
        // The remove took old's add of 1 (its own, processed through 6), not old's later add
        // of 2 nor other's concurrent adds.
        #expect(set.tags["1"].map { Set($0.keys) } == ["other"])
        #expect(set.tags["2"].map { Set($0.keys) } == ["old", "other"])
        // Without predecessors, old's add of 1 survives a remove based on version 1.
        var plain = SetState()
        plain.apply(adds: ["1"], removes: [], client: "old", version: 5, seen: 1, mutation: 4)
        plain.apply(adds: [], removes: ["1"], client: "new", version: 6, seen: 1, mutation: 1)
        #expect(plain.elements == ["1"])
    }

    @Test func tagsWithAndWithoutAMutationRoundTripThroughJSON() throws {
        var set = SetState()
        set.apply(adds: ["1"], removes: [], client: "a", version: 2, seen: nil, mutation: 7)
        set.apply(adds: ["2"], removes: [], client: "b", version: 3, seen: nil)
        let json = try JSONEncoder().encode(set)
        #expect(String(decoding: json, as: UTF8.self).contains("[2,0,7]"))
        #expect(String(decoding: json, as: UTF8.self).contains("[3,0]"))
        #expect(try JSONDecoder().decode(SetState.self, from: json) == set)
    }

    @Test func elementsWrittenAnotherWayHaveOneCanonicalText() throws {
        #expect(SetElements.canonical("\"bob\"") == "\"bob\"")
        #expect(SetElements.canonical("\"\\u0062ob\"") == "\"bob\"")
        #expect(SetElements.canonical(" 42 ") == "42")
        #expect(SetElements.canonical("1.0") == "1")
        #expect(SetElements.canonical("{ \"emoji\": \"👍\", \"by\": \"ann\" }") == "{\"by\":\"ann\",\"emoji\":\"👍\"}")
        #expect(SetElements.canonical("[1, \"a/b\", null, true]") == "[1,\"a\\/b\",null,true]")
        #expect(SetElements.canonical("18446744073709551615") == "18446744073709551615")
        #expect(SetElements.canonical("bob") == nil)
        #expect(SetElements.canonical("1,2") == nil)
        #expect(SetElements.canonical("") == nil)
        #expect(SetElements.canonical("\"https://a/b\"") == "\"https:\\/\\/a\\/b\"")
        #expect(SetElements.canonical(["\"a\"", "x", "{\"b\":[1.5, 2]}"]) == ["\"a\"", nil, "{\"b\":[1.5,2]}"])
        // What a model's stored JSON holds is canonical already.
        struct Reaction: Codable {
            var emoji: String
            var by: String
            var at: Double
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for reaction in [Reaction(emoji: "👍", by: "a/b \"q\"\n", at: 0.1), Reaction(emoji: "é", by: "", at: 2)] {
            let text = String(decoding: try encoder.encode(reaction), as: UTF8.self)
            #expect(SetElements.canonical(text) == text)
        }
    }

    @Test func tagsRoundTripThroughCodable() throws {
        var set = SetState()
        set.apply(adds: ["\"x\"", "{\"a\":1}"], removes: [], client: "c", version: 9, seen: nil)
        #expect(set.tags["{\"a\":1}"]?["c"] == SetState.Tag(version: 9, index: 1))
        #expect(SetState(tags: set.tags) == set)
    }

    @Test func splitAndJoin() {
        #expect(SetElements.split("[]") == [])
        #expect(SetElements.split(" [ \"a,b\" , {\"k\":[1,2]} ,null,\"q\\\"]\"] ") == ["\"a,b\"", "{\"k\":[1,2]}", "null", "\"q\\\"]\""])
        #expect(SetElements.split("[1,]") == nil)
        #expect(SetElements.split("[1") == nil)
        #expect(SetElements.split("{}") == nil)
        #expect(SetElements.split("[1] x") == nil)
        #expect(SetElements.json(["1", "\"a\""]) == "[1,\"a\"]")
    }

    @Test func differenceAndPrediction() {
        let change = SetElements.difference(from: ["a", "b", "c"], to: ["c", "d", "a", "d"])
        #expect(change.adds == ["d"])
        #expect(change.removes == ["b"])
        #expect(SetElements.difference(from: ["a", "b"], to: ["b", "a"]).adds.isEmpty)
        #expect(SetElements.applying(["d", "a"], removing: ["b"], to: ["a", "b", "c"]) == ["a", "c", "d"])
    }
}
