// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

/// The platforms where Apple's SwiftData framework does not exist, and where the `SwiftData`
/// product is OpenSwiftData.
let platformsWithoutSwiftData: [Platform] = [.linux, .android, .windows, .openbsd, .wasi]

let package = Package(
    name: "OpenSwiftData",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "OpenSwiftData", targets: ["OpenSwiftData"]),
        // `import SwiftData` on platforms without Apple's framework: the library under SwiftData's
        // module name, so that model code compiles with no change at all. Depend on it only for
        // those platforms (ARCHITECTURE.md, "The SwiftData module").
        .library(name: "SwiftData", targets: ["SwiftData"]),
        .library(name: "OpenSwiftDataSyncProtocol", targets: ["OpenSwiftDataSyncProtocol"]),
        // The sync engine (client side): SwiftData models that sync through osd-server. Its
        // network dependencies (AsyncHTTPClient, the WebSocket client) stay out of the
        // `OpenSwiftData` product.
        .library(name: "OpenSwiftDataSync", targets: ["OpenSwiftDataSync"]),
        .executable(name: "osd-demo", targets: ["osd-demo"]),
        // The benchmarks and the simulator (`swift run -c release osd-simulate --seeds 10000`)
        // are executable targets of this package, run from a clone; not products, so a package
        // that depends on this one never sees them.
        // The sync server: a library to mount in a Hummingbird application, and the executable.
        // A package that depends only on the `OpenSwiftData` product builds none of their
        // dependencies (SwiftPM builds the targets of the products a client uses).
        .library(name: "OpenSwiftDataServer", targets: ["OpenSwiftDataServer"]),
        .executable(name: "osd-server", targets: ["osd-server"]),
        // The server's SQLite storage (one file through GRDB), its own product so that an
        // application that runs the server on PostgreSQL does not link it.
        .library(name: "OpenSwiftDataServerSQLite", targets: ["OpenSwiftDataServerSQLite"]),
        // The server's PostgreSQL storage, its own product so that an application that mounts
        // the server on SQLite compiles neither PostgresNIO nor its TLS stack.
        .library(name: "OpenSwiftDataServerPostgres", targets: ["OpenSwiftDataServerPostgres"]),
    ],
    dependencies: [
        // Version ranges, so that an app that already depends on one of these packages can add
        // this one. The lowest version of each is the one CI builds against by default.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Macros: the swift-syntax releases this package is built and tested with.
        .package(url: "https://github.com/swiftlang/swift-syntax", "602.0.0"..<"604.0.0"),
        .package(url: "https://github.com/pointfreeco/swift-macro-testing", from: "0.7.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The sync server's dependencies, used only by the server's targets.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"6.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // `swift package generate-documentation`: the DocC catalogs, built in CI.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .macro(
            name: "OpenSwiftDataMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftOperators", package: "swift-syntax"),
            ]
        ),
        .target(
            name: "OpenSwiftData",
            dependencies: [
                "OpenSwiftDataMerge",
                "OpenSwiftDataMacros",
                // The hybrid logical clock that stamps synced saves: one implementation, the
                // protocol's (Foundation only).
                "OpenSwiftDataSyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `@_exported import OpenSwiftData` where Apple's SwiftData does not exist; empty on
        // Apple's platforms, where the system framework is SwiftData.
        .target(
            name: "SwiftData",
            dependencies: [.target(name: "OpenSwiftData", condition: .when(platforms: platformsWithoutSwiftData))]
        ),
        // The sync wire protocol: Codable types on Foundation alone (and the merge core, whose
        // text operations a text's changes spell), shared by the sync engine and the server.
        .target(name: "OpenSwiftDataSyncProtocol", dependencies: ["OpenSwiftDataMerge"]),
        // Fields that merge instead of overwrite: their states and contributions, on the standard
        // library alone, shared by capture, the sync engine and the server.
        .target(name: "OpenSwiftDataMerge"),
        // The sync engine: outbox, push, pull, rebase, status and events over a SyncTransport.
        .target(
            name: "OpenSwiftDataSync",
            dependencies: [
                "OpenSwiftDataMerge",
                "OpenSwiftData",
                "OpenSwiftDataSyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Test support for the engine (not a product): an in-memory transport that calls the
        // server's transport-free SyncService directly (the simulator's transport).
        .target(
            name: "OpenSwiftDataSyncTesting",
            dependencies: ["OpenSwiftDataSync", "OpenSwiftDataServer", "OpenSwiftDataSyncProtocol"],
            path: "Tests/OpenSwiftDataSyncTesting"
        ),
        // The deterministic sync simulator (not a product): the real engine and server core in one
        // process, on a simulated network and clock, with faults and workload from a seed.
        .target(
            name: "OpenSwiftDataSimulator",
            dependencies: [
                "OpenSwiftData",
                "OpenSwiftDataSync",
                "OpenSwiftDataServer",
                "OpenSwiftDataServerSQLite",
                "OpenSwiftDataSyncProtocol",
                "OpenSwiftDataMerge",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/OpenSwiftDataSimulator"
        ),
        .executableTarget(name: "osd-simulate", dependencies: ["OpenSwiftDataSimulator"], path: "Tests/osd-simulate"),
        // A process that saves `.externalStorage` values without end: the crash test kills it
        // with SIGKILL mid-save and checks the store and its files after each kill.
        .executableTarget(name: "osd-attachment-writer", dependencies: ["OpenSwiftData"], path: "Tests/osd-attachment-writer"),
        .executableTarget(
            name: "osd-demo",
            dependencies: ["OpenSwiftData"]
        ),
        // The code shown in README.md and the DocC articles, compiled so that it stays true
        // (scripts/check-doc-examples.py checks that the documents quote these files exactly).
        // The README's quick start, written as SwiftData code is: `import SwiftData`.
        .executableTarget(
            name: "QuickStart",
            dependencies: [.target(name: "SwiftData", condition: .when(platforms: platformsWithoutSwiftData))],
            path: "Examples/QuickStart"
        ),
        .executableTarget(name: "GettingStarted", dependencies: ["OpenSwiftData"], path: "Examples/GettingStarted"),
        .executableTarget(name: "Relationships", dependencies: ["OpenSwiftData"], path: "Examples/Relationships"),
        .executableTarget(name: "Queries", dependencies: ["OpenSwiftData"], path: "Examples/Queries"),
        .executableTarget(name: "Migrations", dependencies: ["OpenSwiftData"], path: "Examples/Migrations"),
        .executableTarget(name: "History", dependencies: ["OpenSwiftData"], path: "Examples/History"),
        // Two processes syncing notes through osd-server; also the client the kill test runs.
        .executableTarget(name: "SyncedNotes", dependencies: ["OpenSwiftData", "OpenSwiftDataSync"], path: "Examples/SyncedNotes"),
        .executableTarget(name: "SyncedAttachments", dependencies: ["OpenSwiftData", "OpenSwiftDataSync"], path: "Examples/SyncedAttachments"),
        // A counter that merges (the sync guide quotes it).
        .executableTarget(name: "SyncedFAQ", dependencies: ["OpenSwiftData", "OpenSwiftDataSync"], path: "Examples/SyncedFAQ"),
        // A list shared with a writer and a reader (the sync guide quotes it).
        .executableTarget(
            name: "SharedLists", dependencies: ["OpenSwiftData", "OpenSwiftDataSync", "OpenSwiftDataSyncProtocol"], path: "Examples/SharedLists"),
        // The same app after an update that adds a property; the app-update kill test runs it on
        // a store SyncedNotes left mid-push.
        .executableTarget(name: "SyncedNotesV2", dependencies: ["OpenSwiftData", "OpenSwiftDataSync"], path: "Examples/SyncedNotesV2"),
        // OpenSwiftData against hand-written GRDB code: `swift run -c release osd-benchmarks`.
        // Built (in debug) by every `swift build`, so it keeps compiling as the API changes.
        .executableTarget(
            name: "osd-benchmarks",
            dependencies: ["OpenSwiftData", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/Sources/osd-benchmarks"
        ),
        // The sync server: transport-free core, the storage protocol, HTTP routes, auth, live
        // channel, metrics. The storages are targets of their own.
        .target(
            name: "OpenSwiftDataServer",
            dependencies: [
                "OpenSwiftDataMerge",
                "OpenSwiftDataSyncProtocol",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // SQLite storage for the server: one file, one server; backups and restores.
        .target(
            name: "OpenSwiftDataServerSQLite",
            dependencies: [
                "OpenSwiftDataServer",
                "OpenSwiftDataSyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // PostgreSQL storage for the server: several servers on one database.
        .target(
            name: "OpenSwiftDataServerPostgres",
            dependencies: [
                "OpenSwiftDataServer",
                "OpenSwiftDataSyncProtocol",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "osd-server",
            dependencies: [
                "OpenSwiftDataServer",
                "OpenSwiftDataServerSQLite",
                "OpenSwiftDataServerPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Sync server figures on loopback: `swift run -c release osd-server-benchmarks`.
        .executableTarget(
            name: "osd-server-benchmarks",
            dependencies: [
                "OpenSwiftDataServer",
                "OpenSwiftDataServerSQLite",
                "OpenSwiftDataServerPostgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ],
            path: "Benchmarks/Sources/osd-server-benchmarks"
        ),
        // Sync engine figures on loopback: `swift run -c release osd-sync-benchmarks`.
        .executableTarget(
            name: "osd-sync-benchmarks",
            dependencies: [
                "OpenSwiftData",
                "OpenSwiftDataSync",
                "OpenSwiftDataServer",
                "OpenSwiftDataServerSQLite",
                "EditingTrace",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/Sources/osd-sync-benchmarks"
        ),
        // The merge core on a real editing trace: `swift run -c release osd-merge-benchmarks`.
        .executableTarget(
            name: "osd-merge-benchmarks", dependencies: ["OpenSwiftDataMerge", "EditingTrace"], path: "Benchmarks/Sources/osd-merge-benchmarks"),
        // The editing trace both replay, read at run time.
        .target(name: "EditingTrace", path: "Benchmarks/Sources/EditingTrace"),
        // What the test targets share: a temporary directory, a manual clock, seeded generators.
        .target(name: "OpenSwiftDataTestSupport", dependencies: ["OpenSwiftDataSyncProtocol"], path: "Tests/OpenSwiftDataTestSupport"),
        .testTarget(
            name: "OpenSwiftDataServerTests",
            dependencies: [
                "OpenSwiftDataServer",
                "OpenSwiftDataMerge",
                "OpenSwiftDataServerSQLite",
                "OpenSwiftDataServerPostgres",
                "OpenSwiftDataTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "OpenSwiftDataSyncTests",
            dependencies: [
                "OpenSwiftDataSync",
                "OpenSwiftDataSyncTesting",
                "OpenSwiftDataServer",
                "OpenSwiftDataServerSQLite",
                "OpenSwiftData",
                "OpenSwiftDataTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "OpenSwiftDataMergeTests", dependencies: ["OpenSwiftDataMerge"]),
        .testTarget(
            name: "OpenSwiftDataSimulatorTests",
            dependencies: ["OpenSwiftDataSimulator"]
        ),
        .testTarget(
            name: "OpenSwiftDataTests",
            dependencies: ["OpenSwiftData", "OpenSwiftDataSyncProtocol", "OpenSwiftDataTestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // SwiftData's public API, written as SwiftData code writes it: compile-only, so that a
        // missing declaration or overload fails the build.
        .testTarget(
            name: "APISurfaceTests",
            dependencies: ["OpenSwiftData"]
        ),
        // Model code compiled as in an app made from Xcode 26's templates: the main actor as
        // the default isolation, with approachable concurrency's upcoming features.
        .testTarget(
            name: "MainActorDefaultTests",
            dependencies: ["OpenSwiftData"],
            swiftSettings: [
                .unsafeFlags(["-default-isolation", "MainActor"]),
                .enableUpcomingFeature("InferIsolatedConformances"),
                .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
                .enableUpcomingFeature("DisableOutwardActorInheritance"),
            ]
        ),
        // Model code as an app written for Apple's SwiftData has it: `import SwiftData` (never
        // OpenSwiftData), qualified names, `#if canImport(SwiftData)` around models.
        .testTarget(
            name: "SwiftDataImportTests",
            dependencies: [.target(name: "SwiftData", condition: .when(platforms: platformsWithoutSwiftData))]
        ),
        .testTarget(
            name: "OpenSwiftDataSyncProtocolTests",
            dependencies: ["OpenSwiftDataSyncProtocol", "OpenSwiftDataTestSupport"]
        ),
        .testTarget(
            name: "OpenSwiftDataMacrosTests",
            dependencies: [
                "OpenSwiftDataMacros",
                .product(name: "MacroTesting", package: "swift-macro-testing"),
                .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
