#!/usr/bin/env bash
# E2B SDK figures (benches/e2b_sdk.py: SDK create + run("true") + kill and warm run_code("1+1"),
# each beside the native API's same work) of this build against another airlock in the same run.
# OTHER is an airlock binary or a commit, built in release under target/against/COMMIT (once;
# see benches/lib.sh). Each of ROUNDS rounds runs the figures once per binary, each against a
# fresh server, the order alternating; prints, per figure, each binary's median and mean over
# all rounds' samples and the ratios new / other, each round's ratio of medians, and the SDK +
# gateway's own share (SDK figure less its native peer) per round.
# Usage: benches/e2b_against.sh OTHER [ITERATIONS] [WARM_RUNS] [ROUNDS]   (defaults 30 300 4)
#   e.g. benches/e2b_against.sh 05c46a1 30 300 4   (the commit before the E2B fidelity work)
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
other_arg=${1:?usage: benches/e2b_against.sh OTHER [ITERATIONS] [WARM_RUNS] [ROUNDS]}
iterations=${2:-30}
warm=${3:-300}
rounds=${4:-4}
other=$(bench_other_airlock "$other_arg")
new=$(bench_this_airlock)
eval "$(scripts/e2b-clients.sh)"
export PYTHONDONTWRITEBYTECODE=1
ws=$(mktemp -d /tmp/airlock-bench-XXXXXX)
trap 'rm -rf "$ws"' EXIT
for round in $(seq 1 "$rounds"); do
  for name in $(bench_order "$round"); do
    if [ "$name" = new ]; then bin=$new; else bin=$other; fi
    echo "round $round: $name ($bin)" >&2
    "$E2B_PY_CURRENT" benches/e2b_sdk.py "$bin" "$iterations" "$warm" "$ws/$name-$round.json" >&2
  done
done
python3 - "$ws" "$rounds" "$other_arg" <<'PY'
import json, statistics, sys
ws, rounds, other = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {(n, r): json.load(open(f"{ws}/{n}-{r}.json")) for n in ("new", "other") for r in range(1, rounds + 1)}
figures = list(runs[("new", 1)])
print(f"new = this build, other = {other}; {rounds} rounds, order alternating")
for fig in figures:
    pooled = {n: [x for r in range(1, rounds + 1) for x in runs[(n, r)][fig]] for n in ("new", "other")}
    med = {n: statistics.median(v) for n, v in pooled.items()}
    mean = {n: statistics.fmean(v) for n, v in pooled.items()}
    per_round = [statistics.median(runs[("new", r)][fig]) / statistics.median(runs[("other", r)][fig])
                 for r in range(1, rounds + 1)]
    print(f"{fig}: median new {med['new']:.3f} ms, other {med['other']:.3f} ms, new / other {med['new'] / med['other']:.3f}; "
          f"mean new {mean['new']:.3f} ms, other {mean['other']:.3f} ms, new / other {mean['new'] / mean['other']:.3f}; "
          f"per round (medians) {', '.join(f'{x:.3f}' for x in per_round)}")
# The SDK + gateway's own share: each round's SDK median less its native peer's.
for sdk_fig, native_fig in zip(figures[0::2], figures[1::2]):
    share = {n: sorted(statistics.median(runs[(n, r)][sdk_fig]) - statistics.median(runs[(n, r)][native_fig])
                       for r in range(1, rounds + 1)) for n in ("new", "other")}
    print(f"{sdk_fig} less {native_fig}, per round: new {', '.join(f'{x:.2f}' for x in share['new'])} ms "
          f"(median {statistics.median(share['new']):.2f}); other {', '.join(f'{x:.2f}' for x in share['other'])} ms "
          f"(median {statistics.median(share['other']):.2f})")
PY
