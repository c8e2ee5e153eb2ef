"""Network: `allow_internet_access=False` and `network.allow_out` / `deny_out` become the box's
egress policy, and the sandbox's own code sees the denial.

The only destination is an HTTP server this test starts on the host's 127.0.0.1 (no name, no DNS,
nothing outside the machine). Inside a box, 127.0.0.1 is the box's own loopback, so the host's
server is reachable only through airlock's egress proxy, which refuses loopback unless a rule
grants that address: the positive case (allow_out 127.0.0.1) proves the path works, so the
denials below are real denials and not a broken setup."""

# Fetches URL from inside the box the way ordinary code does (curl honours the proxy variables
# airlock sets), prints the HTTP status and body; `curl` exits non-zero when it cannot connect.
FETCH = "curl -sS --max-time 10 -o /tmp/body -w '%{{http_code}}' {url}; echo \" exit=$?\"; cat /tmp/body 2>/dev/null; true"


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
        headers = await sdk(sbx.commands.run, f"curl -sS --max-time 10 -D - -o /dev/null {loopback_server.url} || true", timeout=30)
        assert headers.stdout.startswith("HTTP/1.1 403"), headers.stdout
        assert "x-airlock-denied" in headers.stdout.lower()


async def test_allow_out_of_another_address_does_not_grant_loopback(sdk, loopback_server):
    async with sdk.sandbox(network={"allow_out": ["192.0.2.1"], "deny_out": ["0.0.0.0/0"]}) as sbx:
        out = await fetch(sdk, sbx, loopback_server.url)
        assert refused(out), out
        assert loopback_server.requests == []
        assert loopback_server.secret not in out
