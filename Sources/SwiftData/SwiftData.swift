// `import SwiftData` on platforms that have no SwiftData of their own: this module re-exports
// OpenSwiftData, so that model code written for Apple's framework compiles unchanged, down to
// its import line, qualified names (`SwiftData.Schema`, `SwiftData.ModelActor`) and
// `#if canImport(SwiftData)` around model files.
//
// On Apple's platforms the system framework is SwiftData, and an app must keep using it (SwiftUI's
// `@Query`, CloudKit sync and the system's own store): this module is then empty, and a target
// should depend on it only where Apple's framework does not exist:
//
//     .product(name: "SwiftData", package: "OpenSwiftData",
//              condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi]))
//
// ARCHITECTURE.md ("The SwiftData module") gives the reasons.

#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
#warning(
    "OpenSwiftData's SwiftData module is empty on Apple platforms, where it hides Apple's SwiftData framework: depend on the SwiftData product with condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi])"
)
#else
@_exported import OpenSwiftData
#endif
