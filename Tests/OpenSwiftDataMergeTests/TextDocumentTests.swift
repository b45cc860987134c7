import OpenSwiftDataMerge
import Testing

@Suite struct TextDocumentTests {
    /// Two documents that both hold `base`, inserted by replica 1.
    func pair(_ base: String) -> (TextDocument, TextDocument) {
        var document = TextDocument()
        document.insert(base, at: 0, replica: 1)
        return (document, document)
    }

    @Test func concurrentTypingAtOnePlaceStaysInBlocks() throws {
        // Both type a word, one character per save, at the same place.
        var (alice, bob) = pair("ab")
        var fromAlice: [TextOperation] = []
        var fromBob: [TextOperation] = []
        for (offset, character) in "XXXX".enumerated() { fromAlice.append(alice.insert(String(character), at: 1 + offset, replica: 2)) }
        for (offset, character) in "yyyy".enumerated() { fromBob.append(bob.insert(String(character), at: 1 + offset, replica: 3)) }
        for operation in fromBob { try alice.apply(operation) }
        for operation in fromAlice { try bob.apply(operation) }
        #expect(alice.text == bob.text)
        #expect(alice.text == "aXXXXyyyyb")
    }

    @Test func concurrentBackwardTypingStaysInBlocks() throws {
        // Each types right to left: every character goes before the one typed just before it.
        var (alice, bob) = pair("ab")
        var fromAlice: [TextOperation] = []
        var fromBob: [TextOperation] = []
        for character in "4321" { fromAlice.append(alice.insert(String(character), at: 1, replica: 9)) }
        for character in "zyx" { fromBob.append(bob.insert(String(character), at: 1, replica: 4)) }
        // Delivered interleaved.
        for index in 0..<4 {
            if index < fromBob.count { try alice.apply(fromBob[index]) }
            try bob.apply(fromAlice[index])
        }
        #expect(alice.text == bob.text)
        #expect(alice.text == "axyz1234b" || alice.text == "a1234xyzb")
    }

    @Test func aDeletionRemovesOnlyWhatItsReplicaSaw() throws {
        var (alice, bob) = pair("the quick fox")
        // Alice deletes "quick " while Bob types inside it.
        let deletion = alice.delete(at: 4, count: 6)
        let insertion = bob.insert("very ", at: 4, replica: 3)
        try alice.apply(insertion)
        try bob.apply(deletion)
        #expect(alice.text == "the very fox")
        #expect(bob.text == alice.text)
    }

    @Test func replicasConvergeInAnyDeliveryOrder() throws {
        var random = SplitMix(seed: 36)
        for _ in 0..<300 {
            var documents = [TextDocument(), TextDocument(), TextDocument()]
            var logs: [[TextOperation]] = [[], [], []]
            var delivered = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
            func deliver(to receiver: Int, from sender: Int, upTo limit: Int) {
                while delivered[receiver][sender] < min(limit, logs[sender].count) {
                    // An operation that needs a third replica's insertion waits for it.
                    guard (try? documents[receiver].apply(logs[sender][delivered[receiver][sender]])) != nil else { return }
                    delivered[receiver][sender] += 1
                }
            }
            for _ in 0..<50 {
                let replica = Int(random.next() % 3)
                switch random.next() % 10 {
                case 0..<3:
                    let sender = Int(random.next() % 3)
                    if sender != replica { deliver(to: replica, from: sender, upTo: delivered[replica][sender] + Int(random.next() % 4)) }
                case 3..<7:
                    let position = Int(random.next() % UInt64(documents[replica].scalarCount + 1))
                    let word = String(repeating: ["a", "é", "👍🏽", "中"][Int(random.next() % 4)], count: Int(random.next() % 3) + 1)
                    logs[replica].append(documents[replica].insert(word, at: position, replica: UInt64(replica + 1) << 20))
                default:
                    guard documents[replica].scalarCount > 0 else { continue }
                    let position = Int(random.next() % UInt64(documents[replica].scalarCount))
                    logs[replica].append(documents[replica].delete(at: position, count: Int(random.next() % 3) + 1))
                }
            }
            for _ in 0..<3 {
                for receiver in 0..<3 {
                    for sender in 0..<3 where sender != receiver { deliver(to: receiver, from: sender, upTo: .max) }
                }
            }
            let texts = documents.map(\.text)
            #expect(texts[0] == texts[1] && texts[1] == texts[2], "\(texts)")
            for document in documents { #expect(document.text.unicodeScalars.count == document.scalarCount) }
        }
    }

    @Test func anOperationAppliesOnceHoweverOftenItArrives() throws {
        var (alice, bob) = pair("hello")
        let operation = alice.insert(" world", at: 5, replica: 2)
        try bob.apply(operation)
        try bob.apply(operation)
        #expect(bob.text == "hello world")
    }

    @Test func aDocumentHoldsAnOperationOnlyOnceEverythingItDoesIsThere() throws {
        var (alice, bob) = pair("hello")
        var typed = alice.insert(" world", at: 5, replica: 2)
        typed.append(alice.delete(at: 0, count: 1))
        // The editing document holds its own edit (an echo applies as nothing).
        #expect(alice.holds(typed))
        #expect(!bob.holds(typed))
        // Half of it is not holding it: the insertion is there, the deletion is not.
        try bob.apply(TextOperation(insertions: typed.insertions, deletions: []))
        #expect(!bob.holds(typed))
        try bob.apply(typed)
        #expect(bob.holds(typed))
        #expect(bob.text == "ello world")
        // A deletion of scalars never inserted is not held.
        let elsewhere = TextOperation(insertions: [], deletions: [TextOperation.Deletion(start: TextID(replica: 7, seq: 0), count: 1)])
        #expect(!bob.holds(elsewhere))
        #expect(bob.holds(TextOperation()))
        // Held identities with other content are not held: applying them is refused.
        var other = typed.insertions[0]
        other.content = Array("W".unicodeScalars) + other.content.dropFirst()
        let conflicting = TextOperation(insertions: [other], deletions: [])
        #expect(!bob.holds(conflicting))
        #expect(throws: TextDocument.Failure.self) { try bob.apply(conflicting) }
    }

    @Test func identitiesReusedForOtherContentAreRefusedAndTheStateStaysReadable() throws {
        var document = TextDocument()
        let hello = document.insert("hello", at: 0, replica: 7)
        // The same identities with other content, and an insertion that runs into held ones
        // after new ones: each would give two scalars one identity.
        let other = TextOperation(insertions: [
            .init(id: TextID(replica: 7, seq: 0), originLeft: nil, originRight: nil, content: Array("HELLO".unicodeScalars))
        ])
        #expect(throws: TextDocument.Failure.conflictingIdentity(TextID(replica: 7, seq: 0))) { try document.apply(other) }
        var later = TextDocument()
        let far = TextOperation(insertions: [
            .init(id: TextID(replica: 9, seq: 3), originLeft: nil, originRight: nil, content: Array("xyz".unicodeScalars))
        ])
        try later.apply(far)
        let overlapping = TextOperation(insertions: [
            .init(id: TextID(replica: 9, seq: 0), originLeft: nil, originRight: nil, content: Array("abcde".unicodeScalars))
        ])
        #expect(throws: TextDocument.Failure.conflictingIdentity(TextID(replica: 9, seq: 3))) { try later.apply(overlapping) }
        #expect(later.text == "xyz")
        #expect(try TextDocument(encoded: later.encoded()).text == "xyz")
        // A replay, whole or in part, is no conflict.
        try document.apply(hello)
        #expect(document.text == "hello")
    }

    @Test func sequenceNumbersOutOfRangeAreRefusedWithoutTrapping() throws {
        var document = TextDocument()
        _ = document.insert("abc", at: 0, replica: 1)
        let gap = TextOperation(insertions: [.init(id: TextID(replica: 1, seq: 4_000_000_000), originLeft: nil, originRight: nil, content: ["a"])])
        #expect(throws: TextDocument.Failure.sequenceGap(TextID(replica: 1, seq: 4_000_000_000))) { try document.apply(gap) }
        // Many insertions, each within the gap of the one before: the operation as a whole moves
        // the replica past the gap, and is refused before anything is allocated.
        var stepped = TextOperation()
        var left = TextID(replica: 1, seq: 2)
        for step in 1...8 {
            let id = TextID(replica: 1, seq: UInt32(step) << 19)
            stepped.insertions.append(.init(id: id, originLeft: left, originRight: nil, content: ["x"]))
            left = id
        }
        #expect(throws: TextDocument.Failure.sequenceGap(TextID(replica: 1, seq: 3 << 19))) { try document.apply(stepped) }
        #expect(document.text == "abc")
        let past = TextOperation(deletions: [.init(start: TextID(replica: 1, seq: .max), count: 2)])
        #expect(throws: TextDocument.Failure.sequenceOverflow(TextID(replica: 1, seq: .max))) { try document.apply(past) }
        // The last sequence number itself may be deleted (it waits, never held here).
        try document.apply(TextOperation(deletions: [.init(start: TextID(replica: 1, seq: .max), count: 1)]))
        try document.apply(TextOperation(deletions: [.init(start: TextID(replica: 1, seq: 1), count: 1)]))
        #expect(document.text == "ac")
    }

    @Test func anInsertionWhoseOriginIsMissingIsRefusedWhole() throws {
        var (alice, _) = pair("hello")
        let first = alice.insert("!", at: 5, replica: 2)
        let second = alice.insert("?", at: 6, replica: 2)
        var carol = TextDocument()
        carol.insert("hello", at: 0, replica: 1)
        #expect(throws: TextDocument.Failure.missingOrigin(first.insertions[0].id)) { try carol.apply(second) }
        #expect(carol.text == "hello")
        try carol.apply(first)
        try carol.apply(second)
        #expect(carol.text == "hello!?")
    }

    @Test func aSaveNeverCutsACharacterOfSeveralScalars() throws {
        var (alice, bob) = pair("ok 👍🏽 café")
        // Another skin tone: the whole emoji is replaced, not its modifier alone.
        let operation = alice.update(to: "ok 👍🏿 café", replica: 2)
        #expect(operation.deletions.map(\.count) == [2])
        #expect(operation.insertions.map { String(String.UnicodeScalarView($0.content)) } == ["👍🏿"])
        // An accent added to "e" with a combining mark: the "e" goes with it.
        let accent = bob.update(to: "ok 👍🏽 cafe\u{301}", seen: "ok 👍🏽 café", replica: 3)
        try alice.apply(accent)
        try bob.apply(operation)
        #expect(alice.text == bob.text)
        #expect(alice.text.utf8.elementsEqual("ok 👍🏿 cafe\u{301}".utf8))
    }

    @Test func aSaveBetweenCharactersThatShareLeadingBytesTypesOnlyWhatIsNew() throws {
        // "丁" U+4E01, "七" U+4E03 and "丂" U+4E02 share their first two UTF-8 bytes: the
        // common prefix of the two texts' bytes ends inside a character.
        var (alice, bob) = pair("丁丂")
        let typed = alice.update(to: "丁七丂", replica: 2)
        #expect(typed.deletions.isEmpty)
        #expect(typed.insertions.map { String(String.UnicodeScalarView($0.content)) } == ["七"])
        // So another device's concurrent deletion of "丂" applies to the only "丂" there is.
        let deleted = bob.update(to: "丁", replica: 3)
        try alice.apply(deleted)
        try bob.apply(typed)
        #expect(alice.text == "丁七")
        #expect(bob.text == "丁七")
    }

    @Test func aSaveFromAnOlderReadKeepsWhatOthersWroteSince() throws {
        var (device, server) = pair("Dear team, see you Monday.")
        // The server took another device's edit; this device merges it, then saves a value
        // its context computed from the text it read before.
        let other = server.update(to: "Dear team, see you on Monday.", replica: 7)
        try device.apply(other)
        let seen = "Dear team, see you Monday."
        let operation = device.update(to: "Dear all, see you Monday.", seen: seen, replica: 2)
        try server.apply(operation)
        #expect(device.text == "Dear all, see you on Monday.")
        #expect(server.text == device.text)
    }

    @Test func aSaveOfTheTextAsItReadsIsEmpty() {
        var (alice, _) = pair("same")
        #expect(alice.update(to: "same", replica: 2).isEmpty)
        #expect(alice.nextSequence(of: 2) == 0)
    }

    @Test func identitiesReadBackFromTheirWrittenForm() {
        let id = TextID(replica: 0x9F3C_0A7E_11D2_B804, seq: 17)
        #expect(id.description == "9f3c0a7e11d2b804.17")
        #expect(TextID(Substring(id.description)) == id)
        #expect(TextID("9f3c.17") == nil)
    }
}

/// A small seeded generator (SplitMix64), so that a failure replays.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct TextDocumentCodingTests {
    @Test func aStateReadBackMergesAsTheOriginalWould() throws {
        var alice = TextDocument()
        alice.insert("Hello 👋🏽 world", at: 0, replica: 1)
        alice.delete(at: 5, count: 3)
        var bob = alice
        let fromBob = bob.insert(", dear", at: 5, replica: 2)
        // A deletion of scalars Alice does not hold yet waits in the state.
        let early = TextOperation(deletions: [TextOperation.Deletion(start: TextID(replica: 3, seq: 0), count: 2)])
        try alice.apply(early)
        var restored = try TextDocument(encoded: alice.encoded())
        #expect(restored.text == alice.text)
        #expect(restored.scalarCount == alice.scalarCount)
        try restored.apply(fromBob)
        try alice.apply(fromBob)
        #expect(restored.text == alice.text)
        // Local edits continue on the restored state, including inside a run it read.
        let edit = restored.insert("!", at: 2, replica: 1)
        try alice.apply(edit)
        #expect(restored.text == alice.text)
        // The waiting deletion applies when its scalars arrive.
        let late = TextOperation(insertions: [
            TextOperation.Insertion(id: TextID(replica: 3, seq: 0), originLeft: nil, originRight: nil, content: ["x", "y", "z"])
        ])
        try restored.apply(late)
        try alice.apply(late)
        #expect(restored.text == alice.text)
        #expect(restored.text.hasSuffix("z") || restored.text.hasPrefix("z"))
    }

    @Test func damagedStatesAreRefusedNamingWhatIsWrong() throws {
        var document = TextDocument()
        document.insert("state", at: 0, replica: 1)
        let bytes = document.encoded()
        #expect(throws: TextDocument.Failure.self) { try TextDocument(encoded: bytes.dropLast()) }
        #expect(throws: TextDocument.Failure.self) { try TextDocument(encoded: [2] + bytes.dropFirst()) }
        #expect(throws: TextDocument.Failure.self) { try TextDocument(encoded: bytes + [0]) }
        // Every truncation is refused, none crashes.
        for length in 0..<bytes.count {
            #expect(throws: TextDocument.Failure.self) { try TextDocument(encoded: bytes.prefix(length)) }
        }
        #expect(try TextDocument(encoded: bytes).text == "state")
    }
}
