#!/usr/bin/env bash
# Fetches the gVisor runsc the tests and benchmarks run on: Debian trixie's runsc (a static
# binary), pinned by version and by the SHA-256 of its .deb, under target/gvisor (cached; fast
# when done). Bookworm's own runsc (0.0~20221219) cannot restore a checkpoint of an airlock box
# and has no systrap platform; this one does both. Nothing on the host changes: apt-get runs
# with a sources file, lists and cache of its own under a temporary directory, only downloads,
# and dpkg-deb extracts the binary (never installed).
# The mirror is the host's own (read from its apt sources; only the suite is swapped), so this
# script names no registry host.
# Prints the binary's path (the tests take it from AIRLOCK_RUNSC; scripts/test.sh sets that).
# Needs: apt-get, dpkg-deb, sha256sum.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.0~20240729.0-4+b7
sha256=3c25a5130dfac2f71237d5baad56ac86a255de87a0400f11b36a555156dc325a
suite=trixie
# Keyed by the pin: a new version or digest is a new directory.
dir=target/gvisor/runsc-$(echo "$version" | tr '~+' '__')-${sha256:0:12}
bin=$dir/runsc
if [ -x "$bin" ]; then
  echo "$PWD/$bin"
  exit 0
fi

# The host's Debian archive: the first deb822 or one-line source whose suite is the host's
# release itself (not -security or -updates), with its Signed-By when it has one.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ -z "$codename" ]; then
  echo "scripts/gvisor-runsc.sh: /etc/os-release names no VERSION_CODENAME; cannot find the host's Debian mirror" >&2
  exit 1
fi
mirror=""
signed=""
shopt -s nullglob
for f in /etc/apt/sources.list.d/*.sources; do
  [ -n "$mirror" ] && break
  # Paragraph by paragraph: URIs, Suites and Signed-By of each.
  read -r mirror signed < <(awk -v want="$codename" '
    function flush() {
      if (uris != "" && found == "") {
        n = split(suites, s, " ")
        for (i = 1; i <= n; i++) if (s[i] == want) { split(uris, u, " "); found = u[1] " " signed }
      }
      uris = ""; suites = ""; signed = ""
    }
    /^[[:space:]]*$/ { flush(); next }
    /^URIs:/ { sub(/^URIs:[[:space:]]*/, ""); uris = $0 }
    /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); suites = $0 }
    /^Signed-By:/ { sub(/^Signed-By:[[:space:]]*/, ""); signed = $0 }
    END { flush(); print found }
  ' "$f") || true
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -n "$mirror" ] && break
  [ -f "$f" ] || continue
  # deb [options] URI SUITE COMPONENTS…
  line=$(awk -v want="$codename" '$1 == "deb" {
      i = 2; opts = ""
      if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
      if ($(i + 1) == want) { print $i " " opts; exit }
    }' "$f")
  if [ -n "$line" ]; then
    mirror=${line%% *}
    signed=$(echo "$line" | sed -n 's/.*signed-by=\([^] ]*\).*/\1/p')
  fi
done
if [ -z "$mirror" ]; then
  echo "scripts/gvisor-runsc.sh: the host's apt sources name no mirror for $codename; add one under /etc/apt/sources.list.d" >&2
  exit 1
fi
[ -n "$signed" ] || signed=/usr/share/keyrings/debian-archive-keyring.gpg

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/x"
cat > "$tmp/runsc.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite
Components: main
Signed-By: $signed
EOF
apt_opts=(-o "Dir::Etc::sourcelist=$tmp/runsc.sources" -o Dir::Etc::sourceparts=/dev/null
  -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o Debug::NoLocking=1)
apt-get "${apt_opts[@]}" update -qq >"$tmp/update.log" 2>&1 || {
  cat "$tmp/update.log" >&2
  echo "scripts/gvisor-runsc.sh: apt-get update of $suite from the host's mirror failed" >&2
  exit 1
}
(cd "$tmp" && apt-get "${apt_opts[@]}" download "runsc=$version" >"$tmp/download.log" 2>&1) || {
  cat "$tmp/download.log" >&2
  echo "scripts/gvisor-runsc.sh: cannot download runsc $version from $suite; if $suite moved on, update the pin (version and SHA-256) in this script" >&2
  exit 1
}
deb=$(echo "$tmp"/runsc_*.deb)
got=$(sha256sum "$deb" | cut -d' ' -f1)
if [ "$got" != "$sha256" ]; then
  echo "scripts/gvisor-runsc.sh: $deb has SHA-256 $got, the pin says $sha256: refusing it" >&2
  exit 1
fi
dpkg-deb -x "$deb" "$tmp/x"
mkdir -p "$dir"
install -m 0755 "$tmp/x/usr/bin/runsc" "$bin.part"
mv "$bin.part" "$bin"
echo "$PWD/$bin"
