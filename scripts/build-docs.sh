#!/usr/bin/env bash
# Builds the DocC documentation of every library product, with DocC's warnings as errors (a
# broken symbol link or a missing page fails): swift-docc-plugin's generate-documentation.
# Archives land in .build/plugins/Swift-DocC/outputs/<target>.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."
# One run of the plugin for every target: it loads the package and builds the symbol graphs once.
targets=()
for target in OpenSwiftData OpenSwiftDataSync OpenSwiftDataSyncProtocol OpenSwiftDataServer OpenSwiftDataServerSQLite OpenSwiftDataServerPostgres; do
    targets+=(--target "$target")
done
swift package generate-documentation "${targets[@]}" --warnings-as-errors
