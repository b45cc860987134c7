/// A seeded pseudo-random generator (SplitMix64) for the engine's retry jitter: the same seed
/// gives the same sequence on every platform, so a simulated schedule replays exactly. A test
/// and simulator knob: `package`, not part of the library's API.
package struct SyncRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Makes a generator from a seed.
    package init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
