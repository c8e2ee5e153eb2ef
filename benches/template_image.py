"""Makes a small OCI image layout for template benchmarks: a merged-/usr root holding the given
host programs and the shared libraries they load, as one uncompressed layer.

Usage: python3 benches/template_image.py OUT_DIR PROGRAM...
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

out, programs = sys.argv[1], sys.argv[2:]
tree = tempfile.mkdtemp(prefix="airlock-bench-tree-")
for d in ("usr/bin", "usr/lib", "usr/lib64", "etc", "tmp"):
    os.makedirs(os.path.join(tree, d), exist_ok=True)
for link, to in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
    os.symlink(to, os.path.join(tree, link))
for p in programs:
    host = shutil.which(p)
    shutil.copy(host, os.path.join(tree, "usr/bin", p))
    for word in subprocess.run(["ldd", host], capture_output=True, text=True).stdout.split():
        if word.startswith("/"):
            inside = word[len("/usr"):] if word.startswith("/usr/") else word
            dest = os.path.join(tree, "usr", inside.lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy(os.path.realpath(word), dest)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    t.add(tree, arcname=".")
shutil.rmtree(tree)
layer = buf.getvalue()
blobs = os.path.join(out, "blobs", "sha256")
os.makedirs(blobs, exist_ok=True)


def put(data):
    h = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, h), "wb") as f:
        f.write(data)
    return "sha256:" + h, len(data)


ld, ls = put(layer)
config = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                     "rootfs": {"type": "layers", "diff_ids": [ld]}}).encode()
cd, cs = put(config)
manifest = json.dumps({"schemaVersion": 2,
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                  "digest": cd, "size": cs},
                       "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                   "digest": ld, "size": ls}]}).encode()
md, ms = put(manifest)
with open(os.path.join(out, "index.json"), "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms}]}, f)
with open(os.path.join(out, "oci-layout"), "w") as f:
    f.write('{"imageLayoutVersion":"1.0.0"}')
