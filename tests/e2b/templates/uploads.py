"""Template uploads and refusals against a real `airlock serve` (started with
`--template-upload-max 1M`), through the routes E2B's Template SDK calls, with the SDK's own
HTTP client and hash function. Run by crates/airlock/tests/e2b_templates.rs:

    uploads.py --context DIR --victim DIR --case NAME

Cases: `oversized`, `mismatch`, `hostile` (archives whose paths leave the build, aimed at
VICTIM), `symlink` (a real SDK build copying a symlink that points at VICTIM, then a step
writing through it), `refusals` (a registry image, apt packages on a stored template, a wrong
key; and steps built on a stored template, which stays as it was). Prints `OK` when every
check passed.
"""
import argparse
import io
import os
import tarfile

import httpx
from e2b import Sandbox, Template
from e2b.exceptions import AuthenticationException, BuildException
from e2b.template.utils import calculate_files_hash

p = argparse.ArgumentParser()
p.add_argument("--context", required=True)
p.add_argument("--victim", required=True)
p.add_argument("--case", required=True)
args = p.parse_args()
API = os.environ["E2B_API_URL"]
KEY = {"X-API-KEY": os.environ["E2B_API_KEY"]}
http = httpx.Client(base_url=API, headers=KEY, timeout=60, trust_env=False)


def new_build(name):
    r = http.post("/v3/templates", json={"name": name})
    assert r.status_code == 202, r.text
    return r.json()["templateID"], r.json()["buildID"]


def upload_url(tid, files_hash):
    r = http.get(f"/templates/{tid}/files/{files_hash}")
    assert r.status_code == 201, r.text
    assert r.json()["present"] is False, r.text
    return r.json()["url"]


def tar_of(entries):
    """A gzipped tar of (name, kind, data) entries, names exactly as given."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, kind, data in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.REGTYPE:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            else:
                info.linkname = data.decode()
                t.addfile(info)
    return buf.getvalue()


def trigger(tid, bid, steps):
    body = {"fromImage": "e2bdev/base", "force": False, "steps": steps}
    return http.post(f"/v2/templates/{tid}/builds/{bid}", json=body)


def copy_step(src, dest, files_hash):
    return {"type": "COPY", "args": [src, dest, "", ""], "filesHash": files_hash, "force": False}


def oversized():
    tid, _ = new_build("too-big")
    big = os.urandom(2 << 20)
    url = upload_url(tid, "ab" * 32)
    r = httpx.put(url, content=big, timeout=60, trust_env=False)
    assert r.status_code == 413 and r.json()["code"] == 413, (r.status_code, r.text)
    assert "--template-upload-max" in r.json()["message"], r.text
    # Without a length up front (chunked), the stream is cut off at the cap just the same.
    url = upload_url(tid, "ab" * 32)
    r = httpx.put(url, content=iter([big[i : i + 65536] for i in range(0, len(big), 65536)]),
                  timeout=60, trust_env=False)
    assert r.status_code == 413, (r.status_code, r.text)
    # An upload URL is good for one upload, and only with its token.
    r = httpx.put(url, content=b"x", timeout=60, trust_env=False)
    assert r.status_code == 403 and r.json()["code"] == 403, (r.status_code, r.text)
    r = httpx.put(url.split("?")[0], content=b"x", timeout=60, trust_env=False)
    assert r.status_code == 403, (r.status_code, r.text)


def mismatch():
    files_hash = calculate_files_hash("a.txt", "/opt/a.txt", args.context, [], False, None)
    tid, bid = new_build("mismatch")
    url = upload_url(tid, files_hash)
    r = httpx.put(url, content=tar_of([("a.txt", tarfile.REGTYPE, b"not what was hashed\n")]),
                  timeout=60, trust_env=False)
    assert r.status_code == 200, r.text
    r = trigger(tid, bid, [copy_step("a.txt", "/opt/a.txt", files_hash)])
    assert r.status_code == 400 and "do not match" in r.json()["message"], r.text
    # The bad upload is gone: the SDK is asked for it again.
    r = http.get(f"/templates/{tid}/files/{files_hash}")
    assert r.json()["present"] is False, r.text


def hostile():
    victim = args.victim
    cases = [
        ([("../escape.txt", tarfile.REGTYPE, b"escaped\n")], "`..`"),
        ([("a/../../../escape.txt", tarfile.REGTYPE, b"escaped\n")], "`..`"),
        ([(f"{victim}/absolute.txt", tarfile.REGTYPE, b"escaped\n")], "absolute"),
        ([("out", tarfile.SYMTYPE, victim.encode()),
          ("out/through.txt", tarfile.REGTYPE, b"escaped\n")], "below a symlink"),
        ([("hard", tarfile.LNKTYPE, f"{victim}/victim.txt".encode())], "hard link"),
    ]
    for i, (entries, why) in enumerate(cases):
        tid, bid = new_build(f"hostile-{i}")
        files_hash = f"{i:02x}" * 32
        url = upload_url(tid, files_hash)
        r = httpx.put(url, content=tar_of(entries), timeout=60, trust_env=False)
        assert r.status_code == 200, r.text
        r = trigger(tid, bid, [copy_step(entries[0][0], "/opt/x", files_hash)])
        assert r.status_code == 400 and why in r.json()["message"], (i, r.text)


def symlink():
    # The SDK archives the symlink as a symlink (resolve_symlinks is off by default) and
    # hashes it; the build recreates it inside the build box, and the step writing through it
    # writes into the template being built, never to the host's VICTIM.
    t = (Template(file_context_path=args.context).from_base_image()
         .copy("out", "/opt/out")
         .run_cmd(f"mkdir -p {args.victim} && echo pwned > /opt/out/owned.txt && "
                  f"echo pwned > {args.victim}/victim.txt"))
    Template.build(t, "symlinked")
    sbx = Sandbox.create("symlinked")
    try:
        r = sbx.commands.run(f"readlink /opt/out; cat /opt/out/owned.txt {args.victim}/victim.txt")
        assert r.stdout == f"{args.victim}\npwned\npwned\n", repr(r.stdout)
    finally:
        sbx.kill()


def refusals():
    for image in ["docker.io/library/ubuntu:24.04", "python:3.12"]:
        try:
            Template.build(Template().from_image(image).run_cmd("true"), "from-registry")
            raise AssertionError(f"{image} was built")
        except BuildException as e:
            assert "registry" in str(e) and "from_debian_image" in str(e), str(e)
    Template.build(Template().from_base_image().run_cmd("true"), "layer-base")
    # A stored template as the base: as it is (no steps) it is accepted under a new name...
    Template.build(Template().from_template("layer-base"), "layer-alias")
    assert Template.exists("layer-alias")
    # ...and steps build on a copy of its tree: the new template has both, the base neither.
    layered = (Template(file_context_path=args.context).from_template("layer-base")
               .copy("greeting.txt", "/opt/layer/").run_cmd("echo on-top > /opt/layer/built"))
    Template.build(layered, "layered")
    sbx = Sandbox.create("layered")
    try:
        r = sbx.commands.run("cat /opt/layer/greeting.txt /opt/layer/built; python -c 'print(6*7)'")
        assert r.stdout == "greeting from the build context\non-top\n42\n", repr(r.stdout)
    finally:
        sbx.kill()
    sbx = Sandbox.create("layer-base")
    try:
        r = sbx.commands.run("ls /opt/layer 2>&1 || echo absent")
        assert r.stdout.strip().endswith("absent"), repr(r.stdout)
    finally:
        sbx.kill()
    # apt packages go into a Debian base: on a stored template they are refused, saying so.
    try:
        Template.build(Template().from_template("layer-base").apt_install(["curl"]), "layered-apt")
        raise AssertionError("apt packages on a stored template were built")
    except BuildException as e:
        assert "apt packages (curl) on the stored template" in str(e), str(e)
    wrong = "e2b_" + "0" * 40
    try:
        Template.exists("layer-base", api_key=wrong)
        raise AssertionError("a wrong key was accepted")
    except AuthenticationException as e:
        assert "wrong" in str(e), str(e)
    r = httpx.post(f"{API}/v3/templates", json={"name": "x"}, headers={"X-API-KEY": wrong},
                   trust_env=False)
    assert r.status_code == 401 and r.json()["code"] == 401, r.text


{"oversized": oversized, "mismatch": mismatch, "hostile": hostile, "symlink": symlink,
 "refusals": refusals}[args.case]()
print("OK")
