#!/usr/bin/env bash
# The everyday test lane: the library, engine and server tests without PostgreSQL, the
# processes killed with SIGKILL and the simulator's seeds. CI runs everything (README's test
# command); run this while you work, and the whole suite before you push.
set -euo pipefail
cd "$(dirname "$0")/.."
export OSD_TEST_SKIP_POSTGRES=1
exec swift test --skip "RealProcessKillTests|ProcessKillTests|AttachmentCrashTests|SimulatorTests|LiveAndProcessTests" "$@"
