"""Errors the SDK maps from the server's answers: not found, already exists, timeout, auth; an
invalid API key is refused."""
import os
import time

import pytest

# A well-formed key (e2b_ and 40 hex digits) that is not the server's.
WRONG_KEY = "e2b_" + "0123456789abcdef0123456789abcdef01234567"
UNKNOWN_ID = "i0doesnotexist0000000"


async def test_invalid_api_key_is_refused(sdk):
    assert os.environ["E2B_API_KEY"] != WRONG_KEY
    with pytest.raises(sdk.e2b.AuthenticationException):
        await sdk(sdk.Sandbox.create, api_key=WRONG_KEY)
    with pytest.raises(sdk.e2b.AuthenticationException):
        await sdk.items(await sdk(sdk.Sandbox.list, api_key=WRONG_KEY))


async def test_wrong_key_cannot_touch_an_existing_sandbox(sdk):
    async with sdk.sandbox() as sbx:
        with pytest.raises(sdk.e2b.AuthenticationException):
            await sdk(sdk.Sandbox.kill, sbx.sandbox_id, api_key=WRONG_KEY)
        with pytest.raises(sdk.e2b.AuthenticationException):
            await sdk(sdk.Sandbox.connect, sbx.sandbox_id, api_key=WRONG_KEY)
        assert await sdk(sbx.is_running) is True


async def test_unknown_sandbox_is_not_found(sdk):
    with pytest.raises(sdk.e2b.NotFoundException):
        await sdk(sdk.Sandbox.connect, UNKNOWN_ID)
    with pytest.raises(sdk.e2b.NotFoundException):
        await sdk(sdk.Sandbox.get_info, UNKNOWN_ID)
    with pytest.raises(sdk.e2b.NotFoundException):
        await sdk(sdk.Sandbox.set_timeout, UNKNOWN_ID, 30)
    assert await sdk(sdk.Sandbox.kill, UNKNOWN_ID) is False


async def test_file_errors_not_found_and_already_exists(sdk):
    async with sdk.sandbox() as sbx:
        with pytest.raises(sdk.e2b.NotFoundException):
            await sdk(sbx.files.read, "/home/user/missing.txt")
        with pytest.raises(sdk.e2b.NotFoundException):
            await sdk(sbx.files.rename, "/home/user/missing.txt", "/home/user/other.txt")
        # (Removing a missing path succeeds, as envd's RemoveAll: test_files.py.)
        await sdk(sbx.files.make_dir, "/home/user/d")
        assert await sdk(sbx.files.make_dir, "/home/user/d") is False
        # Reading a directory as a file is an invalid argument, not a crash.
        with pytest.raises(sdk.e2b.SandboxException):
            await sdk(sbx.files.read, "/home/user/d")
        # The box's system directories are read-only: a write there is refused, visibly.
        with pytest.raises(sdk.e2b.SandboxException):
            await sdk(sbx.files.write, "/usr/airlock-should-not-write.txt", "x")


async def test_command_timeout_is_a_timeout_exception(sdk):
    async with sdk.sandbox() as sbx:
        with pytest.raises(sdk.e2b.TimeoutException):
            await sdk(sbx.commands.run, "sleep 30", timeout=1)


async def test_code_timeout_is_a_timeout_exception_and_keeps_the_state(sdk):
    async with sdk.sandbox(code=True) as sbx:
        await sdk(sbx.run_code, "kept = 'yes'")
        with pytest.raises(sdk.e2b.TimeoutException):
            await sdk(sbx.run_code, "import time\ntime.sleep(30)", timeout=1)
        # The client gave up and closed the connection: the interpreter interrupts the execution
        # (as E2B's does), so the context is free again long before the sleep would end.
        started = time.monotonic()
        assert (await sdk(sbx.run_code, "kept", timeout=15)).text == "yes"
        assert time.monotonic() - started < 10


async def test_killed_sandbox_refuses_further_work(sdk):
    sbx = await sdk(sdk.Sandbox.create, metadata={"suite-run": sdk.run_id})
    await sdk(sbx.kill)
    with pytest.raises(sdk.e2b.SandboxException):
        await sdk(sbx.commands.run, "echo never")
    with pytest.raises(sdk.e2b.SandboxException):
        await sdk(sbx.files.read, "/home/user/anything")


async def test_unserved_e2b_routes_answer_501_in_e2bs_shape(sdk):
    """Routes of E2B's API airlock does not serve (volumes; pause, fork, snapshots, network
    updates and template builds, aliases and tags are served: test_lifecycle.py,
    test_network.py, tests/e2b/templates/) answer 501 as `{"code", "message"}` (the SDK crashed
    with `KeyError: 'code'` on airlock's native error shape)."""
    import json
    import urllib.error
    import urllib.request

    async with sdk.sandbox() as sbx:
        if hasattr(sdk.e2b, "Template") and hasattr(sdk.e2b.Template, "alias_exists"):
            # Served now: a template never built does not exist.
            assert await sdk(sdk.e2b.Template.alias_exists, "some-alias") is False
        # A refusal as the SDKs receive it.
        req = urllib.request.Request(
            os.environ["E2B_API_URL"] + "/volumes",
            headers={"X-API-Key": os.environ["E2B_API_KEY"]},
        )
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(req, timeout=10)
        assert raised.value.code == 501
        body = json.loads(raised.value.read())
        assert body["code"] == 501 and "not supported" in body["message"], body
        # Still running: the refusals changed nothing.
        assert await sdk(sbx.is_running) is True
