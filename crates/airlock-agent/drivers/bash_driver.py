"""Stateful Bash interpreter driver for airlock's code interpreter.

One driver owns one persistent ``bash --noprofile --norc`` child: the working
directory, shell variables, exported variables and functions persist across
executions. Standard library only; run as ``/usr/bin/python3 bash_driver.py``.

Protocol
--------
The same as ``python_driver.py``. Requests are JSON lines on stdin::

    {"id": "r1", "code": "...", "env": {"K": "V"}}   # env optional, this execution only

Events are JSON lines on file descriptor 3, each carrying the request id::

    {"id", "type": "stdout"|"stderr", "text", "time"}   user output, streamed
    {"id", "type": "error", "name", "value", "traceback": []}
    {"id", "type": "end", "execution_count", "status": "ok"|"error"|"interrupted",
     "exit_code": int|null}                              always last

There are no ``result`` or ``display`` events. ``status`` is "ok" when the code's
last command exits 0, "error" otherwise, "interrupted" after SIGINT.

How it works
------------
Each snippet is written to a temp file and bash is sent (on its stdin) one line
that exports the per-execution env, ``source``s the file with stdin from /dev/null,
restores the env, and writes ``<random token> <status>`` to a dedicated marker pipe
that only the driver reads, so user output can never fake the end of an execution.
Bash's stdout and stderr are separate pipes read with selectors; the relative order
of stdout and stderr chunks is the order the driver sees them, which is the write
order unless both arrive between two reads (best effort, like any two-pipe reader).
User output is capped at OUTPUT_LIMIT bytes per execution; past the cap one
"[output truncated]" stderr event is sent and the rest is drained and dropped.
Output written by background jobs while no execution runs is dropped.

SIGINT during an execution is forwarded to bash's process group (bash runs in its
own session); bash itself traps INT with ``return``, which aborts the sourced
snippet but keeps the shell and its state. SIGINT while idle is ignored.

If bash exits (``exit`` in the code, or killed), the execution reports an error
event named "ShellExited" and ends with status "error"; the next request runs in a
fresh bash, so all shell state (cwd, variables, functions) is lost.
"""

import codecs
import json
import os
import re
import secrets
import selectors
import shlex
import signal
import subprocess
import sys
import tempfile
import time

OUTPUT_LIMIT = 1024 * 1024
READ_CHUNK = 65536
POLL_SECONDS = 0.1
EXIT_DRAIN_SECONDS = 0.5
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Runs in bash on SIGINT: returns from the sourced snippet (silently fails at top level).
INT_TRAP = "trap '{ return 130; } 2>/dev/null' INT"


class Channel:
    """Writes events to fd 3, one JSON line each."""

    def __init__(self):
        os.set_inheritable(3, False)  # bash and its children must not write protocol lines
        self._file = os.fdopen(3, "w", buffering=1, encoding="utf-8")
        self.request_id = None

    def emit(self, kind, **fields):
        event = {"id": self.request_id, "type": kind}
        event.update(fields)
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()


class Shell:
    """One bash process with stdout, stderr and marker pipes."""

    def __init__(self):
        self.marker_r, marker_w = os.pipe()
        self.marker_fd = marker_w
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(marker_w,),
            start_new_session=True,
        )
        os.close(marker_w)
        for fd in (self.proc.stdout.fileno(), self.proc.stderr.fileno(), self.marker_r):
            os.set_blocking(fd, False)
        self.marker_buffer = b""

    def alive(self):
        return self.proc.poll() is None

    def send(self, line):
        try:
            self.proc.stdin.write(line.encode("utf-8") + b"\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def interrupt(self):
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self):
        if self.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        try:
            os.close(self.marker_r)
        except OSError:
            pass


class Driver:
    def __init__(self, channel):
        self.channel = channel
        self.execution_count = 0
        self.shell = None
        self.running = False
        self.interrupted = False
        fd, self.script = tempfile.mkstemp(prefix="airlock-bash-", suffix=".sh")
        os.close(fd)

    def on_sigint(self, _signum, _frame):
        if not self.running or self.shell is None:
            return  # idle: ignored
        self.interrupted = True
        self.shell.interrupt()

    def ensure_shell(self):
        if self.shell is None or not self.shell.alive():
            if self.shell is not None:
                self.shell.close()
            self.shell = Shell()

    # -- output ---------------------------------------------------------------

    def _reset_output(self):
        self.remaining = OUTPUT_LIMIT
        self.truncated = False
        self.decoders = {
            "stdout": codecs.getincrementaldecoder("utf-8")("replace"),
            "stderr": codecs.getincrementaldecoder("utf-8")("replace"),
        }

    def _output(self, kind, data, final=False):
        if self.truncated:
            return
        if len(data) > self.remaining:
            data = data[: self.remaining]
            self.truncated = True
        self.remaining -= len(data)
        text = self.decoders[kind].decode(data, final or self.truncated)
        if text:
            self.channel.emit(kind, text=text, time=time.time())
        if self.truncated:
            self.channel.emit("stderr", text="[output truncated]", time=time.time())

    def _drain(self, emit=True):
        """Reads whatever is available now on stdout/stderr; returns True on EOF of both."""
        eof = 0
        for kind, stream in (("stdout", self.shell.proc.stdout), ("stderr", self.shell.proc.stderr)):
            while True:
                try:
                    data = os.read(stream.fileno(), READ_CHUNK)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    eof += 1
                    break
                if emit:
                    self._output(kind, data)
        return eof == 2

    # -- execution ------------------------------------------------------------

    def execute(self, request_id, code, env):
        self.execution_count += 1
        self.channel.request_id = request_id
        self._reset_output()
        status, exit_code, error = "error", None, None
        try:
            self.ensure_shell()
            self._drain(emit=False)  # leftovers from background jobs while idle
            with open(self.script, "w", encoding="utf-8") as f:
                f.write(code)
                if not code.endswith("\n"):
                    f.write("\n")
            token = secrets.token_hex(16)
            self.interrupted = False
            self.running = True
            try:
                if not self.shell.send(self._command(token, env)):
                    error = "bash exited before the execution started"
                else:
                    exit_code, error = self._wait(token)
            finally:
                self.running = False
            if error is None:
                if self.interrupted:
                    status = "interrupted"
                else:
                    status = "ok" if exit_code == 0 else "error"
        except Exception as exc:  # the driver must answer every request
            error = "driver failure: %r" % (exc,)
        if error is not None:
            self.channel.emit("error", name="ShellExited", value=error, traceback=[])
            status = "error"
        for kind, decoder in self.decoders.items():
            tail = decoder.decode(b"", True)
            if tail and not self.truncated:
                self.channel.emit(kind, text=tail, time=time.time())
        self.channel.emit(
            "end", execution_count=self.execution_count, status=status, exit_code=exit_code
        )
        self.channel.request_id = None

    def _command(self, token, env):
        pre, post = [], []
        for i, (key, value) in enumerate(env.items()):
            had, old = "__airlock_had_%d" % i, "__airlock_old_%d" % i
            pre.append(
                'if [ "${%s+x}" = x ]; then %s=1; %s="$%s"; else %s=; fi; export %s=%s'
                % (key, had, old, key, had, key, shlex.quote(value))
            )
            post.append(
                'if [ -n "$%s" ]; then %s="$%s"; else unset %s; fi; unset %s %s'
                % (had, key, old, key, had, old)
            )
        parts = [INT_TRAP] + pre
        parts.append("source %s </dev/null" % shlex.quote(self.script))
        parts.append("__airlock_rc=$?")
        parts += post
        parts.append('echo "%s $__airlock_rc" >&%d' % (token, self.shell.marker_fd))
        parts.append("unset __airlock_rc")
        # Newlines, not `;`: the snippet's own parse errors cannot swallow the marker line.
        return "\n".join(parts)

    def _wait(self, token):
        """Streams output until the marker arrives; returns (exit_code, error)."""
        shell = self.shell
        selector = selectors.DefaultSelector()
        selector.register(shell.proc.stdout.fileno(), selectors.EVENT_READ, "stdout")
        selector.register(shell.proc.stderr.fileno(), selectors.EVENT_READ, "stderr")
        selector.register(shell.marker_r, selectors.EVENT_READ, "marker")
        try:
            while True:
                for key, _ in selector.select(POLL_SECONDS):
                    if key.data == "marker":
                        code = self._read_marker(token)
                        if code is not None:
                            self._drain()
                            return code, None
                        continue
                    try:
                        data = os.read(key.fd, READ_CHUNK)
                    except BlockingIOError:
                        continue
                    if data:
                        self._output(key.data, data)
                    else:
                        selector.unregister(key.fd)
                if not shell.alive():
                    code = self._read_marker(token)
                    if code is not None:
                        self._drain()
                        return code, None
                    deadline = time.monotonic() + EXIT_DRAIN_SECONDS
                    while not self._drain() and time.monotonic() < deadline:
                        time.sleep(0.01)
                    rc = shell.proc.returncode
                    return rc, "bash exited with status %s; shell state was lost" % rc
        finally:
            selector.close()

    def _read_marker(self, token):
        shell = self.shell
        while True:
            try:
                data = os.read(shell.marker_r, 4096)
            except BlockingIOError:
                break
            if not data:
                break
            shell.marker_buffer += data
        while b"\n" in shell.marker_buffer:
            line, shell.marker_buffer = shell.marker_buffer.split(b"\n", 1)
            parts = line.decode("utf-8", "replace").split()
            if len(parts) == 2 and parts[0] == token:
                try:
                    return int(parts[1])
                except ValueError:
                    return 1
        return None


def main():
    channel = Channel()
    driver = Driver(channel)
    signal.signal(signal.SIGINT, driver.on_sigint)
    requests = sys.stdin
    try:
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
                bad = [k for k in env if not NAME_RE.match(k)]
                if bad:
                    raise ValueError("invalid environment variable name: %r" % bad[0])
            except Exception as exc:
                channel.request_id = request.get("id") if isinstance(request, dict) else None
                channel.emit("error", name="ProtocolError", value="bad request: %s" % exc, traceback=[])
                channel.emit(
                    "end", execution_count=driver.execution_count, status="error", exit_code=None
                )
                channel.request_id = None
                continue
            driver.execute(request_id, code, env)
    finally:
        if driver.shell is not None:
            driver.shell.close()
        try:
            os.unlink(driver.script)
        except OSError:
            pass


if __name__ == "__main__":
    main()
