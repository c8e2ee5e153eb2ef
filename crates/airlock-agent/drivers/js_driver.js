"use strict";
/*
 * Stateful JavaScript interpreter driver for airlock's code interpreter (Node 20,
 * standard library only). Run as `node js_driver.js`.
 *
 * One process is one interpreter context: top-level `let`/`const`/`var`, functions and
 * classes persist across executions (one `vm` context, each cell a `vm.Script` in it).
 *
 * Protocol (the same as python_driver.py)
 * --------
 * Requests are JSON lines on stdin:
 *
 *     {"id": "r1", "code": "...", "env": {"K": "V"}}   // env optional, this execution only
 *
 * Events are JSON lines on file descriptor 3, each carrying the request id:
 *
 *     {"id", "type": "stdout"|"stderr", "text", "time"}   user output, streamed
 *     {"id", "type": "result", "data": {"text/plain": util.inspect(value)}}
 *     {"id", "type": "error", "name", "value", "traceback": [lines]}
 *     {"id", "type": "end", "execution_count", "status": "ok"|"error"|"interrupted"}  always last
 *
 * The result is the completion value of the cell (the last expression statement);
 * `undefined` gives no result. Stack traces point at `<cell-N>` with the user's lines.
 *
 * Output written through console.*, process.stdout.write or process.stderr.write while a
 * cell runs is captured, each write one event, capped at OUTPUT_LIMIT bytes per execution;
 * past the cap one "[output truncated]" stderr event is sent and the rest is dropped.
 * Output from callbacks that fire after a cell ended is not captured.
 *
 * Top-level await: a cell that only compiles as an async function body (it uses `await`
 * at top level) runs wrapped in an async arrow function and is awaited; the value of its
 * last expression (the trailing lines that parse as one expression) is its result. Its
 * `let`/`const`/`var name = …` declarations and function declarations that start a line
 * (column 0, the cell's top level) are kept on `globalThis`, so later cells see them;
 * destructuring declarations and classes stay local to the cell.
 *
 * ES modules: `import` statements on one line each (`import x from "m"`, `import * as n
 * from "m"`, `import { a, b as c } from "m"`, `import "m"`, and their combinations) become
 * dynamic imports whose bindings are kept on `globalThis`. A relative or absolute specifier
 * resolves against the working directory, a package name from it (node_modules), and a
 * built-in as itself.
 *
 * SIGINT while synchronous cell code runs terminates it (vm `breakOnSigint`): an error
 * event named "KeyboardInterrupt" and status "interrupted"; the context is kept. SIGINT
 * while a top-level-await cell is awaiting ends the execution as "interrupted" too (the
 * abandoned promise may still settle later). SIGINT while idle is ignored. Code running
 * in a later microtask or timer cannot be interrupted.
 */

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const util = require("util");
const vm = require("vm");
const { Console } = require("console");
const { createRequire } = require("module");

const OUTPUT_LIMIT = 1024 * 1024;
const INTERRUPTED = "ERR_SCRIPT_EXECUTION_INTERRUPTED";

// ---- event channel -------------------------------------------------------------------

/** Reopens fd 3 as a close-on-exec descriptor so user subprocesses cannot write to it. */
function openChannel() {
  try {
    const fd = fs.openSync("/proc/self/fd/3", "w");
    fs.closeSync(3);
    return fd;
  } catch (_) {
    return 3;
  }
}

const channelFd = openChannel();
let requestId = null;

/** Writes one event as one JSON line, synchronously, so ordering is exact. */
function emit(type, fields) {
  const event = Object.assign({ id: requestId, type }, fields);
  const data = Buffer.from(JSON.stringify(event) + "\n", "utf8");
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += fs.writeSync(channelFd, data, offset, data.length - offset);
    } catch (err) {
      if (err.code !== "EAGAIN") throw err;
    }
  }
}

// ---- output capture ------------------------------------------------------------------

let capturing = false;
let remaining = OUTPUT_LIMIT;
let truncated = false;

function textOf(chunk, encoding) {
  if (typeof chunk === "string") return chunk;
  if (chunk instanceof Uint8Array) {
    return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(
      typeof encoding === "string" ? encoding : "utf8",
    );
  }
  return String(chunk);
}

/** Sends `text` as a stdout/stderr event within the per-execution budget. */
function output(kind, text) {
  if (truncated || !text) return;
  const size = Buffer.byteLength(text, "utf8");
  if (size <= remaining) {
    remaining -= size;
    emit(kind, { text, time: Date.now() / 1000 });
    return;
  }
  let kept = Buffer.from(text, "utf8").subarray(0, remaining).toString("utf8");
  while (kept && Buffer.byteLength(kept, "utf8") > remaining) kept = kept.slice(0, -1);
  remaining = 0;
  truncated = true;
  if (kept) emit(kind, { text: kept, time: Date.now() / 1000 });
  emit("stderr", { text: "[output truncated]", time: Date.now() / 1000 });
}

/** Wraps a process stream's write so that writes during an execution become events. */
function hookStream(stream, kind) {
  const original = stream.write;
  stream.write = function write(chunk, encoding, callback) {
    if (!capturing) return original.apply(stream, arguments);
    output(kind, textOf(chunk, encoding));
    const done = typeof encoding === "function" ? encoding : callback;
    if (typeof done === "function") process.nextTick(done);
    return true;
  };
}

hookStream(process.stdout, "stdout");
hookStream(process.stderr, "stderr");

// ---- the persistent context ----------------------------------------------------------

function createUserContext() {
  const context = vm.createContext({});
  const own = new Set(vm.runInContext("Object.getOwnPropertyNames(globalThis)", context));
  // Node's globals (process, Buffer, timers, URL, fetch, ...) that a vm context lacks.
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (own.has(name) || name === "globalThis") continue;
    try {
      Object.defineProperty(context, name, Object.getOwnPropertyDescriptor(globalThis, name));
    } catch (_) {
      // a non-configurable clash: keep the context's own
    }
  }
  context.console = new Console({
    stdout: process.stdout,
    stderr: process.stderr,
    colorMode: false,
  });
  context.require = createRequire(path.join(process.cwd(), "<repl>"));
  context.__airlock_import = importFromCell;
  return context;
}

const context = createUserContext();
let executionCount = 0;
let abortWait = null; // set while a top-level-await cell is awaiting

process.on("SIGINT", () => {
  if (abortWait) abortWait(); // otherwise idle: ignored
});

function interruptError() {
  const err = new Error("Script execution was interrupted by `SIGINT`");
  err.code = INTERRUPTED;
  return err;
}

const IDENT = "[A-Za-z_$][\\w$]*";
const IMPORT_LINE = /^import\s+(?:([^'"]+?)\s+from\s+)?(['"])([^'"]+)\2\s*;?\s*$/;
const DECLARATION = new RegExp("^(?:const|let|var)\\s+(" + IDENT + ")\\s*=(?!=)");
const FUNCTION = new RegExp("^(?:async\\s+)?function\\s*\\*?\\s*(" + IDENT + ")\\s*\\(");
let importCount = 0;

/** `import()` of a cell's specifier: relative and absolute paths against the working
 *  directory, packages from its node_modules, built-ins as they are. */
function importFromCell(spec) {
  const { isBuiltin } = require("module");
  const { pathToFileURL } = require("url");
  if (spec.startsWith(".") || spec.startsWith("/")) {
    return import(pathToFileURL(path.resolve(process.cwd(), spec)).href);
  }
  if (isBuiltin(spec)) return import(spec);
  let resolved;
  try {
    resolved = require.resolve(spec, { paths: [process.cwd()] });
  } catch (_) {
    return import(spec);
  }
  return import(pathToFileURL(resolved).href);
}

/** One `import` line as statements that import dynamically and keep the bindings on
 *  globalThis (on the same line: line numbers stay the user's), or null if not one. */
function rewriteImport(line) {
  const m = IMPORT_LINE.exec(line);
  if (!m) return null;
  const spec = JSON.stringify(m[3]);
  const clause = (m[1] || "").trim();
  const tmp = "__airlock_module" + importCount++;
  const out = ["const " + tmp + " = await __airlock_import(" + spec + ");"];
  let rest = clause;
  const first = new RegExp("^(" + IDENT + ")\\s*(?:,\\s*(.*))?$").exec(rest);
  if (first) {
    out.push("globalThis." + first[1] + " = " + tmp + ".default;");
    rest = (first[2] || "").trim();
  }
  if (rest.startsWith("*")) {
    const ns = new RegExp("^\\*\\s*as\\s+(" + IDENT + ")$").exec(rest);
    if (!ns) return null;
    out.push("globalThis." + ns[1] + " = " + tmp + ";");
  } else if (rest.startsWith("{") && rest.endsWith("}")) {
    for (const item of rest.slice(1, -1).split(",")) {
      const spec = item.trim();
      if (!spec) continue;
      const named = new RegExp("^(" + IDENT + ")(?:\\s+as\\s+(" + IDENT + "))?$").exec(spec);
      if (!named) return null;
      out.push("globalThis." + (named[2] || named[1]) + " = " + tmp + "." + named[1] + ";");
    }
  } else if (rest) {
    return null;
  }
  return out.join(" ");
}

function compiles(source) {
  try {
    new vm.Script(source);
    return true;
  } catch (_) {
    return false;
  }
}

/** The body of an async wrapper for a top-level-await cell: top-level declarations kept on
 *  globalThis, and the trailing expression (if the cell ends with one) returned. */
function asyncBody(code) {
  const lines = code.split("\n");
  let value = -1;
  for (let k = lines.length - 1; k >= Math.max(0, lines.length - 50); k--) {
    const tail = lines.slice(k).join("\n").trim().replace(/;+$/, "");
    if (!tail) continue;
    if (DECLARATION.test(tail) || FUNCTION.test(tail) || /^(class|import|export)\b/.test(tail)) break;
    const head = lines.slice(0, k).join("\n");
    if (
      compiles("(async () => (" + tail + "\n))") &&
      compiles("(async () => {" + head + "\n})")
    ) {
      value = k;
      break;
    }
  }
  const functions = [];
  const kept = lines.map((line) => {
    const fn = FUNCTION.exec(line);
    if (fn) functions.push("globalThis." + fn[1] + " = " + fn[1] + ";");
    return line.replace(DECLARATION, (_, name) => "globalThis." + name + " =");
  });
  const prologue = functions.join(" ");
  if (value < 0) return prologue + kept.join("\n");
  const tail = kept.slice(value).join("\n").trim().replace(/;+$/, "");
  return prologue + kept.slice(0, value).join("\n") + "\nreturn (" + tail + "\n);";
}

/** Compiles a cell; `async` tells whether it was wrapped for top-level await. */
function compile(code, filename) {
  const lines = code.split("\n");
  const imports = lines.map(rewriteImport);
  if (imports.some((l) => l !== null)) {
    code = lines.map((line, i) => (imports[i] === null ? line : imports[i])).join("\n");
  }
  try {
    return { script: new vm.Script(code, { filename }), async: false };
  } catch (err) {
    if (!(err && err.name === "SyntaxError" && /\bawait\b/.test(code))) throw err;
    // Same line numbering: the wrapper opens on the cell's first line.
    const wrapped = "(async () => { " + asyncBody(code) + "\n})()";
    return { script: new vm.Script(wrapped, { filename }), async: true };
  }
}

/** The error event for a thrown value, without the driver's own stack frames. */
function report(err) {
  if (err && err.code === INTERRUPTED) {
    emit("error", {
      name: "KeyboardInterrupt",
      value: "interrupted",
      traceback: ["KeyboardInterrupt: execution interrupted by SIGINT"],
    });
    return;
  }
  let name;
  let value;
  let stack;
  if (err !== null && (typeof err === "object" || typeof err === "function")) {
    try {
      name = String(err.name !== undefined ? err.name : "Error");
      value = err.message !== undefined ? String(err.message) : util.inspect(err);
      stack = typeof err.stack === "string" ? err.stack : name + ": " + value;
    } catch (_) {
      name = "Error";
      value = util.inspect(err);
      stack = "Uncaught " + value;
    }
  } else {
    name = "Uncaught";
    value = util.inspect(err);
    stack = "Uncaught " + value;
  }
  const traceback = stack
    .split("\n")
    .filter(
      (line) =>
        !(/^\s+at /.test(line) && (line.includes(__filename) || /\(?node:(vm|internal)/.test(line))),
    );
  emit("error", { name, value, traceback });
}

async function execute(id, code, env) {
  executionCount += 1;
  requestId = id;
  remaining = OUTPUT_LIMIT;
  truncated = false;
  const filename = "<cell-" + executionCount + ">";
  const saved = {};
  for (const key of Object.keys(env)) saved[key] = process.env[key];
  let status = "ok";
  capturing = true;
  try {
    Object.assign(process.env, env);
    const { script, async } = compile(code, filename);
    let value = script.runInContext(context, { breakOnSigint: true });
    if (async) {
      value = await new Promise((resolve, reject) => {
        abortWait = () => reject(interruptError());
        Promise.resolve(value).then(resolve, reject);
      });
    }
    abortWait = null;
    if (value !== undefined) {
      emit("result", { data: { "text/plain": util.inspect(value) } });
    }
  } catch (err) {
    abortWait = null;
    status = err && err.code === INTERRUPTED ? "interrupted" : "error";
    try {
      report(err);
    } catch (_) {
      emit("error", { name: "Error", value: "unreportable error", traceback: [] });
    }
  } finally {
    abortWait = null;
    capturing = false;
    for (const [key, old] of Object.entries(saved)) {
      if (old === undefined) delete process.env[key];
      else process.env[key] = old;
    }
    emit("end", { execution_count: executionCount, status });
    requestId = null;
  }
}

// ---- request loop --------------------------------------------------------------------

function parse(line) {
  let request = null;
  try {
    request = JSON.parse(line);
    const env = request.env == null ? {} : request.env;
    if (typeof request.code !== "string" || typeof env !== "object" || Array.isArray(env)) {
      throw new Error("code must be a string and env an object");
    }
    const clean = {};
    for (const [k, v] of Object.entries(env)) clean[String(k)] = String(v);
    return { id: request.id === undefined ? null : request.id, code: request.code, env: clean };
  } catch (err) {
    requestId = request && typeof request === "object" ? (request.id === undefined ? null : request.id) : null;
    emit("error", { name: "ProtocolError", value: "bad request: " + err.message, traceback: [] });
    emit("end", { execution_count: executionCount, status: "error" });
    requestId = null;
    return null;
  }
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const request = parse(line);
    if (request) await execute(request.id, request.code, request.env);
  }
  process.exit(0);
}

main();
