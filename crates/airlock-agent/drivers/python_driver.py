"""Stateful Python interpreter driver for airlock's code interpreter.

One process is one interpreter context: variables, imports and functions persist
across executions. Standard library only.

Protocol
--------
Requests are JSON lines on stdin::

    {"id": "r1", "code": "...", "env": {"K": "V"}}   # env optional, this execution only

Events are JSON lines on file descriptor 3, each carrying the request id::

    {"id", "type": "stdout"|"stderr", "text", "time"}   user output, streamed
    {"id", "type": "display", "data": {mime: content}}  display(obj), matplotlib figures
    {"id", "type": "result", "data": {mime: content}}   value of the last expression
    {"id", "type": "error", "name", "value", "traceback": [lines]}
    {"id", "type": "end", "execution_count", "status": "ok"|"error"|"interrupted"}  always last

User output is capped at OUTPUT_LIMIT bytes per execution; past the cap one
"[output truncated]" stderr event is sent and the rest is dropped. SIGINT during an
execution raises KeyboardInterrupt in the user code (status "interrupted"); SIGINT
while idle is ignored.
"""

import ast
import base64
import builtins
import io
import json
import linecache
import os
import signal
import sys
import threading
import time
import traceback
import types

# Set before any user code runs, so pyplot never picks an interactive backend.
os.environ["MPLBACKEND"] = "Agg"

OUTPUT_LIMIT = 1024 * 1024
LINE_FLUSH_CHARS = 8192
DRIVER_FILE = __file__

# Rich formats recognised on objects, as (method, mime type, binary payload).
RICH_FORMATS = (
    ("_repr_html_", "text/html", False),
    ("_repr_markdown_", "text/markdown", False),
    ("_repr_svg_", "image/svg+xml", False),
    ("_repr_png_", "image/png", True),
    ("_repr_jpeg_", "image/jpeg", True),
    ("_repr_json_", "application/json", False),
    ("_repr_latex_", "text/latex", False),
)


class Channel:
    """Writes events to fd 3, one JSON line each, never interleaved or torn by SIGINT."""

    def __init__(self):
        if sys.platform == "wasi":
            # A WASM box: no descriptor 3 and no subprocesses; its runner gives the driver's
            # stdout to the event channel (user output is captured by StreamWriter).
            self._file = os.fdopen(1, "w", buffering=1, encoding="utf-8", closefd=False)
        else:
            os.set_inheritable(3, False)  # user subprocesses must not write protocol lines
            self._file = os.fdopen(3, "w", buffering=1, encoding="utf-8")
        self._lock = threading.RLock()
        self.request_id = None
        # SIGINT bookkeeping: `running` is true only while user code may run;
        # an interrupt that lands inside emit() is deferred until the line is written.
        self.running = False
        self.in_emit = False
        self.pending_interrupt = False

    def emit(self, kind, **fields):
        event = {"id": self.request_id, "type": kind}
        event.update(fields)
        line = json.dumps(event, default=repr) + "\n"
        with self._lock:
            self.in_emit = True
            try:
                self._file.write(line)
                self._file.flush()
            finally:
                self.in_emit = False
        if self.pending_interrupt and self.running:
            self.pending_interrupt = False
            raise KeyboardInterrupt

    def on_sigint(self, _signum, _frame):
        if not self.running:
            return  # idle: ignored
        if self.in_emit:
            self.pending_interrupt = True
            return
        raise KeyboardInterrupt


class OutputBudget:
    """The per-execution output cap shared by stdout and stderr."""

    def __init__(self, channel):
        self.channel = channel
        self.remaining = OUTPUT_LIMIT
        self.truncated = False

    def reset(self):
        self.remaining = OUTPUT_LIMIT
        self.truncated = False

    def take(self, text):
        """Returns the part of `text` that fits, and announces truncation once."""
        if self.truncated:
            return ""
        data = text.encode("utf-8", "replace")
        if len(data) <= self.remaining:
            self.remaining -= len(data)
            return text
        kept = data[: self.remaining].decode("utf-8", "ignore")
        self.remaining = 0
        self.truncated = True
        return kept


class StreamWriter(io.TextIOBase):
    """A sys.stdout/sys.stderr replacement that sends output as events, line-buffered."""

    def __init__(self, channel, budget, kind):
        super().__init__()
        self.channel = channel
        self.budget = budget
        self.kind = kind
        self.other = None  # the sibling stream, flushed first to keep cross-stream order
        self._buffer = []
        self._size = 0

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if not text:
            return 0
        if self.other is not None:
            self.other.flush()
        self._buffer.append(text)
        self._size += len(text)
        if "\n" in text or self._size >= LINE_FLUSH_CHARS:
            self.flush()
        return len(text)

    def flush(self):
        if not self._buffer:
            return
        text = "".join(self._buffer)
        self._buffer = []
        self._size = 0
        was_truncated = self.budget.truncated
        kept = self.budget.take(text)
        if kept:
            self.channel.emit(self.kind, text=kept, time=time.time())
        if self.budget.truncated and not was_truncated:
            self.channel.emit("stderr", text="[output truncated]", time=time.time())


def mime_bundle(obj):
    """text/plain plus every rich format the object offers and renders successfully."""
    data = {}
    try:
        data["text/plain"] = repr(obj)
    except Exception as exc:  # a broken __repr__ must not fail the execution
        data["text/plain"] = "<repr failed: %s: %s>" % (type(exc).__name__, exc)
    for method, mime, binary in RICH_FORMATS:
        try:
            render = getattr(obj, method, None)
            if render is None or not callable(render) or isinstance(obj, type):
                continue
            value = render()
            if isinstance(value, tuple) and len(value) == 2:
                value = value[0]  # (data, metadata)
            if value is None:
                continue
            if binary and isinstance(value, (bytes, bytearray)):
                value = base64.b64encode(bytes(value)).decode("ascii")
            if mime == "application/json":
                json.dumps(value)
            elif not isinstance(value, str):
                continue
            data[mime] = value
        except Exception:
            continue
    return data


class Interpreter:
    """One persistent Python context executing cells."""

    def __init__(self, channel):
        self.channel = channel
        self.execution_count = 0
        self.budget = OutputBudget(channel)
        self.stdout = StreamWriter(channel, self.budget, "stdout")
        self.stderr = StreamWriter(channel, self.budget, "stderr")
        self.stdout.other = self.stderr
        self.stderr.other = self.stdout
        module = types.ModuleType("__main__")
        module.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = module
        self.namespace = module.__dict__
        builtins.display = self.display

    def display(self, *objs):
        """Shows each object as a display event with all its formats."""
        for obj in objs:
            self.stdout.flush()
            self.stderr.flush()
            self.channel.emit("display", data=mime_bundle(obj))

    def execute(self, request_id, code, env):
        self.execution_count += 1
        self.channel.request_id = request_id
        self.budget.reset()
        filename = "<cell-%d>" % self.execution_count
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        saved_env = {key: os.environ.get(key) for key in env}
        status = "ok"
        sys.stdout, sys.stderr = self.stdout, self.stderr
        try:
            self.channel.running = True
            try:
                os.environ.update(env)
                value = self._run(code, filename)
                self.channel.running = False
                if value is not None:
                    self.namespace["_"] = value
                    self.stdout.flush()
                    self.stderr.flush()
                    self.channel.emit("result", data=mime_bundle(value))
            finally:
                self.channel.running = False
                self.channel.pending_interrupt = False
        except KeyboardInterrupt as exc:
            status = "interrupted"
            self._report(exc)
        except BaseException as exc:  # SystemExit too: the context must survive
            status = "error"
            self._report(exc)
        finally:
            for key, old in saved_env.items():
                if old is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = old
            self._flush_streams()
            self._emit_figures()
            self._flush_streams()
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            self.channel.emit("end", execution_count=self.execution_count, status=status)
            self.channel.request_id = None

    def _run(self, code, filename):
        # compile() rather than ast.parse(): no stdlib frame in a SyntaxError's traceback.
        tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), self.namespace)
        if last is None:
            return None
        return eval(compile(last, filename, "eval"), self.namespace)

    def _flush_streams(self):
        try:
            self.stdout.flush()
            self.stderr.flush()
        except Exception:
            pass

    def _report(self, exc):
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == DRIVER_FILE:
            tb = tb.tb_next
        lines = traceback.format_exception(type(exc), exc, tb)
        self._flush_streams()
        self.channel.emit(
            "error",
            name=type(exc).__name__,
            value=str(exc),
            traceback="".join(lines).splitlines(),
        )

    def _emit_figures(self):
        """Sends every open matplotlib figure as image/png and closes it."""
        if "matplotlib" not in sys.modules or "matplotlib.pyplot" not in sys.modules:
            return
        plt = sys.modules["matplotlib.pyplot"]
        try:
            for number in plt.get_fignums():
                figure = plt.figure(number)
                buffer = io.BytesIO()
                figure.savefig(buffer, format="png")
                png = base64.b64encode(buffer.getvalue()).decode("ascii")
                self.channel.emit("display", data={"image/png": png, "text/plain": repr(figure)})
            plt.close("all")
        except Exception as exc:
            self.channel.emit("stderr", text="figure rendering failed: %r\n" % (exc,), time=time.time())


def main():
    channel = Channel()
    signal.signal(signal.SIGINT, channel.on_sigint)
    requests = sys.stdin
    sys.stdin = io.StringIO("")  # input() in user code sees EOF, never the protocol
    interpreter = Interpreter(channel)
    for line in iter(requests.readline, ""):
        if not line.strip():
            continue
        request = None
        try:
            request = json.loads(line)
            request_id = request.get("id")
            code = request["code"]
            env = request.get("env") or {}
            if not isinstance(code, str) or not isinstance(env, dict):
                raise ValueError("code must be a string and env an object")
            env = {str(k): str(v) for k, v in env.items()}
        except Exception as exc:
            channel.request_id = request.get("id") if isinstance(request, dict) else None
            channel.emit("error", name="ProtocolError", value="bad request: %s" % exc, traceback=[])
            channel.emit("end", execution_count=interpreter.execution_count, status="error")
            channel.request_id = None
            continue
        interpreter.execute(request_id, code, env)


if __name__ == "__main__":
    main()
