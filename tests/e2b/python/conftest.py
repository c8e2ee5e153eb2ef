"""E2B's official Python SDK (installed by scripts/e2b-clients.sh) against a real `airlock serve`.

Run by crates/airlock/tests/e2b_sdk.rs, or by hand:

    E2B_API_KEY=e2b_… E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
    NO_PROXY=127.0.0.1,localhost target/e2b-clients/py-current/bin/python -m pytest tests/e2b/python --api async

The same tests run against the sync API (`e2b.Sandbox`) and the async one (`e2b.AsyncSandbox`):
every test is an `async def` that calls the SDK through `sdk(fn, *args)`, which awaits the result
when the API under test is the async one. Where the two APIs differ in shape (watching a
directory, PTY output), the test says so with `sdk.is_async`.
"""
import asyncio
import contextlib
import importlib.metadata
import inspect
import os
import signal
import threading
import http.server
import uuid

import pytest

# Longest any one test may take: the harness gives the whole suite a bound too.
TEST_SECONDS = 60


def pytest_addoption(parser):
    parser.addoption("--api", choices=["sync", "async"], default="sync", help="which E2B API to drive")


def pytest_configure(config):
    for var in ("E2B_API_KEY", "E2B_API_URL", "E2B_SANDBOX_URL"):
        if not os.environ.get(var):
            raise pytest.UsageError(f"{var} is not set: point the SDK at a running `airlock serve`")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs `async def` tests in a fresh event loop (no plugin needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**args))
    return True


@pytest.fixture(autouse=True)
def bounded_time():
    """Fails a test that runs longer than TEST_SECONDS (SIGALRM also interrupts blocking calls)."""

    def expired(signum, frame):
        raise TimeoutError(f"test took longer than {TEST_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _version(package):
    return tuple(int(part) for part in importlib.metadata.version(package).split(".")[:3])


class Sdk:
    """The E2B API under test: sync or async, current or older SDK."""

    def __init__(self, api):
        import e2b
        import e2b_code_interpreter

        self.is_async = api == "async"
        self.e2b = e2b
        self.version = _version("e2b")
        self.Sandbox = e2b.AsyncSandbox if self.is_async else e2b.Sandbox
        self.CodeSandbox = e2b_code_interpreter.AsyncSandbox if self.is_async else e2b_code_interpreter.Sandbox
        # One value per session, so list filters only ever see this run's sandboxes.
        self.run_id = uuid.uuid4().hex[:12]

    async def __call__(self, fn, *args, **kwargs):
        """Calls an SDK function; awaits its result when the API is the async one."""
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            assert self.is_async, f"{fn} returned an awaitable from the sync API"
            result = await result
        return result

    async def items(self, paginator):
        """Every item of a list paginator, page after page."""
        found = []
        while paginator.has_next:
            found.extend(await self(paginator.next_items))
        return found

    @contextlib.asynccontextmanager
    async def sandbox(self, code=False, **opts):
        """A new sandbox (a code-interpreter one when `code`), killed at the end of the block."""
        cls = self.CodeSandbox if code else self.Sandbox
        opts.setdefault("metadata", {})
        opts["metadata"].setdefault("suite-run", self.run_id)
        sbx = await self(cls.create, **opts)
        try:
            yield sbx
        finally:
            await self(sbx.kill)


@pytest.fixture(scope="session")
def sdk(request):
    return Sdk(request.config.getoption("--api"))


class LoopbackServer:
    """An HTTP server on the host's 127.0.0.1 that answers GET with a secret and counts requests:
    a sandbox reached it only if it received the secret and the count went up."""

    def __init__(self):
        self.secret = uuid.uuid4().hex
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                body = outer.secret.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/probe"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def loopback_server():
    server = LoopbackServer()
    yield server
    server.close()


async def wait_for(what, check, seconds=10.0, interval=0.1):
    """Polls `check` (sync or async) until it returns a truthy value; fails after `seconds`."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting until {what}")
        await asyncio.sleep(interval)


async def raised_while_killed(sdk, sbx, call, after=1.5):
    """Runs `call()` (an SDK call that lasts until the box ends) while the sandbox is killed
    `after` seconds in, from elsewhere (another task or thread); returns what `call` raised."""
    if sdk.is_async:
        async def killer():
            await asyncio.sleep(after)
            await sdk.Sandbox.kill(sbx.sandbox_id)

        task = asyncio.create_task(killer())
        try:
            await call()
        except Exception as e:  # noqa: BLE001 - the test inspects it
            raised = e
        else:
            raised = None
        await task
        return raised
    timer = threading.Timer(after, lambda: sdk.Sandbox.kill(sbx.sandbox_id))
    timer.start()
    try:
        call()
    except Exception as e:  # noqa: BLE001
        raised = e
    else:
        raised = None
    timer.join()
    return raised


# The places the box's node looks for a global `typescript` (the host template's boxes see the
# host's /usr): the no-compiler case needs all of them empty.
GLOBAL_TYPESCRIPT = ("/usr/local/lib/node_modules/typescript", "/usr/lib/node_modules/typescript",
                     "/usr/share/nodejs/typescript")


def typescript_compiler():
    """The pinned `typescript` package scripts/e2b-clients.sh installed (the harness passes its
    path in E2B_TYPESCRIPT); the test fails, never skips, without it."""
    where = os.environ.get("E2B_TYPESCRIPT")
    if not where or not os.path.isfile(os.path.join(where, "lib", "typescript.js")):
        pytest.fail(f"E2B_TYPESCRIPT ({where!r}) names no typescript package: run scripts/e2b-clients.sh "
                    "and set it to target/e2b-clients/typescript/node_modules/typescript")
    return where


async def give_typescript(sdk, sbx, node_modules):
    """Copies the compiler into the sandbox's own filesystem, under `node_modules` (what an E2B
    user's `npm install typescript` in the box gives; the box has no route to a registry here):
    its package.json and lib/typescript.js are all that transpileModule needs."""
    where = typescript_compiler()
    for name in ("package.json", "lib/typescript.js"):
        with open(os.path.join(where, name), "rb") as f:
            await sdk(sbx.files.write, f"{node_modules}/typescript/{name}", f.read())
