#!/usr/bin/env bash
# Exec paths of this build against another airlock in the same run (benches/exec_against.py):
# native create -> first output with a pool, create without one, and (with runsc) gVisor's warm
# exec. OTHER is an airlock binary or a commit, built in release under target/against/COMMIT
# (once; see benches/lib.sh). The runsc is the tests' one (scripts/gvisor-runsc.sh).
# Usage: benches/exec_against.sh OTHER [ROUNDS]   (default 60; as root)
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
other_arg=${1:?usage: benches/exec_against.sh OTHER [ROUNDS]}
other=$(bench_other_airlock "$other_arg")
new=$(bench_this_airlock)
AIRLOCK_RUNSC=${AIRLOCK_RUNSC:-$(scripts/gvisor-runsc.sh)}
export AIRLOCK_RUNSC
python3 benches/exec_against.py "$new" "$other" "${2:-60}"
