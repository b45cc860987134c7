import OpenSwiftDataMerge
import Testing

@Suite struct CounterStateTests {
    @Test func pendingContributionsShowOnTopOfTheConfirmedValue() throws {
        var counter = CounterState(confirmed: .int(5))
        try counter.add(.int(1), key: 1)
        try counter.add(.int(2), key: 2)
        #expect(counter.value == .int(8))
        // The server applied key 1 and another replica's +10: the total holds both.
        counter.confirm(.int(16), through: 1)
        #expect(counter.value == .int(18))
        #expect(counter.pending.map(\.key) == [2])
    }

    @Test func aRejectionRollsBackOnlyItsOwnContribution() throws {
        // Pending +1, +2 and +4; the +2 is refused: the counter shows +5.
        var counter = CounterState(confirmed: .int(0))
        try counter.add(.int(1), key: 1)
        try counter.add(.int(2), key: 2)
        try counter.add(.int(4), key: 3)
        counter.rollBack(key: 2)
        #expect(counter.value == .int(5))
    }

    @Test func settingOutrightIsADifference() throws {
        let seen = CounterValue.int(5)
        let written = CounterValue.int(0)
        let delta = try #require(written.subtracting(seen))
        #expect(delta == .int(-5))
        // A concurrent +1 elsewhere: the counter ends at 1.
        #expect(CounterValue.int(6).adding(delta) == .int(1))
    }

    @Test func integerOverflowAndMixedKindsAreRefused() {
        #expect(CounterValue.int(.max).adding(.int(1)) == nil)
        #expect(CounterValue.int(.min).subtracting(.int(1)) == nil)
        #expect(CounterValue.int(1).adding(.double(1)) == nil)
        var counter = CounterState(confirmed: .int(.max - 1))
        #expect(throws: CounterState.Failure.overflow) { try counter.add(.int(2), key: 1) }
        #expect(throws: CounterState.Failure.kindMismatch) { try counter.add(.double(2), key: 1) }
        #expect(CounterValue.double(0.5).adding(.double(0.25)) == .double(0.75))
    }
}
