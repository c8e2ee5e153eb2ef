"""Network: `allow_internet_access=False` and `network.allow_out` / `deny_out` become the box's
egress policy, and the sandbox's own code sees the denial.

The only destination is an HTTP server this test starts on the host's 127.0.0.1 (no name, no DNS,
nothing outside the machine). Inside a box, 127.0.0.1 is the box's own loopback, so the host's
server is reachable only through airlock's egress proxy, which refuses loopback unless a rule
grants that address: the positive case (allow_out 127.0.0.1) proves the path works, so the
denials below are real denials and not a broken setup."""

import pytest

# Fetches URL from inside the box through the egress proxy (curl honours the proxy variables
# airlock sets; `--noproxy ''` overrides NO_PROXY, which sends loopback to the box's own loopback,
# so that the host's server is asked for through the proxy), prints the HTTP status and body;
# `curl` exits non-zero when it cannot connect.
FETCH = "curl --noproxy '' -sS --max-time 10 -o /tmp/body -w '%{{http_code}}' {url}; echo \" exit=$?\"; cat /tmp/body 2>/dev/null; true"


def refused(out):
    """The fetch failed: curl could not connect, or the proxy answered 403."""
    return out.startswith("403 exit=0") or " exit=0" not in out


async def fetch(sdk, sbx, url):
    result = await sdk(sbx.commands.run, FETCH.format(url=url), timeout=30)
    return result.stdout


async def test_allow_out_grants_the_address(sdk, loopback_server):
    async with sdk.sandbox(network={"allow_out": ["127.0.0.1"]}) as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert out.startswith("200 exit=0"), out
        assert loopback_server.secret in out
        assert loopback_server.requests == ["/probe"]


async def test_no_internet_access_means_no_way_out(sdk, loopback_server):
    async with sdk.sandbox(allow_internet_access=False) as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert refused(out), out
        assert loopback_server.secret not in out
        assert loopback_server.requests == []
        # There is no proxy to go through either.
        env = await sdk(sbx.commands.run, "echo \"[${HTTP_PROXY:-}${http_proxy:-}${ALL_PROXY:-}]\"")
        assert env.stdout == "[]\n", env.stdout
        info = await sdk(sbx.get_info)
        assert info.allow_internet_access is False


async def test_deny_out_all_traffic_is_refused(sdk, loopback_server):
    async with sdk.sandbox(network={"deny_out": ["0.0.0.0/0"]}) as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert loopback_server.secret not in out
        assert loopback_server.requests == []
        assert refused(out), out


async def test_default_network_refuses_loopback(sdk, loopback_server):
    """With no network option a box may reach public addresses (E2B's default) but never the
    host's loopback: the proxy refuses it and says so."""
    async with sdk.sandbox() as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert refused(out), out
        assert loopback_server.requests == []
        assert loopback_server.secret not in out
        headers = await sdk(sbx.commands.run, f"curl --noproxy '' -sS --max-time 10 -D - -o /dev/null {loopback_server.url} || true", timeout=30)
        assert headers.stdout.startswith("HTTP/1.1 403"), headers.stdout
        assert "x-airlock-denied" in headers.stdout.lower()


async def test_deny_out_of_one_address_wins_over_an_allowed_range(sdk, loopback_server):
    """`deny_out` of a single address (not only `0.0.0.0/0`): refused even though `allow_out`
    grants its range; denying another address of the range leaves this one reachable."""
    opts = {"allow_out": ["127.0.0.0/8"], "deny_out": ["127.0.0.1"]}
    async with sdk.sandbox(network=opts) as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert refused(out) and loopback_server.secret not in out, out
        assert loopback_server.requests == []
        headers = await sdk(sbx.commands.run, f"curl --noproxy '' -sS --max-time 10 -D - -o /dev/null {loopback_server.url} || true", timeout=30)
        assert "x-airlock-denied: denied-address" in headers.stdout.lower(), headers.stdout
    async with sdk.sandbox(network={"allow_out": ["127.0.0.0/8"], "deny_out": ["127.0.0.2"]}) as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert out.startswith("200 exit=0") and loopback_server.secret in out, out
        assert loopback_server.requests == ["/probe"]


async def test_allow_out_of_another_address_does_not_grant_loopback(sdk, loopback_server):
    async with sdk.sandbox(network={"allow_out": ["192.0.2.1"], "deny_out": ["0.0.0.0/0"]}) as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert refused(out), out
        assert loopback_server.requests == []
        assert loopback_server.secret not in out


# A server of the box's own on 127.0.0.1:PORT and two fetches of it (by address and by name),
# as a dev server and its client would do; prints NO_PROXY and each fetch's body and exit code.
INBOX = """mkdir -p /tmp/www && echo box-own > /tmp/www/inbox.txt
python3 -m http.server {port} --bind 127.0.0.1 --directory /tmp/www >/dev/null 2>&1 &
hex=$(printf '0100007F:%04X' {port})
for _ in $(seq 100); do awk -v a="$hex" '$2 == a && $4 == "0A" {{f=1}} END {{exit !f}}' /proc/net/tcp && break; sleep 0.05; done
echo "NO_PROXY=${{NO_PROXY:-}} no_proxy=${{no_proxy:-}}"
got=$(curl -sS --max-time 10 http://127.0.0.1:{port}/inbox.txt); echo "by-address $got exit=$?"
got=$(curl -sS --max-time 10 http://localhost:{port}/inbox.txt); echo "by-name $got exit=$?"
kill %1"""


async def test_processes_in_a_box_talk_over_its_own_loopback_in_every_mode(sdk, loopback_server):
    """A box's own 127.0.0.1 works whatever its network (E2B's default goes through the proxy,
    which loopback must not), and it is the box's own: the host's server on the same port sees
    nothing."""
    for opts, proxied in (({}, True), ({"allow_internet_access": False}, False)):
        async with sdk.sandbox(**opts) as sbx:
            out = (await sdk(sbx.commands.run, INBOX.format(port=loopback_server.port), timeout=30)).stdout
            lines = out.splitlines()
            want_env = "localhost,127.0.0.1,::1" if proxied else ""
            assert f"NO_PROXY={want_env} no_proxy={want_env}" in lines, (opts, out)
            assert "by-address box-own exit=0" in lines, (opts, out)
            assert "by-name box-own exit=0" in lines, (opts, out)
            assert loopback_server.secret not in out
            assert loopback_server.requests == []


async def test_update_network_changes_a_running_boxs_egress(sdk, loopback_server):
    """`update_network` (PUT /sandboxes/{id}/network) replaces the egress rules of a box that
    is running: the same box is refused, then granted the host's server, then refused again."""
    async with sdk.sandbox() as sbx:
        assert refused(await fetch(sdk, sbx, loopback_server.url))
        await sdk(sbx.update_network, {"allow_out": ["127.0.0.1"]})
        out = await fetch(sdk, sbx, loopback_server.url)
        assert out.startswith("200 exit=0") and loopback_server.secret in out, out
        assert loopback_server.requests == ["/probe"]
        await sdk(sbx.update_network, {"deny_out": ["0.0.0.0/0"]})
        out = await fetch(sdk, sbx, loopback_server.url)
        assert refused(out) and loopback_server.secret not in out, out
        assert loopback_server.requests == ["/probe"], "nothing got through after the update"
        # A single address denied inside an allowed range, live: refused, the rest granted.
        await sdk(sbx.update_network, {"allow_out": ["127.0.0.0/8"], "deny_out": ["127.0.0.1"]})
        out = await fetch(sdk, sbx, loopback_server.url)
        assert refused(out) and loopback_server.secret not in out, out
        assert loopback_server.requests == ["/probe"], "the denied address saw nothing"
    # A box made without network has no proxy to reconfigure: a clear refusal, nothing opened.
    async with sdk.sandbox(allow_internet_access=False) as closed:
        with pytest.raises(sdk.e2b.SandboxException, match="without network"):
            await sdk(closed.update_network, {"allow_out": ["127.0.0.1"]})
        assert refused(await fetch(sdk, closed, loopback_server.url))
        assert loopback_server.requests == ["/probe"]
