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
 * TypeScript: written as `ts_driver.js` (the same file under another name), the driver takes
 * TypeScript cells: each is first compiled with the `typescript` package's `transpileModule`
 * (types stripped, no type checking, as E2B's Deno kernel runs TypeScript; ES2022, ES
 * modules, imports kept as written), then runs as a JavaScript cell, so results, output,
 * top-level await and imports behave the same. The compiler is the one `require` finds from
 * the working directory (its node_modules and their parents', then NODE_PATH and node's global
 * folders), else npm's global folders ($npm_config_prefix/lib/node_modules,
 * /usr/local/lib/node_modules, node's own prefix's lib/node_modules, Debian's
 * /usr/share/nodejs). It is looked for again on every cell until found, so a cell that
 * installs it is enough. A compile error is an error event named "SyntaxError" whose value
 * names the cell's line and column; stack traces are mapped back to the cell's own lines.
 * Without a compiler (or with one that has no `transpileModule`: TypeScript 7 is a native
 * program without the JavaScript API), the error event says so and how to install one.
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
const TYPESCRIPT = path.basename(__filename) === "ts_driver.js";
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

// ---- TypeScript cells ----------------------------------------------------------------

/** npm's global module folders, where `npm install -g typescript` puts the compiler. */
function globalFolders() {
  const folders = [];
  const prefix = process.env.npm_config_prefix || process.env.NPM_CONFIG_PREFIX;
  if (prefix) folders.push(path.join(prefix, "lib", "node_modules"));
  folders.push("/usr/local/lib/node_modules");
  folders.push(path.join(path.dirname(path.dirname(process.execPath)), "lib", "node_modules"));
  folders.push("/usr/share/nodejs");
  return [...new Set(folders)];
}

let compiler = null;

/** The `typescript` module, or an error event's fields saying why there is none. */
function loadCompiler() {
  if (compiler) return { ts: compiler };
  let found = null;
  try {
    found = require.resolve("typescript", { paths: [process.cwd()] });
  } catch (_) {
    for (const folder of globalFolders()) {
      try {
        found = require.resolve(path.join(folder, "typescript"));
        break;
      } catch (_) {
        // not there
      }
    }
  }
  const places =
    "node_modules under " + process.cwd() + ", NODE_PATH (" + (process.env.NODE_PATH || "unset") +
    "), " + globalFolders().join(", ");
  const how =
    "install it in the template (`npm install -g typescript@5`) or in the sandbox " +
    "(`npm install typescript@5` in the working directory), or point NODE_PATH at a " +
    "node_modules that holds it";
  if (!found) {
    return {
      missing: "TypeScript cells need the `typescript` npm package, and this sandbox has none " +
        "(looked in " + places + "): " + how,
    };
  }
  let ts;
  try {
    ts = require(found);
  } catch (err) {
    return {
      missing: "the TypeScript compiler at " + found + " does not load (" + err.message + "): " + how,
    };
  }
  if (typeof ts.transpileModule !== "function") {
    return {
      missing: "the typescript package at " + found + " (version " + ts.version + ") has no " +
        "transpileModule (TypeScript 7 is a native compiler without the JavaScript API): " + how,
    };
  }
  compiler = ts;
  return { ts };
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** A source map segment's numbers (base64 VLQ). */
function vlq(segment) {
  const values = [];
  let value = 0;
  let shift = 0;
  for (const ch of segment) {
    const digit = BASE64.indexOf(ch);
    if (digit < 0) return values;
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
    } else {
      values.push(value % 2 ? -Math.floor(value / 2) : value / 2);
      value = 0;
      shift = 0;
    }
  }
  return values;
}

/** Generated line (1-based) → the cell's line (1-based) its first mapped piece came from. */
function lineMap(sourceMap) {
  const lines = [];
  let original = 0;
  let last = 1;
  let mappings = "";
  try {
    mappings = JSON.parse(sourceMap).mappings || "";
  } catch (_) {
    return lines;
  }
  mappings.split(";").forEach((group, index) => {
    let first = null;
    for (const segment of group.split(",")) {
      const v = segment ? vlq(segment) : [];
      if (v.length >= 4) {
        original += v[2];
        if (first === null) first = original + 1;
      }
    }
    if (first !== null) last = first;
    lines[index + 1] = last;
  });
  return lines;
}

/** 1-based line and column of `offset` in `text`. */
function position(text, offset) {
  const before = text.slice(0, offset).split("\n");
  return { line: before.length, column: before[before.length - 1].length + 1 };
}

/** A TypeScript cell as JavaScript, with its line map; or `error` (an error event's fields). */
function transpile(code, filename) {
  const loaded = loadCompiler();
  if (!loaded.ts) {
    return {
      error: {
        name: "TypeScriptNotFound",
        value: loaded.missing,
        traceback: ["TypeScriptNotFound: " + loaded.missing],
      },
    };
  }
  const ts = loaded.ts;
  const out = ts.transpileModule(code, {
    fileName: "cell.ts",
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      // Imports stay as written: a binding used only by a later cell is still imported.
      verbatimModuleSyntax: true,
      sourceMap: true,
    },
  });
  const problems = (out.diagnostics || []).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    const at = d.start === undefined ? null : position(code, d.start);
    return { code: d.code, text, at };
  });
  if (problems.length) {
    const first = problems[0];
    const where = first.at ? ", line " + first.at.line + ", column " + first.at.column : "";
    const traceback = [];
    for (const p of problems) {
      if (p.at) {
        traceback.push(filename + ":" + p.at.line + ":" + p.at.column);
        traceback.push(code.split("\n")[p.at.line - 1]);
        traceback.push(" ".repeat(p.at.column - 1) + "^");
      }
      traceback.push("SyntaxError: " + p.text + " (TS" + p.code + ")");
    }
    const value = first.text + " (TS" + first.code + where + ")";
    return { error: { name: "SyntaxError", value, traceback } };
  }
  const js = out.outputText.replace(/\n?\/\/# sourceMappingURL=\S*\s*$/, "\n");
  return { js, lines: lineMap(out.sourceMapText) };
}

/** `<cell-N>:LINE[:COLUMN]` in a stack trace as the TypeScript cell's own line. */
function mapTraceback(traceback, filename, lines) {
  const at = new RegExp(filename.replace(/[<>-]/g, "\\$&") + ":(\\d+)(?::\\d+)?", "g");
  return traceback.map((line) =>
    line.replace(at, (_, n) => filename + ":" + (lines[Number(n)] || n)),
  );
}

/** The error event for a thrown value, without the driver's own stack frames (and, for a
 *  TypeScript cell, `lines` mapping the compiled cell's lines to the cell's own). */
function report(err, filename, lines) {
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
  const mapped = lines ? mapTraceback(traceback, filename, lines) : traceback;
  emit("error", { name, value, traceback: mapped });
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
  let lines = null;
  capturing = true;
  try {
    Object.assign(process.env, env);
    if (TYPESCRIPT) {
      const compiled = transpile(code, filename);
      if (compiled.error) {
        status = "error";
        emit("error", compiled.error);
        return;
      }
      code = compiled.js;
      lines = compiled.lines;
    }
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
      report(err, filename, lines);
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
