"""Code interpreter: run_code with state across calls, .text, .results with matplotlib PNGs, .logs,
.error with traceback, on_stdout/on_result callbacks, contexts (create, list, restart, remove),
languages python, js, typescript and bash."""
import base64
import hashlib
import os
import re

from conftest import GLOBAL_TYPESCRIPT, give_typescript, raised_while_killed


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
        assert (await sdk(sbx.run_code, "'ok'")).text == "ok"


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
        assert (await sdk(sbx.run_code, "import os\nsecret = 7\nos.getcwd()", context=ctx)).text == "/tmp"
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


async def test_cells_are_dedented_and_str_text_is_unquoted_as_e2b(sdk):
    async with sdk.sandbox(code=True) as sbx:
        # SDK users send indented triple-quoted code: IPython removes the first line's indent.
        indented = await sdk(sbx.run_code, """
            x = 20
            if x:
                print("in block")
            x + 1
        """)
        assert indented.error is None, indented.error
        assert (indented.text, indented.logs.stdout) == ("21", ["in block\n"])
        # A str result's text loses one pair of quotes (E2B's interpreter); other reprs stay.
        assert (await sdk(sbx.run_code, "'hello'")).text == "hello"
        assert (await sdk(sbx.run_code, "\"it's\"")).text == "it's"
        assert (await sdk(sbx.run_code, "['a']")).text == "['a']"
        assert (await sdk(sbx.run_code, "'a\\nb'")).text == "a\\nb", "the repr's escapes stay"


async def test_default_contexts_are_listed_from_the_start(sdk):
    async with sdk.sandbox(code=True) as sbx:
        listed = await sdk(sbx.list_code_contexts)
        by_language = {c.language: c for c in listed}
        assert {"python", "javascript"} <= set(by_language), listed
        assert by_language["python"].cwd == "/home/user"
        # They are the contexts run_code uses by default: state set there is seen through the id.
        await sdk(sbx.run_code, "shared = 5")
        assert (await sdk(sbx.run_code, "shared", context=by_language["python"])).text == "5"
        assert len([c for c in await sdk(sbx.list_code_contexts) if c.language == "python"]) == 1


async def test_shell_escapes_pip_and_raw_display(sdk):
    async with sdk.sandbox(code=True) as sbx:
        shell = await sdk(sbx.run_code, "n = 3\n!echo shell says {n} $HOME; echo to-err >&2\nlines = !printf 'a\\nb\\n'\nlines, _exit_code")
        assert shell.error is None, shell.error
        assert "".join(shell.logs.stdout) == "shell says 3 /home/user\nto-err\n"
        assert shell.text == "(['a', 'b'], 0)"
        indented = await sdk(sbx.run_code, "for i in range(2):\n    !echo loop {i}")
        assert "".join(indented.logs.stdout) == "loop 0\nloop 1\n"
        bash_cell = await sdk(sbx.run_code, "%%bash\necho from a bash cell\n")
        assert bash_cell.logs.stdout == ["from a bash cell\n"]
        # %pip runs this interpreter's pip (a local wheel: no index is reachable from a test).
        await sdk(sbx.files.write, "/home/user/wheel.py", WHEEL_MAKER)
        made = await sdk(sbx.commands.run, "python3 /home/user/wheel.py /home/user")
        wheel = made.stdout.strip()
        installed = await sdk(sbx.run_code, f"%pip install --no-index --no-deps {wheel}")
        assert installed.error is None, installed.error
        out = "".join(installed.logs.stdout)
        assert "Successfully installed airlock-probe-1.0" in out, out
        assert (await sdk(sbx.run_code, "import airlock_probe\nairlock_probe.ANSWER")).text == "42"
        unknown = await sdk(sbx.run_code, "%nosuchmagic")
        assert (unknown.error.name, unknown.error.value) == ("UsageError", "Line magic function `%nosuchmagic` not found.")
        raw = await sdk(sbx.run_code, "display({'text/plain': 'raw text', 'text/html': '<i>raw</i>'}, raw=True)")
        [result] = raw.results
        assert (result.text, result.html, result.is_main_result) == ("raw text", "<i>raw</i>", False)


# Writes a minimal wheel (a zip with the dist-info pip needs) into the directory it is given and
# prints its path.
WHEEL_MAKER = """
import base64, hashlib, sys, zipfile
files = {
    "airlock_probe/__init__.py": "ANSWER = 42\\n",
    "airlock_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: airlock-probe\\nVersion: 1.0\\n",
    "airlock_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
path = sys.argv[1] + "/airlock_probe-1.0-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("airlock_probe-1.0.dist-info/RECORD,,")
    z.writestr("airlock_probe-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
print(path)
"""


async def test_matplotlib_gives_e2b_charts_and_dataframes_give_data(sdk):
    from e2b_code_interpreter.charts import ChartType
    async with sdk.sandbox(code=True) as sbx:
        line = await sdk(sbx.run_code, """
            import matplotlib.pyplot as plt
            plt.plot([1, 2, 3], [1, 4, 9], label="squares")
            plt.title("growth")
            plt.xlabel("time (s)")
            plt.show()
        """)
        assert line.error is None, line.error
        [result] = line.results
        assert result.png and result.chart is not None
        chart = result.chart
        assert (chart.type, chart.title, chart.x_label, chart.x_unit) == (ChartType.LINE, "growth", "time (s)", "s")
        assert [(e.label, e.points) for e in chart.elements] == [("squares", [(1, 1), (2, 4), (3, 9)])]
        several = await sdk(sbx.run_code, """
            fig, (left, right) = plt.subplots(1, 2)
            left.bar(["x", "y"], [3, 4], label="counts")
            right.pie([1, 3], labels=["p", "q"])
            plt.show()
        """)
        [result] = several.results
        assert result.chart.type == ChartType.SUPERCHART
        bar, pie = result.chart.elements
        assert (bar.type, [(e.label, e.group, e.value) for e in bar.elements]) == (ChartType.BAR, [("x", "counts", 3), ("y", "counts", 4)])
        assert (pie.type, [e.label for e in pie.elements]) == (ChartType.PIE, ["p", "q"])
        assert [round(e.angle) for e in pie.elements] == [90, 270]
        # pandas is in the host's Python the native box runs (and in the code-interpreter template).
        frame = await sdk(sbx.run_code, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [0.5, float('nan')], 'c': ['u', 'v']})")
        assert frame.error is None, frame.error
        [result] = frame.results
        assert result.data == {"a": [1, 2], "b": [0.5, None], "c": ["u", "v"]}
        assert result.html and "<table" in result.html
        assert "data" in result.formats()


async def test_javascript_top_level_await_and_es_imports(sdk):
    async with sdk.sandbox(code=True) as sbx:
        awaited = await sdk(sbx.run_code, "const v = await Promise.resolve(21)\nv * 2", language="js")
        assert (awaited.error, awaited.text) == (None, "42")
        # A declaration in an awaiting cell is kept, as in Node's REPL.
        assert (await sdk(sbx.run_code, "v + 1", language="js")).text == "22"
        await sdk(sbx.files.write, "/home/user/mod.mjs", "export const answer = 42;\nexport default 'the default';\n")
        imported = await sdk(sbx.run_code, "import fs from 'fs'\nimport { join as j } from 'node:path'\nimport * as os from 'os'\nimport def, { answer } from './mod.mjs'\n[typeof fs.readFileSync, j('a', 'b'), typeof os.cpus, def, answer].join(' ')", language="js")
        assert imported.error is None, imported.error
        assert imported.text == "function a/b function the default 42"
        # The imported bindings persist into the next cell.
        assert (await sdk(sbx.run_code, "j('x', String(answer))", language="js")).text == "x/42"


# Where the TypeScript test puts the compiler in the box, and the NODE_PATH it creates the box with
# (an env var E2B's create passes to every process in the box, the interpreter's included).
TS_MODULES = "/home/user/.compiler/node_modules"


async def test_typescript_cells_strip_types_and_run_as_javascript(sdk):
    async with sdk.sandbox(code=True, envs={"NODE_PATH": TS_MODULES}) as sbx:
        await give_typescript(sdk, sbx, TS_MODULES)
        by_language = {c.language for c in await sdk(sbx.list_code_contexts)}
        # As E2B's interpreter: python and javascript are there from the start, typescript once used.
        assert "typescript" not in by_language, by_language
        typed = await sdk(sbx.run_code, "function add(a: number, b: number): number {\n  return a + b\n}\nadd(40, 2)",
                          language="typescript")
        assert (typed.error, typed.text) == (None, "42")
        shaped = await sdk(sbx.run_code, "interface Point { x: number; y: number }\n\nconst p: Point = { x: 3, y: 4 }\n"
                           "console.log(`at ${p.x},${p.y}` as string)\nMath.hypot(p.x, p.y)", language="ts")
        assert (shaped.error, shaped.text, shaped.logs.stdout) == (None, "5", ["at 3,4\n"])
        # State persists in the default typescript context, which is not javascript's.
        assert (await sdk(sbx.run_code, "add(p.x, 1)", language="typescript")).text == "4"
        assert (await sdk(sbx.run_code, "typeof add", language="js")).text == "undefined"
        awaited = await sdk(sbx.run_code, "const v: number = await Promise.resolve(20)\nv + 1", language="typescript")
        assert (awaited.error, awaited.text) == (None, "21")
        assert (await sdk(sbx.run_code, "v * 2", language="typescript")).text == "40"
        imported = await sdk(sbx.run_code, 'import { createHash } from "crypto"\n'
                             'createHash("sha256").update("airlock").digest("hex") as string', language="typescript")
        assert (imported.error, imported.text) == (None, hashlib.sha256(b"airlock").hexdigest())
        # A compile error: E2B's error shape, naming the cell's line.
        bad = await sdk(sbx.run_code, "const ok: number = 1\nconst n: number = ;", language="typescript")
        assert bad.error is not None and bad.error.name == "SyntaxError", bad.error
        assert "Expression expected" in bad.error.value and "line 2" in bad.error.value, bad.error.value
        assert "const n: number = ;" in bad.error.traceback, bad.error.traceback
        # Types are stripped, not checked (as E2B's Deno kernel): a wrong type still runs.
        assert (await sdk(sbx.run_code, "const s: number = 'text' as any; s", language="typescript")).text == "text"
        # A runtime error's traceback points at the cell's own line, past the erased interface.
        thrown = await sdk(sbx.run_code, "interface Q { y: string }\n\nfunction boom(q: Q): never {\n"
                           "  throw new TypeError('bad ' + q.y)\n}\nboom({ y: 'z' })", language="typescript")
        assert (thrown.error.name, thrown.error.value) == ("TypeError", "bad z"), thrown.error
        assert re.search(r"at boom \(<cell-\d+>:4\)", thrown.error.traceback), thrown.error.traceback
        ctx = await sdk(sbx.create_code_context, language="typescript")
        assert ctx.language == "typescript"
        assert (await sdk(sbx.run_code, "const t: string = 'own'; t", context=ctx)).text == "own"
        listed = [c for c in await sdk(sbx.list_code_contexts) if c.language == "typescript"]
        assert len(listed) == 2, listed


async def test_typescript_without_a_compiler_says_how_to_get_one(sdk):
    present = [p for p in GLOBAL_TYPESCRIPT if os.path.exists(p)]
    assert not present, f"this test needs a host without a global TypeScript compiler; found {present}"
    async with sdk.sandbox(code=True) as sbx:
        missing = await sdk(sbx.run_code, "const n: number = 1; n", language="typescript")
        assert missing.error is not None and missing.error.name == "TypeScriptNotFound", missing.error
        assert "npm install -g typescript" in missing.error.value, missing.error.value
        # The interpreter looks again on the next cell: a compiler put in the working directory's
        # node_modules is found without a restart.
        await give_typescript(sdk, sbx, "/home/user/node_modules")
        found = await sdk(sbx.run_code, "const n: number = 1; n + 1", language="typescript")
        assert (found.error, found.text) == (None, "2")
