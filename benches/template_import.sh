#!/usr/bin/env bash
# Template import benchmark: `airlock template import` of a ~100 MB one-layer OCI image (a copy
# of the host's Python standard library and shared libraries, uncompressed) against `tar -x` of
# the same layer in the same run. Import also verifies the layer's digests, checks every entry,
# and digests the resulting tree.
# Usage: benches/template_import.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cargo build --release --locked -q
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/airlock
ws=$(mktemp -d /tmp/airlock-import-bench-XXXXXX)
trap 'rm -rf "$ws"' EXIT
python3 - "$ws" <<'PY'
import hashlib, io, json, os, sys, tarfile
ws = sys.argv[1]
out = os.path.join(ws, "image"); blobs = os.path.join(out, "blobs", "sha256")
os.makedirs(blobs)
layer = os.path.join(ws, "layer.tar")
with tarfile.open(layer, "w") as t:
    total = 0
    for src in ("/usr/lib/python3.11", "/usr/lib/x86_64-linux-gnu"):
        for root, dirs, files in os.walk(src):
            for f in files:
                p = os.path.join(root, f)
                if total > 100 << 20 or not os.path.isfile(p) or os.path.islink(p):
                    continue
                total += os.path.getsize(p)
                t.add(p, arcname=p.lstrip("/"), recursive=False)
data = open(layer, "rb").read()
def put(b):
    h = hashlib.sha256(b).hexdigest()
    open(os.path.join(blobs, h), "wb").write(b)
    return "sha256:" + h, len(b)
ld, ls = put(data)
cd, cs = put(json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [ld]}}).encode())
md, ms = put(json.dumps({"schemaVersion": 2, "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
                         "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ld, "size": ls}]}).encode())
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms}]},
          open(os.path.join(out, "index.json"), "w"))
open(os.path.join(out, "oci-layout"), "w").write('{"imageLayoutVersion":"1.0.0"}')
print(f"layer: {len(data) / (1 << 20):.0f} MiB")
PY
hyperfine -N --runs "$runs" --export-json "$ws/h.json" \
  --prepare "sh -c 'rm -rf $ws/data $ws/x; mkdir -p $ws/x'" \
  -n import "$bin template import --data-dir $ws/data --name bench $ws/image" \
  -n tar-x "tar -xf $ws/layer.tar -C $ws/x" >/dev/null
python3 - "$ws/h.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
print(f"import median {r['import']*1000:.0f} ms, tar -x {r['tar-x']*1000:.0f} ms, ratio {r['import']/r['tar-x']:.2f}x (goal <= 1.5x)")
PY
