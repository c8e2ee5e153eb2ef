"""E2B's code-interpreter SDK against `airlock serve --backend wasm` (run by
crates/airlock/tests/wasm.rs with target/e2b-clients/py-current): what a wasm box can do works
(run_code with state, errors with the user's line numbers, output order, files in and out), and
what it cannot (a shell command, another language) is refused with a sentence saying why.
Prints "wasm e2b: ok" at the end; any failed assertion exits non-zero."""
from e2b_code_interpreter import Sandbox

sbx = Sandbox.create()
try:
    assert sbx.run_code("x = 41\ndef bump():\n    global x\n    x += 1\n    return x").error is None
    assert sbx.run_code("bump()").text == "42"
    # A str result's text has no quotes, as E2B's interpreter gives it.
    assert sbx.run_code("import sys; sys.platform").text == "wasi"

    out = sbx.run_code("for i in range(3):\n    print('line', i)")
    assert "".join(out.logs.stdout) == "line 0\nline 1\nline 2\n", out.logs

    err = sbx.run_code("a = 1\n\ndef broken():\n    return 1 / 0\n\nbroken()")
    assert err.error is not None and err.error.name == "ZeroDivisionError", err
    assert "line 6" in err.error.traceback and "line 4" in err.error.traceback, err.error.traceback

    sbx.files.write("/tmp/in.txt", "from the sdk")
    assert sbx.run_code("open('/tmp/in.txt').read().upper()").text == "FROM THE SDK"
    sbx.run_code("open('/tmp/out.txt', 'w').write('from wasm')")
    assert sbx.files.read("/tmp/out.txt") == "from wasm"

    try:
        sbx.commands.run("echo hi")
        raise AssertionError("a shell command ran in a wasm box")
    except AssertionError:
        raise
    except Exception as e:  # the SDK raises its own error type for a refused command
        assert "no processes" in str(e), repr(e)

    try:
        sbx.run_code("1 + 1", language="js")
        raise AssertionError("JavaScript ran in a wasm box")
    except AssertionError:
        raise
    except Exception as e:
        assert "runs only Python" in str(e), repr(e)
finally:
    sbx.kill()
print("wasm e2b: ok")
