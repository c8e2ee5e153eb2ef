"""Code interpreter: run_code with state across calls, .text, .results with matplotlib PNGs, .logs,
.error with traceback, on_stdout/on_result callbacks, contexts (create, list, restart, remove),
languages python, js and bash."""
import base64

from conftest import raised_while_killed


async def test_state_persists_across_calls_and_text_is_the_last_value(sdk):
    async with sdk.sandbox(code=True) as sbx:
        first = await sdk(sbx.run_code, "x = 41\ndef double(n):\n    return 2 * n")
        assert first.error is None
        assert first.results == []
        second = await sdk(sbx.run_code, "double(x + 1) // 2")
        assert second.text == "42"
        assert second.error is None
        main = [r for r in second.results if r.is_main_result]
        assert len(main) == 1 and main[0].text == "42"


async def test_logs_capture_stdout_and_stderr(sdk):
    async with sdk.sandbox(code=True) as sbx:
        execution = await sdk(sbx.run_code, "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\nprint('again')")
        assert "".join(execution.logs.stdout) == "to out\nagain\n"
        assert "".join(execution.logs.stderr) == "to err\n"
        assert execution.text is None


async def test_error_carries_name_value_and_traceback(sdk):
    async with sdk.sandbox(code=True) as sbx:
        execution = await sdk(sbx.run_code, "def inner():\n    return 1 / 0\n\ninner()")
        assert execution.error is not None
        assert execution.error.name == "ZeroDivisionError"
        assert "division by zero" in execution.error.value
        assert "inner" in execution.error.traceback
        assert "ZeroDivisionError" in execution.error.traceback
        # The interpreter survives an error; the next call works.
        assert (await sdk(sbx.run_code, "'ok'")).text == "'ok'"


async def test_matplotlib_chart_is_a_real_png(sdk):
    async with sdk.sandbox(code=True) as sbx:
        execution = await sdk(sbx.run_code, (
            "import matplotlib.pyplot as plt\n"
            "plt.figure(figsize=(3, 2))\n"
            "plt.plot([1, 2, 3], [1, 4, 9])\n"
            "plt.title('squares')\n"
            "plt.show()\n"
        ))
        assert execution.error is None, execution.error
        pngs = [r.png for r in execution.results if r.png]
        assert len(pngs) == 1, execution.results
        raw = base64.b64decode(pngs[0])
        assert raw[:8] == b"\x89PNG\r\n\x1a\n"
        # Width and height from the IHDR chunk: a 3x2 inch figure is wider than tall.
        width, height = int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")
        assert width > height > 50


async def test_rich_results_html(sdk):
    async with sdk.sandbox(code=True) as sbx:
        execution = await sdk(sbx.run_code, (
            "class Table:\n"
            "    def _repr_html_(self):\n"
            "        return '<table><tr><td>cell</td></tr></table>'\n"
            "    def __repr__(self):\n"
            "        return 'Table()'\n"
            "Table()"
        ))
        [result] = execution.results
        assert result.is_main_result
        assert result.html == "<table><tr><td>cell</td></tr></table>"
        assert result.text == "Table()"


async def test_callbacks_stream_output_and_results(sdk):
    out, results, errors = [], [], []
    async with sdk.sandbox(code=True) as sbx:
        execution = await sdk(sbx.run_code, "print('one')\nprint('two')\n6 * 7",
                              on_stdout=out.append, on_result=results.append, on_error=errors.append)
        assert [m.line for m in out] == ["one\n", "two\n"]
        assert all(not m.error for m in out)
        assert [r.text for r in results] == ["42"]
        assert execution.text == "42"
        await sdk(sbx.run_code, "raise ValueError('bad value')", on_error=errors.append)
        assert [e.name for e in errors] == ["ValueError"]


async def test_env_vars_per_execution(sdk):
    async with sdk.sandbox(code=True, envs={"FROM_CREATE": "c"}) as sbx:
        execution = await sdk(sbx.run_code, "import os\n(os.environ.get('ONLY_HERE'), os.environ.get('FROM_CREATE'))", envs={"ONLY_HERE": "h"})
        assert execution.text == "('h', 'c')"
        after = await sdk(sbx.run_code, "import os\nos.environ.get('ONLY_HERE')")
        assert after.text in (None, "None"), after.text


async def test_contexts_create_list_restart_remove(sdk):
    async with sdk.sandbox(code=True) as sbx:
        ctx = await sdk(sbx.create_code_context, cwd="/tmp")
        assert ctx.id and ctx.language == "python" and ctx.cwd == "/tmp"
        assert (await sdk(sbx.run_code, "import os\nsecret = 7\nos.getcwd()", context=ctx)).text == "'/tmp'"
        # The default context does not see the new context's variables.
        default = await sdk(sbx.run_code, "secret")
        assert default.error is not None and default.error.name == "NameError"
        assert (await sdk(sbx.run_code, "secret", context=ctx)).text == "7"
        listed = await sdk(sbx.list_code_contexts)
        assert ctx.id in {c.id for c in listed}
        await sdk(sbx.restart_code_context, ctx)
        restarted = await sdk(sbx.run_code, "secret", context=ctx)
        assert restarted.error is not None and restarted.error.name == "NameError", "restart drops the state"
        await sdk(sbx.remove_code_context, ctx)
        assert ctx.id not in {c.id for c in await sdk(sbx.list_code_contexts)}


async def test_javascript(sdk):
    async with sdk.sandbox(code=True) as sbx:
        first = await sdk(sbx.run_code, "const base = 40; console.log('from js'); base + 2", language="js")
        assert first.text == "42"
        assert first.logs.stdout == ["from js\n"]
        second = await sdk(sbx.run_code, "base * 2", language="javascript")
        assert second.text == "80", "state persists in the JavaScript context"
        failed = await sdk(sbx.run_code, "undefinedThing.field", language="js")
        assert failed.error is not None and "ReferenceError" in failed.error.name
        ctx = await sdk(sbx.create_code_context, language="js")
        assert ctx.language == "javascript"
        assert (await sdk(sbx.run_code, "typeof base === 'undefined'", context=ctx)).text == "true"


async def test_bash(sdk):
    async with sdk.sandbox(code=True) as sbx:
        first = await sdk(sbx.run_code, "export GREETING=hi; cd /tmp; echo $((2 + 3))", language="bash")
        assert first.logs.stdout == ["5\n"]
        second = await sdk(sbx.run_code, "echo $GREETING $(pwd)", language="bash")
        assert "".join(second.logs.stdout) == "hi /tmp\n", "the shell keeps variables and cwd"
        errs = await sdk(sbx.run_code, "echo oops >&2", language="bash")
        assert errs.logs.stderr == ["oops\n"]



async def test_killed_mid_run_code_is_the_sdks_sandbox_killed_error(sdk):
    """A box killed during `run_code` drops the execution's stream, as E2B's kernel connection
    drops with its sandbox: the SDK then raises its "sandbox was killed" timeout error, never an
    execution that ended normally with an error inside it."""
    async with sdk.sandbox(code=True) as sbx:
        raised = await raised_while_killed(sdk, sbx, lambda: sbx.run_code("import time\nprint('started')\ntime.sleep(30)", timeout=50))
        assert isinstance(raised, sdk.e2b.TimeoutException), repr(raised)
        assert "The sandbox was killed while the request was in progress" in str(raised), repr(raised)
