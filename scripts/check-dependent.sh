#!/usr/bin/env bash
# Builds a scratch package that depends on this one by path, as an app adds it (version ranges
# resolved afresh), and uses only the library through `import SwiftData`: it must build and run,
# and must not build the server's or the sync engine's dependencies (SwiftPM builds only the
# targets of the products a client uses).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/Sources/Notes"
cat > "$scratch/Package.swift" <<SWIFT
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Notes",
    dependencies: [.package(path: "$root")],
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
echo "dependent package: builds and runs with only the library's dependencies"
