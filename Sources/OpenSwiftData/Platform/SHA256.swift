import Foundation

/// SHA-256 (FIPS 180-4), which names the files that keep `.externalStorage` values: the core
/// library carries its own, so that it depends on no cryptography package.
///
/// Feed bytes with ``update(_:)`` as often as needed, then take the 32-byte digest with
/// ``finalize()``; ``hash(_:)`` does both for one buffer. Tested against NIST's vectors.
struct SHA256 {
    /// The length of a digest in bytes.
    static let digestCount = 32

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Bytes of a block not yet complete (fewer than 64).
    private var pending: [UInt8] = []
    /// The number of bytes fed so far.
    private var length: UInt64 = 0

    init() { pending.reserveCapacity(64) }

    /// The digest of `data`.
    static func hash(_ data: Data) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data)
        return hasher.finalize()
    }

    /// Feeds the bytes of `data`.
    mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Feeds `bytes`. The pointers below stay inside `bytes` (offsets below its count), which
    /// the caller keeps valid for the call.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        length &+= UInt64(bytes.count)
        var offset = 0
        if !pending.isEmpty {
            let taken = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: UnsafeRawBufferPointer(start: base, count: taken))
            offset = taken
            guard pending.count == 64 else { return }
            // `pending` holds 64 bytes here, so its buffer has an address.
            pending.withUnsafeBytes { block in
                if let address = block.baseAddress { compress(address) }
            }
            pending.removeAll(keepingCapacity: true)
        }
        let blocks = (bytes.count - offset) / 64
        if blocks > 0 {
            compress(base + offset, count: blocks)
            offset += blocks * 64
        }
        if offset < bytes.count {
            pending.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: bytes.count - offset))
        }
    }

    /// Pads the message and returns its 32-byte digest. The hasher is spent afterwards.
    mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        var tail: [UInt8] = [0x80]
        let used = (pending.count + 1) % 64
        tail += [UInt8](repeating: 0, count: used <= 56 ? 56 - used : 120 - used)
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        let fed = length
        tail.withUnsafeBytes { update($0) }
        length = fed
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        return words.flatMap { word in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: word >> UInt32($0)) } }
    }

    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Processes `count` 64-byte blocks starting at `blocks`. Optimized in every build (a
    /// debug build would otherwise hash a few megabytes a second), with the message schedule
    /// in one stack allocation for all the blocks.
    @_optimize(speed)
    private mutating func compress(_ blocks: UnsafeRawPointer, count: Int = 1) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = state
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            Self.roundConstants.withUnsafeBufferPointer { constants in
                var blockIndex = 0
                // `while` loops: a debug build calls an iterator's methods for each `for` step.
                while blockIndex < count {
                    let block = blocks + blockIndex * 64
                    var index = 0
                    while index < 16 {
                        // Big-endian words; `loadUnaligned`: a caller's bytes have any alignment.
                        w[index] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
                        index += 1
                    }
                    while index < 64 {
                        let s0 = (w[index - 15] >> 7 | w[index - 15] << 25) ^ (w[index - 15] >> 18 | w[index - 15] << 14) ^ (w[index - 15] >> 3)
                        let s1 = (w[index - 2] >> 17 | w[index - 2] << 15) ^ (w[index - 2] >> 19 | w[index - 2] << 13) ^ (w[index - 2] >> 10)
                        w[index] = w[index - 16] &+ s0 &+ w[index - 7] &+ s1
                        index += 1
                    }
                    var (a, b, c, d, e, f, g, h) = (h0, h1, h2, h3, h4, h5, h6, h7)
                    index = 0
                    while index < 64 {
                        let s1 = (e >> 6 | e << 26) ^ (e >> 11 | e << 21) ^ (e >> 25 | e << 7)
                        let choice = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ choice &+ constants[index] &+ w[index]
                        let s0 = (a >> 2 | a << 30) ^ (a >> 13 | a << 19) ^ (a >> 22 | a << 10)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        h = g
                        g = f
                        f = e
                        e = d &+ t1
                        d = c
                        c = b
                        b = a
                        a = t1 &+ s0 &+ majority
                        index += 1
                    }
                    (h0, h1, h2, h3, h4, h5, h6, h7) = (h0 &+ a, h1 &+ b, h2 &+ c, h3 &+ d, h4 &+ e, h5 &+ f, h6 &+ g, h7 &+ h)
                    blockIndex += 1
                }
            }
        }
        state = (h0, h1, h2, h3, h4, h5, h6, h7)
    }
}
