#!/usr/bin/env bash
# Prepares the microVM backend's guest under target/microvm (cached; fast when done):
#   kernel/  Debian's generic kernel package, extracted with dpkg-deb (never installed). The
#            cloud kernel has no 9p, which the host template and the workspace share need.
#   guest/   airlock-vm-init and airlock-agent, built static (they run before any root exists
#            and inside template roots that may have no glibc).
# Needs: apt-get (download only), dpkg-deb, cargo; QEMU and mkfs.erofs are installed by
# scripts/test.sh (qemu-system-x86, erofs-utils).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/microvm
pkg=linux-image-amd64
if [ ! -d "$dir/kernel/boot" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # The versioned package the meta-package points at.
  real=$(apt-cache depends "$pkg" | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  (cd "$tmp" && apt-get download "$real" >/dev/null 2>&1)
  mkdir -p "$tmp/x"
  dpkg-deb -x "$tmp"/*.deb "$tmp/x"
  mkdir -p "$dir/kernel"
  mv "$tmp/x/boot" "$dir/kernel/boot"
  mkdir -p "$dir/kernel/lib"
  mv "$tmp/x/lib/modules" "$dir/kernel/lib/modules"
  chmod -R a+rX "$dir/kernel"
fi
RUSTFLAGS='-C target-feature=+crt-static' cargo build -q --release --locked \
  --target x86_64-unknown-linux-gnu -p airlock-microvm-guest -p airlock-agent \
  --bin airlock-vm-init --bin airlock-agent
mkdir -p "$dir/guest"
for bin in airlock-vm-init airlock-agent; do
  src=target/x86_64-unknown-linux-gnu/release/$bin
  cmp -s "$src" "$dir/guest/$bin" 2>/dev/null || install -m 0755 "$src" "$dir/guest/$bin"
done
