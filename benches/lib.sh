# Shared by the benches that measure this build against another airlock in the same run
# (benches/startup_against.sh, benches/e2b_against.sh). Source it from the repository root.

# Builds this tree's airlock in release and prints its path.
bench_this_airlock() {
  cargo build --release --locked -q -p airlock
  echo "${CARGO_TARGET_DIR:-$PWD/target}/release/airlock"
}

# Prints the path of the other airlock: OTHER itself when it is an executable file, else the
# commit OTHER names, built in release from an export of that commit's tree (`git archive` into a
# temporary directory, removed after; the repository's worktrees are not touched) with a target
# dir of its own, target/against/COMMIT, which is kept: a later run reuses the build.
bench_other_airlock() {
  local other=$1 sha cache tree
  if [ -f "$other" ] && [ -x "$other" ]; then
    realpath "$other"
    return
  fi
  if ! sha=$(git rev-parse --verify --quiet "$other^{commit}"); then
    echo "not an executable nor a commit of this repository: $other" >&2
    return 2
  fi
  cache=${CARGO_TARGET_DIR:-$PWD/target}/against/$sha
  if [ ! -f "$cache/built" ]; then
    echo "building $other ($sha) in release under $cache (kept for later runs)" >&2
    tree=$(mktemp -d /tmp/airlock-against-XXXXXX)
    git archive "$sha" | tar -x -C "$tree"
    if ! (cd "$tree" && CARGO_TARGET_DIR=$cache cargo build --release --locked -q -p airlock); then
      rm -rf "$tree"
      echo "building $sha failed" >&2
      return 1
    fi
    rm -rf "$tree"
    touch "$cache/built"
  fi
  echo "$cache/release/airlock"
}

# The order of the two binaries in round ROUND: odd rounds this build first, even rounds the
# other first, so drift on the machine falls on both alike.
bench_order() {
  if [ $(($1 % 2)) -eq 1 ]; then echo "new other"; else echo "other new"; fi
}
