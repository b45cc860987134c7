#!/usr/bin/env bash
# Builds a scratch package that depends on this one by path, as an app adds it, and uses only the
# library through `import SwiftData`: it must build and run, and must not build the server's or
# the sync engine's dependencies (SwiftPM builds only the targets of the products a client
# uses). It runs twice: with the version ranges resolved afresh (the highest versions allowed),
# and with swift-syntax held at the lowest version the range allows (602.0.0), the one
# dependency of the library with more than one allowed version here.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
variant="${1:-both}"
if [ "$variant" = "both" ]; then
    "$0" highest
    "$0" lowest
    exit 0
fi
pin=""
if [ "$variant" = "lowest" ]; then
    pin='.package(url: "https://github.com/swiftlang/swift-syntax", exact: "602.0.0"),'
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/Sources/Notes"
cat > "$scratch/Package.swift" <<SWIFT
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Notes",
    dependencies: [$pin .package(path: "$root")],
    targets: [
        .executableTarget(name: "Notes", dependencies: [.product(name: "SwiftData", package: "$(basename "$root")")]),
    ]
)
SWIFT
cat > "$scratch/Sources/Notes/main.swift" <<'SWIFT'
import Foundation
import SwiftData

@Model
final class Note {
    var text: String
    init(text: String) { self.text = text }
}

let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
let context = ModelContext(container)
context.insert(Note(text: "hello"))
try context.save()
print("notes:", try context.fetchCount(FetchDescriptor<Note>()))
SWIFT
cd "$scratch"
output="$(swift run Notes 2>&1)" || { echo "$output"; exit 1; }
echo "$output" | tail -1
echo "$output" | grep -q "^notes: 1$"
# Only what the library needs was built: no server or sync dependency.
for module in Hummingbird NIOCore AsyncHTTPClient PostgresNIO JWTKit OpenSwiftDataSync OpenSwiftDataServer; do
    if ls .build/debug/Modules/"$module".swiftmodule >/dev/null 2>&1 || ls .build/debug/"$module".swiftmodule >/dev/null 2>&1; then
        echo "a dependent that uses only the library built $module" >&2
        exit 1
    fi
done
syntax="$(grep -A6 '"identity" : "swift-syntax"' Package.resolved | grep '"version"' | sed 's/.*: "\(.*\)".*/\1/' || true)"
echo "dependent package ($variant versions, swift-syntax $syntax): builds and runs with only the library's dependencies"
