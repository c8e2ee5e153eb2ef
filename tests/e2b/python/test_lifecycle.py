"""Lifecycle: create (template, timeout, metadata, env vars), connect, get_info, list with metadata
and state filters, set_timeout, kill, is_running, expiry at the timeout, pause."""
import os
import re
import time
from datetime import datetime, timedelta, timezone

import pytest

from conftest import wait_for


def seconds_left(info):
    return (info.end_at - datetime.now(timezone.utc)).total_seconds()


async def test_create_with_template_timeout_metadata_and_envs(sdk):
    async with sdk.sandbox(template="base", timeout=120, metadata={"owner": "conformance"},
                           envs={"GREETING": "hello from create"}) as sbx:
        assert re.fullmatch(r"[a-z0-9_]+", sbx.sandbox_id), sbx.sandbox_id
        result = await sdk(sbx.commands.run, "echo $GREETING")
        assert result.stdout == "hello from create\n"
        info = await sdk(sbx.get_info)
        assert info.sandbox_id == sbx.sandbox_id
        assert info.metadata["owner"] == "conformance"
        assert info.metadata["suite-run"] == sdk.run_id
        assert info.template_id
        assert info.state == sdk.e2b.SandboxState.RUNNING
        assert 100 <= seconds_left(info) <= 125, (info.started_at, info.end_at)
        assert info.started_at <= datetime.now(timezone.utc)
        assert await sdk(sbx.is_running) is True


async def test_create_defaults(sdk):
    async with sdk.sandbox() as sbx:
        info = await sdk(sbx.get_info)
        # E2B's default sandbox lifetime is 300 s.
        assert 280 <= seconds_left(info) <= 305, (info.started_at, info.end_at)
        assert (await sdk(sbx.commands.run, "whoami")).stdout == "user\n"


async def test_connect_reaches_the_same_sandbox_and_extends_its_timeout(sdk):
    async with sdk.sandbox(timeout=60) as sbx:
        await sdk(sbx.files.write, "/home/user/marker.txt", "left by the first handle")
        other = await sdk(sdk.Sandbox.connect, sbx.sandbox_id, timeout=600)
        assert other.sandbox_id == sbx.sandbox_id
        seen = await sdk(other.commands.run, "cat /home/user/marker.txt")
        assert seen.stdout == "left by the first handle"
        info = await sdk(other.get_info)
        assert seconds_left(info) > 500, "connect(timeout=600) extends the deadline"
        # A shorter timeout on connect never shortens it.
        await sdk(sdk.Sandbox.connect, sbx.sandbox_id, timeout=10)
        assert seconds_left(await sdk(sbx.get_info)) > 500


async def test_list_filters_by_metadata_and_state(sdk):
    SandboxQuery, SandboxState = sdk.e2b.SandboxQuery, sdk.e2b.SandboxState
    async with sdk.sandbox(metadata={"role": "alpha"}) as a, sdk.sandbox(metadata={"role": "beta"}) as b:
        mine = {"suite-run": sdk.run_id}
        both = await sdk.items(await sdk(sdk.Sandbox.list, query=SandboxQuery(metadata=mine)))
        assert {s.sandbox_id for s in both} >= {a.sandbox_id, b.sandbox_id}
        alpha = await sdk.items(await sdk(sdk.Sandbox.list, query=SandboxQuery(metadata={**mine, "role": "alpha"})))
        assert [s.sandbox_id for s in alpha] == [a.sandbox_id]
        assert alpha[0].metadata["role"] == "alpha"
        assert alpha[0].state == SandboxState.RUNNING
        running = await sdk.items(await sdk(sdk.Sandbox.list, query=SandboxQuery(metadata=mine, state=[SandboxState.RUNNING])))
        assert {s.sandbox_id for s in running} >= {a.sandbox_id, b.sandbox_id}
        paused = await sdk.items(await sdk(sdk.Sandbox.list, query=SandboxQuery(metadata=mine, state=[SandboxState.PAUSED])))
        assert paused == []
        none = await sdk.items(await sdk(sdk.Sandbox.list, query=SandboxQuery(metadata={**mine, "role": "gamma"})))
        assert none == []
        await sdk(b.kill)
        after = await sdk.items(await sdk(sdk.Sandbox.list, query=SandboxQuery(metadata=mine)))
        ids = {s.sandbox_id for s in after}
        assert a.sandbox_id in ids and b.sandbox_id not in ids


async def test_set_timeout_moves_the_deadline(sdk):
    async with sdk.sandbox(timeout=30) as sbx:
        await sdk(sbx.set_timeout, 500)
        assert 480 <= seconds_left(await sdk(sbx.get_info)) <= 505
        await sdk(sbx.set_timeout, 40)
        assert 20 <= seconds_left(await sdk(sbx.get_info)) <= 45, "set_timeout can also shorten"


async def test_sandbox_expires_at_its_timeout(sdk):
    sbx = await sdk(sdk.Sandbox.create, timeout=2, metadata={"suite-run": sdk.run_id})
    started = time.monotonic()
    try:
        assert await sdk(sbx.is_running) is True
        await wait_for("the sandbox has expired", lambda: _not_running(sdk, sbx), seconds=20, interval=0.2)
        assert time.monotonic() - started >= 1.5, "the sandbox ended before its timeout"
        with pytest.raises(sdk.e2b.NotFoundException):
            await sdk(sdk.Sandbox.connect, sbx.sandbox_id)
    finally:
        await sdk(sbx.kill)


async def _not_running(sdk, sbx):
    return not await sdk(sbx.is_running)


async def test_set_timeout_makes_a_running_sandbox_expire(sdk):
    sbx = await sdk(sdk.Sandbox.create, timeout=300, metadata={"suite-run": sdk.run_id})
    try:
        await sdk(sbx.set_timeout, 1)
        await wait_for("the sandbox has expired", lambda: _not_running(sdk, sbx), seconds=20, interval=0.2)
    finally:
        await sdk(sbx.kill)


async def test_kill(sdk):
    sbx = await sdk(sdk.Sandbox.create, metadata={"suite-run": sdk.run_id})
    assert await sdk(sbx.is_running) is True
    assert await sdk(sbx.kill) is True
    assert await sdk(sbx.is_running) is False
    # The static form, on a sandbox that no longer exists: False, not an error.
    assert await sdk(sdk.Sandbox.kill, sbx.sandbox_id) is False
    with pytest.raises(sdk.e2b.NotFoundException):
        await sdk(sdk.Sandbox.get_info, sbx.sandbox_id)


async def test_static_get_info_and_set_timeout(sdk):
    async with sdk.sandbox(metadata={"static": "yes"}) as sbx:
        info = await sdk(sdk.Sandbox.get_info, sbx.sandbox_id)
        assert info.metadata["static"] == "yes"
        await sdk(sdk.Sandbox.set_timeout, sbx.sandbox_id, 200)
        assert 180 <= seconds_left(await sdk(sbx.get_info)) <= 205


async def test_pause_then_connect_resumes_the_same_box(sdk):
    """`pause()` is served now (it answered 501 before): the sandbox is listed as paused, and
    `connect` resumes it with its files."""
    async with sdk.sandbox() as sbx:
        await sdk(sbx.commands.run, "echo kept > /tmp/state")
        if os.environ.get("AIRLOCK_E2B_PAUSE") == "refused":
            # This server cannot pause its boxes (an unprivileged one has no freezer): the SDK
            # raises with the reason, and the box runs on untouched.
            with pytest.raises(sdk.e2b.SandboxException) as raised:
                await sdk(sbx.pause)
            assert "paus" in str(raised.value).lower(), raised.value
            assert (await sdk(sbx.commands.run, "cat /tmp/state")).stdout == "kept\n"
            return
        await sdk(sbx.pause)
        info = await sdk(sdk.Sandbox.get_info, sbx.sandbox_id)
        assert info.state == sdk.e2b.SandboxState.PAUSED, info.state
        again = await sdk(sdk.Sandbox.connect, sbx.sandbox_id)
        assert (await sdk(again.commands.run, "cat /tmp/state")).stdout == "kept\n"
        info = await sdk(again.get_info)
        assert info.state == sdk.e2b.SandboxState.RUNNING


async def test_list_orders_filters_by_start_and_template_and_pages(sdk):
    SandboxQuery = sdk.e2b.SandboxQuery
    mine = {"suite-run": sdk.run_id, "case": "order"}
    async with sdk.sandbox(metadata=dict(mine, n="1")) as first:
        time.sleep(1.1)
        between = datetime.now(timezone.utc)
        time.sleep(0.1)
        async with sdk.sandbox(metadata=dict(mine, n="2")) as second, sdk.sandbox(metadata=dict(mine, n="3")) as third:
            ids = [first.sandbox_id, second.sandbox_id, third.sandbox_id]

            async def listed(**kwargs):
                query = SandboxQuery(metadata=mine, **kwargs.pop("query", {}))
                return [s.sandbox_id for s in await sdk.items(await sdk(sdk.Sandbox.list, query=query, **kwargs))]

            assert await listed(order="asc") == ids
            assert await listed(order="desc") == ids[::-1]
            # The order holds across pages: pages of one, oldest first.
            assert await listed(order="asc", limit=1) == ids
            assert set(await listed(query={"started_after": between})) == set(ids[1:])
            assert await listed(query={"template": "base"}) != []
            assert await listed(query={"template": "code-interpreter-v1"}) == []


async def test_metrics_honour_start_and_end(sdk):
    async with sdk.sandbox() as sbx:
        now = await sdk(sbx.get_metrics)
        # (mem_used is 0 where the host delegates no cgroup: an unprivileged server.)
        assert len(now) == 1 and now[0].cpu_count >= 1 and now[0].mem_total > 0
        await sdk(sbx.commands.run, "sleep 1.2")
        later = await sdk(sbx.get_metrics)
        # The history keeps both samples; a range picks them out.
        window = await sdk(sbx.get_metrics, start=now[0].timestamp - timedelta(seconds=1), end=datetime.now(timezone.utc) + timedelta(seconds=1))
        stamps = [m.timestamp for m in window]
        assert stamps == sorted(stamps) and len(stamps) >= 2, stamps
        assert now[0].timestamp in stamps and later[0].timestamp in stamps
        # A range before the box existed is empty.
        before = await sdk(sbx.get_metrics, start=datetime(2020, 1, 1, tzinfo=timezone.utc), end=datetime(2020, 1, 2, tzinfo=timezone.utc))
        assert before == []
