"""E2B's Secret API and network rules through the real Python SDK, against `airlock serve`.

Run by crates/airlock/tests/e2b_secrets.rs, which starts the loopback HTTPS origin
(`https://api.test:$ORIGIN_PORT`, a test CA the server trusts, `--e2b-map-host api.test=127.0.0.1`)
and checks what the origin received. This script does what an E2B user does: stores a secret,
updates it, creates a sandbox whose network rule puts it in the Authorization header of requests to
the origin, and runs curl and Python in the box against the origin. It prints one JSON object: every
answer the SDK gave and everything the box printed, for the caller to search for the value.
"""
import json
import os
import sys

from e2b import Sandbox, Secret

port = int(os.environ["ORIGIN_PORT"])
value = os.environ["SECRET_VALUE"]
name = f"api-key-{os.getpid()}"
out = {"answers": [], "box": [], "steps": []}


def answer(what, info):
    out["answers"].append(f"{what}: {info!r}")
    return info


def step(text):
    out["steps"].append(text)


def refused(what, call, says):
    """`call` must raise, with `says` in its message."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 - whatever the SDK maps the status to
        out["answers"].append(f"{what}: {e}")
        assert says in str(e).lower(), f"{what}: {e}"
        return
    raise AssertionError(f"{what} was accepted")


created = answer("create", Secret.create(name, "sk-decoy-first-version", metadata={"team": "blue"}))
assert created.version == 1 and created.name == name and created.metadata == {"team": "blue"}, created
updated = answer("update", Secret.update(created.secret_id, value))
assert updated.version == 2 and updated.secret_id == created.secret_id, updated
assert updated.metadata == {"team": "blue"}, "an update without metadata keeps it"
got = answer("get_info by name", Secret.get_info(name))
assert got.secret_id == created.secret_id and got.version == 2, got
listed = Secret.list(limit=50)
items = listed.next_items()
answer("list", items)
assert [s.name for s in items if s.name == name] == [name], items
refused("a second secret of the same name", lambda: Secret.create(name, "sk-duplicate"), "exists")
step("secret stored, updated, listed")

network = {
    "allow_out": ["127.0.0.1", "api.test"],
    "rules": {
        f"api.test:{port}": [
            {"transform": {"headers": {"Authorization": "Bearer " + Secret.fill(name)}}},
        ]
    },
}
sbx = Sandbox.create(network=network, timeout=120)
try:
    info = answer("sandbox info", sbx.get_info())
    shown = (info.network or {}).get("rules")
    expected = {f"api.test:{port}": [{"transform": {"headers": {"Authorization": "Bearer " + Secret.fill(name)}}}]}
    assert shown == expected, f"the info shows the rules as given: {shown!r}"
    url = f"https://api.test:{port}"
    for cmd in [
        # The box sends a made-up key: the rule's header replaces it.
        f"curl -sS --fail -H 'Authorization: Bearer made-up' {url}/curl",
        f"python3 -c \"import urllib.request as u; print(u.urlopen('{url}/python').read().decode())\"",
        "env; cat /proc/self/environ | tr '\\0' '\\n'",
        "grep -rl -- \"$(printf %s airlock-secret-)\" /etc /tmp /home 2>/dev/null | head; echo grep-done",
    ]:
        r = sbx.commands.run(cmd, timeout=60)
        out["box"].append({"cmd": cmd, "exit": r.exit_code, "stdout": r.stdout, "stderr": r.stderr})
    step("box ran its requests")
    out["sandbox_id"] = sbx.sandbox_id
finally:
    sbx.kill()

assert Secret.exists(name)
assert Secret.destroy(name) is True
assert Secret.destroy(name) is False, "a second destroy finds nothing"
assert not Secret.exists(name)
refused("a deleted secret's info", lambda: Secret.get_info(name), "not found")
refused("a rule naming a deleted secret", lambda: Sandbox.create(network=network, timeout=30).kill(), "does not exist")
constant = {"allow_out": ["api.test"], "rules": {"api.test": [{"transform": {"headers": {"X-Team": "blue"}}}]}}
refused("a constant header rule", lambda: Sandbox.create(network=constant, timeout=30).kill(), "names no secret")
step("deleted secret refused")
print(json.dumps(out))
