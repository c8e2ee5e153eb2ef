#!/usr/bin/env bash
# Installs E2B's official client SDKs, pinned, for the E2B conformance suite (tests/e2b,
# crates/airlock/tests/e2b_sdk.rs) and benches/e2b.sh:
#   DIR/py-current  Python venv: e2b 2.63.0 + e2b-code-interpreter 2.11.5, pytest (tests/e2b/requirements-current.txt)
#   DIR/py-older    Python venv: e2b 2.45.1 + e2b-code-interpreter 2.10.0, pytest (tests/e2b/requirements-older.txt)
#   DIR/js          npm folder:  e2b 2.51.0 + @e2b/code-interpreter 2.8.0 (tests/e2b/js/package-lock.json)
#   DIR/typescript  npm folder:  typescript 5.9.3 (tests/e2b/typescript/package-lock.json), the
#                   compiler the suites copy into sandboxes for their TypeScript cells
# Every dependency is pinned in those files. Idempotent: each client keeps a stamp (a hash of its pin
# file and of the interpreter), so a second run with nothing changed only checks and prints.
# Prints the paths as shell assignments (E2B_CLIENTS_DIR=…); the tests find them there.
# Usage: scripts/e2b-clients.sh [DIR]   (default: $E2B_CLIENTS_DIR, else target/e2b-clients)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dir=${1:-${E2B_CLIENTS_DIR:-$repo/target/e2b-clients}}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# Debian's interpreter (scripts/test.sh installs python3 and python3-venv): a venv made from it does
# not depend on whichever python3 comes first on PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)

stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

venv() { # NAME REQUIREMENTS
  local target="$dir/$1" req="$repo/$2" want
  want="$(stamp_of "$req") $("$py" -c 'import sys; print(sys.version)' | head -1)"
  if [ -x "$target/bin/python" ] && [ "$(cat "$target/.stamp" 2>/dev/null)" = "$want" ]; then
    return
  fi
  rm -rf "$target"
  "$py" -m venv "$target"
  "$target/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req"
  # The exact pins must be what got installed (a resolver that picked something else fails here).
  "$target/bin/python" -m pip check >/dev/null
  echo "$want" >"$target/.stamp"
}

npm_folder() { # NAME FOLDER_WITH_PACKAGE_JSON_AND_LOCK MODULE_IT_MUST_HOLD
  local target="$dir/$1" src="$repo/$2" want
  want="$(stamp_of "$src/package.json" "$src/package-lock.json") $(node --version)"
  if [ -d "$target/node_modules/$3" ] && [ "$(cat "$target/.stamp" 2>/dev/null)" = "$want" ]; then
    return
  fi
  rm -rf "$target"
  mkdir -p "$target"
  cp "$src/package.json" "$src/package-lock.json" "$target/"
  # npm ci installs exactly the lock file, and fails if package.json and the lock disagree.
  (cd "$target" && npm ci --silent --no-audit --no-fund --ignore-scripts >/dev/null)
  echo "$want" >"$target/.stamp"
}

venv py-current tests/e2b/requirements-current.txt
venv py-older tests/e2b/requirements-older.txt
npm_folder js tests/e2b/js e2b
npm_folder typescript tests/e2b/typescript typescript

echo "E2B_CLIENTS_DIR=$dir"
echo "E2B_PY_CURRENT=$dir/py-current/bin/python"
echo "E2B_PY_OLDER=$dir/py-older/bin/python"
echo "E2B_JS_MODULES=$dir/js/node_modules"
echo "E2B_TYPESCRIPT=$dir/typescript/node_modules/typescript"
