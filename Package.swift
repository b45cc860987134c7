// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "OpenSwiftData",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "OpenSwiftData", targets: ["OpenSwiftData"]),
        .library(name: "OpenSwiftDataSyncProtocol", targets: ["OpenSwiftDataSyncProtocol"]),
        .executable(name: "osd-demo", targets: ["osd-demo"]),
        .executable(name: "osd-benchmarks", targets: ["osd-benchmarks"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", exact: "602.0.0"),
        .package(url: "https://github.com/pointfreeco/swift-macro-testing", exact: "0.7.0"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
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
                "OpenSwiftDataMacros",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The sync wire protocol: Codable types on Foundation alone, shared by the sync engine
        // and the server.
        .target(name: "OpenSwiftDataSyncProtocol"),
        .executableTarget(
            name: "osd-demo",
            dependencies: ["OpenSwiftData"]
        ),
        // The code shown in README.md and the DocC articles, compiled so that it stays true
        // (scripts/check-doc-examples.py checks that the documents quote these files exactly).
        .executableTarget(name: "QuickStart", dependencies: ["OpenSwiftData"], path: "Examples/QuickStart"),
        .executableTarget(name: "GettingStarted", dependencies: ["OpenSwiftData"], path: "Examples/GettingStarted"),
        .executableTarget(name: "Relationships", dependencies: ["OpenSwiftData"], path: "Examples/Relationships"),
        .executableTarget(name: "Queries", dependencies: ["OpenSwiftData"], path: "Examples/Queries"),
        .executableTarget(name: "Migrations", dependencies: ["OpenSwiftData"], path: "Examples/Migrations"),
        .executableTarget(name: "History", dependencies: ["OpenSwiftData"], path: "Examples/History"),
        // OpenSwiftData against hand-written GRDB code: `swift run -c release osd-benchmarks`.
        // Built (in debug) by every `swift build`, so it keeps compiling as the API changes.
        .executableTarget(
            name: "osd-benchmarks",
            dependencies: ["OpenSwiftData", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/Sources/osd-benchmarks"
        ),
        .testTarget(
            name: "OpenSwiftDataTests",
            dependencies: ["OpenSwiftData", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "OpenSwiftDataSyncProtocolTests",
            dependencies: ["OpenSwiftDataSyncProtocol"]
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
