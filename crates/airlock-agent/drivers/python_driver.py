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
import codecs
import importlib
import io
import json
import linecache
import math
import os
import re
import select
import shlex
import signal
import site
import subprocess
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


# ---- cells as IPython reads them ------------------------------------------------------


def dedent_cell(code):
    """IPython's cleanup of a cell: leading blank lines dropped, and when the first line is
    indented, that indentation removed from every line that starts with it."""
    lines = code.splitlines(True)
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ""
    first = lines[0]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    if indent:
        lines = [line[len(indent):] if line.startswith(indent) else line for line in lines]
    return "".join(lines)


SHELL_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][\w.]*)\s*=\s*!(.*)$")


def transform_magics(code):
    """IPython's shell escapes and the magics agents use, for a cell that is not plain Python:
    `!cmd` and `x = !cmd` (bash; `x` gets the output lines), `%pip ...`, `%cd dir`, and the
    cell magics `%%bash` / `%%sh`. Valid Python is never rewritten. Another magic raises
    UsageError as IPython does."""
    try:
        compile(code, "<cell>", "exec", ast.PyCF_ONLY_AST)
        return code
    except SyntaxError:
        pass
    first, _, rest = code.partition("\n")
    if first.strip() in ("%%bash", "%%sh"):
        return "__airlock_shell__(%r)\n" % rest
    out = []
    for line in code.splitlines():
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        assign = SHELL_ASSIGN.match(line)
        if stripped.startswith("!"):
            out.append("%s__airlock_shell__(%r)" % (indent, stripped[1:]))
        elif assign:
            target, command = assign.group(2), assign.group(3)
            out.append("%s%s = __airlock_shell__(%r, capture=True)" % (assign.group(1), target, command))
        elif stripped.startswith("%") and not stripped.startswith("%%"):
            name, _, args = stripped[1:].partition(" ")
            out.append("%s__airlock_magic__(%r, %r)" % (indent, name, args.strip()))
        else:
            out.append(line)
    return "\n".join(out) + ("\n" if code.endswith("\n") else "")


class UsageError(Exception):
    """A magic the interpreter does not have (IPython's name for it)."""


class ShellTools:
    """What `!cmd` and the magics call, bound to one interpreter's namespace."""

    def __init__(self, namespace):
        self.namespace = namespace

    def expand(self, command):
        """IPython's expansion of `{expression}` and `$name` from the user's variables; what
        does not evaluate is left as written (so bash still sees `$HOME`)."""

        def expression(match):
            try:
                return str(eval(match.group(1), self.namespace))
            except Exception:
                return match.group(0)

        def name(match):
            key = match.group(1)
            return str(self.namespace[key]) if key in self.namespace else match.group(0)

        command = re.sub(r"\{([^{}]+)\}", expression, command)
        return re.sub(r"(?<!\$)\$([A-Za-z_]\w*)", name, command)

    def shell(self, command, capture=False, env=None):
        """Runs `command` with bash, its output (stdout and stderr, merged as a terminal
        would) streamed as the cell's stdout, or returned as a list of lines with `capture`.
        An interrupt kills the command's whole process group."""
        sys.stdout.flush()
        child = subprocess.Popen(
            ["/bin/bash", "-c", self.expand(command)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(os.environ, **(env or {})),
        )
        captured = []
        fd = child.stdout.fileno()
        try:
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            # Until the command exits and its output is drained: a background job it left
            # holding the pipe (`!server &`) must not hold the cell.
            while True:
                exited = child.poll() is not None
                ready, _, _ = select.select([fd], [], [], 0 if exited else 0.1)
                chunk = os.read(fd, 65536) if ready else b""
                if chunk:
                    text = decoder.decode(chunk)
                    if capture:
                        captured.append(text)
                    else:
                        sys.stdout.write(text)
                elif exited or ready:
                    break
            child.wait()
        except BaseException:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            child.wait()
            raise
        finally:
            child.stdout.close()
        self.namespace["_exit_code"] = child.returncode
        if capture:
            return "".join(captured).splitlines()
        sys.stdout.flush()
        return None

    def magic(self, name, args):
        if name in ("pip", "pip3"):
            # The box's system site is read-only, so pip installs for the user; a Debian
            # Python refuses that too (PEP 668) unless told the user site is meant.
            self.shell(
                "%s -m pip %s" % (shlex.quote(sys.executable), args),
                env={"PIP_BREAK_SYSTEM_PACKAGES": "1"},
            )
            # A user install (the system site is read-only) lands in a directory that may not
            # have existed at start: make it importable now, as a restarted kernel would.
            user_site = site.getusersitepackages()
            if os.path.isdir(user_site) and user_site not in sys.path:
                site.addsitedir(user_site)
            importlib.invalidate_caches()
            print("Note: you may need to restart the kernel to use updated packages.")
        elif name == "cd":
            os.chdir(os.path.expanduser(self.expand(args) or "~"))
            print(os.getcwd())
        elif name == "pwd":
            return os.getcwd()
        elif name in ("env", "set_env") and args:
            key, _, value = args.replace("=", " ", 1).partition(" ")
            os.environ[key] = value.strip()
        else:
            raise UsageError("Line magic function `%%%s` not found." % name)
        return None


# ---- E2B's chart and data structures --------------------------------------------------

CHART_MIME = "application/vnd.airlock.chart+json"
DATA_MIME = "application/vnd.airlock.data+json"


def plain(value):
    """A JSON-safe scalar: numpy scalars as Python numbers, NaN and infinities as null,
    anything else that is not a number, string, bool or null as its str()."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except Exception:
            pass
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def dataframe_data(obj):
    """A pandas DataFrame as E2B's `data`: its columns, each a list of its values."""
    cls = type(obj)
    if cls.__name__ != "DataFrame" or not cls.__module__.startswith("pandas"):
        return None
    columns = obj.to_dict(orient="list")
    return {str(name): [plain(v) for v in values] for name, values in columns.items()}


def unit_of(label):
    match = re.search(r"[(\[]([^()\[\]]+)[)\]]\s*$", label or "")
    return match.group(1) if match else None


def axes_chart(ax):
    """One matplotlib Axes as E2B's chart structure (line, scatter, bar or pie), or None
    for an empty one."""
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Wedge

    title = ax.get_title() or None
    wedges = [p for p in ax.patches if isinstance(p, Wedge)]
    if wedges:
        return {
            "type": "pie",
            "title": title,
            "elements": [
                {"label": w.get_label(), "angle": plain(abs(w.theta2 - w.theta1)), "radius": plain(w.r)}
                for w in wedges
            ],
        }
    x_label, y_label = ax.get_xlabel() or None, ax.get_ylabel() or None
    two_d = {
        "title": title,
        "x_label": x_label,
        "y_label": y_label,
        "x_unit": unit_of(x_label),
        "y_unit": unit_of(y_label),
    }
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    if bars:
        ticks = {plain(t): l.get_text() for t, l in zip(ax.get_xticks(), ax.get_xticklabels())}
        elements = []
        for container in bars:
            group = container.get_label()
            for rect in container.patches:
                x = plain(rect.get_x() + rect.get_width() / 2)
                label = ticks.get(x, ticks.get(round(x), str(x))) if isinstance(x, float) else ticks.get(x, str(x))
                elements.append({"label": label, "group": group, "value": plain(rect.get_height())})
        return dict(two_d, type="bar", elements=elements)
    axis = {
        "x_ticks": [plain(t) for t in ax.get_xticks()],
        "x_tick_labels": [t.get_text() for t in ax.get_xticklabels()],
        "x_scale": ax.get_xscale(),
        "y_ticks": [plain(t) for t in ax.get_yticks()],
        "y_tick_labels": [t.get_text() for t in ax.get_yticklabels()],
        "y_scale": ax.get_yscale(),
    }
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    if scatters:
        elements = [
            {"label": c.get_label(), "points": [[plain(x), plain(y)] for x, y in c.get_offsets()]}
            for c in scatters
        ]
        return dict(two_d, type="scatter", elements=elements, **axis)
    lines = ax.get_lines()
    if lines:
        elements = [
            {"label": line.get_label(), "points": [[plain(x), plain(y)] for x, y in zip(line.get_xdata(), line.get_ydata())]}
            for line in lines
        ]
        return dict(two_d, type="line", elements=elements, **axis)
    return None


def figure_chart(figure):
    """A figure as E2B's chart: its one chart, a superchart of several, or an unknown one."""
    try:
        charts = [c for c in (axes_chart(ax) for ax in figure.axes) if c]
    except Exception:
        charts = []
    if len(charts) == 1:
        return charts[0]
    suptitle = getattr(figure, "_suptitle", None)
    title = suptitle.get_text() if suptitle is not None else None
    if charts:
        return {"type": "superchart", "title": title, "elements": charts}
    return {"type": "unknown", "title": title, "elements": []}


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
    try:
        table = dataframe_data(obj)
        if table is not None:
            json.dumps(table, allow_nan=False)
            data[DATA_MIME] = table
    except Exception:
        pass
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
        tools = ShellTools(self.namespace)
        builtins.__airlock_shell__ = tools.shell
        builtins.__airlock_magic__ = tools.magic

    def display(self, *objs, raw=False, **_options):
        """Shows each object as a display event with all its formats; with `raw`, each object
        is already a bundle ({mime type: content}), shown as it is (IPython's `raw=True`)."""
        for obj in objs:
            self.stdout.flush()
            self.stderr.flush()
            if raw:
                if not isinstance(obj, dict):
                    raise TypeError("display(raw=True) takes {mime type: content} dicts")
                bundle = {str(k): v for k, v in obj.items()}
                json.dumps(bundle)
                self.channel.emit("display", data=bundle)
            else:
                self.channel.emit("display", data=mime_bundle(obj))

    def execute(self, request_id, code, env):
        self.execution_count += 1
        self.channel.request_id = request_id
        self.budget.reset()
        filename = "<cell-%d>" % self.execution_count
        code = transform_magics(dedent_cell(code))
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
        report = traceback.TracebackException(type(exc), exc, tb)
        # The driver's own frames (a magic's implementation) are not the user's code.
        report.stack = traceback.StackSummary.from_list(
            [frame for frame in report.stack if frame.filename != DRIVER_FILE]
        )
        lines = list(report.format())
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
                data = {"image/png": png, "text/plain": repr(figure)}
                chart = figure_chart(figure)
                try:
                    json.dumps(chart, allow_nan=False)
                    data[CHART_MIME] = chart
                except Exception:
                    pass
                self.channel.emit("display", data=data)
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
