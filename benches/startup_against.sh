#!/usr/bin/env bash
# Start-up of this build against another airlock (a binary, or a commit built in release under
# target/against/COMMIT, see benches/lib.sh), with bubblewrap as the peer, in the same runs:
# `airlock run -- /bin/true` back to back and after a 50 ms idle spell. Rounds alternate the
# order of the commands, so drift on the machine falls on both binaries alike. Prints each
# round's medians and the ratios.
# Usage: benches/startup_against.sh OTHER [RUNS] [ROUNDS]
#   e.g. benches/startup_against.sh 8818f19 300 3
# With AIRLOCK_BENCH_TEMPLATE=1 both binaries run a box on a small template (`--template`, the
# image startup.sh makes) and the peer is the minimal bubblewrap (/usr, /proc, /dev, /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
repo=$PWD
other_arg=${1:?usage: benches/startup_against.sh OTHER [RUNS] [ROUNDS]}
runs=${2:-300}
rounds=${3:-3}
other=$(bench_other_airlock "$other_arg")
bin=$(bench_this_airlock)
ws=$(mktemp -d /tmp/airlock-bench-XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
bwrap_cmd=$("$bin" receipt --json | python3 "$repo/benches/bwrap_peer.py" /bin/true)
run_args="run --no-stdin"
if [ "${AIRLOCK_BENCH_TEMPLATE:-0}" = 1 ]; then
  python3 "$repo/benches/template_image.py" "$ws/image" true
  "$bin" template import --data-dir "$ws/data" --name bench "$ws/image" >/dev/null
  run_args="run --no-stdin --data-dir $ws/data --template bench --workspace none"
  bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp /bin/true"
fi
eval "$bwrap_cmd" || { echo "the bwrap peer command failed: $bwrap_cmd" >&2; exit 1; }
for round in $(seq 1 "$rounds"); do
  args=()
  for name in $(bench_order "$round") bwrap; do
    case $name in
      new) args+=(-n new "$bin $run_args -- /bin/true") ;;
      other) args+=(-n other "$other $run_args -- /bin/true") ;;
      bwrap) args+=(-n bwrap "$bwrap_cmd") ;;
    esac
  done
  hyperfine -N --warmup 30 --runs "$runs" --export-json "$ws/warm-$round.json" "${args[@]}" >/dev/null
  hyperfine -N --warmup 5 --runs $(( (runs + 2) / 3 )) --prepare 'sleep 0.05' \
    --export-json "$ws/cold-$round.json" "${args[@]}" >/dev/null
done
python3 - "$ws" "$rounds" <<'PY'
import json, sys
ws, rounds = sys.argv[1], int(sys.argv[2])
for kind in ("warm", "cold"):
    for r in range(1, rounds + 1):
        res = {x["command"]: x for x in json.load(open(f"{ws}/{kind}-{r}.json"))["results"]}
        med = {k: v["median"] * 1000 for k, v in res.items()}
        mean = {k: v["mean"] * 1000 for k, v in res.items()}
        n, o, b = med["new"], med["other"], med["bwrap"]
        label = "back to back" if kind == "warm" else "after 50 ms idle"
        print(f"{label}, round {r}: medians new {n:.2f} ms ({n / b:.2f}x bwrap), other {o:.2f} ms ({o / b:.2f}x), bwrap {b:.2f} ms; new / other {n / o:.3f}; means new / other {mean['new'] / mean['other']:.3f} ({mean['new']:.2f} / {mean['other']:.2f} ms)")
PY
