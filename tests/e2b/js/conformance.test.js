// E2B's official JavaScript SDK (npm e2b + @e2b/code-interpreter, installed by
// scripts/e2b-clients.sh) against a real `airlock serve`: the same areas as tests/e2b/python.
//
// Run by crates/airlock/tests/e2b_sdk.rs, or by hand:
//   NODE_PATH=target/e2b-clients/js/node_modules E2B_API_KEY=e2b_… E2B_API_URL=http://127.0.0.1:PORT \
//   E2B_SANDBOX_URL=http://127.0.0.1:PORT NO_PROXY=127.0.0.1,localhost node --test tests/e2b/js/
'use strict'

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const crypto = require('node:crypto')
const fs = require('node:fs')

const e2b = require('e2b')
const ci = require('@e2b/code-interpreter')

for (const v of ['E2B_API_KEY', 'E2B_API_URL', 'E2B_SANDBOX_URL']) {
  if (!process.env[v]) throw new Error(`${v} is not set: point the SDK at a running \`airlock serve\``)
}

// Every test is bounded; node:test fails a test that runs past its timeout.
const T = { timeout: 60_000 }
const RUN = crypto.randomBytes(6).toString('hex')
const WRONG_KEY = 'e2b_0123456789abcdef0123456789abcdef01234567'

/** A new sandbox (a code-interpreter one when `code`), killed after `fn`. */
async function withSandbox(opts, fn, code = false) {
  const cls = code ? ci.Sandbox : e2b.Sandbox
  const sbx = await cls.create({ ...opts, metadata: { 'suite-run': RUN, ...(opts.metadata || {}) } })
  try {
    return await fn(sbx)
  } finally {
    await sbx.kill()
  }
}

async function waitFor(what, check, ms = 10_000) {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

async function listAll(query, opts = {}) {
  const paginator = e2b.Sandbox.list({ query, ...opts })
  const items = []
  while (paginator.hasNext) items.push(...(await paginator.nextItems()))
  return items
}

const secondsLeft = (info) => (info.endAt.getTime() - Date.now()) / 1000

describe('lifecycle', () => {
  test('list order across pages, startedAfter; metrics ranges', T, async () => {
    const tag = { case: 'js-order-' + crypto.randomBytes(4).toString('hex') }
    await withSandbox({ metadata: tag }, async (a) => {
      await new Promise((r) => setTimeout(r, 1100))
      const between = new Date()
      await withSandbox({ metadata: tag }, async (b) => {
        const ids = async (opts, query = {}) =>
          (await listAll({ metadata: { 'suite-run': RUN, ...tag }, ...query }, opts)).map((s) => s.sandboxId)
        assert.deepEqual(await ids({ order: 'asc', limit: 1 }), [a.sandboxId, b.sandboxId])
        assert.deepEqual(await ids({ order: 'desc' }), [b.sandboxId, a.sandboxId])
        assert.deepEqual(await ids({}, { startedAfter: between }), [b.sandboxId])
        const m = await b.getMetrics({ start: new Date('2020-01-01'), end: new Date('2020-01-02') })
        assert.deepEqual(m, [], 'a range before the box existed is empty')
        assert.equal((await b.getMetrics()).length, 1)
      })
    })
  })

  test('create with template, timeout, metadata and env vars; getInfo', T, async () => {
    await withSandbox({ template: 'base', timeoutMs: 120_000, metadata: { owner: 'js' }, envs: { GREETING: 'hello js' } }, async (sbx) => {
      assert.match(sbx.sandboxId, /^[a-z0-9_]+$/)
      assert.equal((await sbx.commands.run('echo $GREETING')).stdout, 'hello js\n')
      const info = await sbx.getInfo()
      assert.equal(info.sandboxId, sbx.sandboxId)
      assert.equal(info.metadata.owner, 'js')
      assert.equal(info.state, 'running')
      assert.ok(secondsLeft(info) > 100 && secondsLeft(info) <= 125, `${info.endAt}`)
      assert.equal(await sbx.isRunning(), true)
    })
  })

  test('connect reaches the same sandbox', T, async () => {
    await withSandbox({}, async (sbx) => {
      await sbx.files.write('/home/user/m.txt', 'from the first handle')
      const other = await e2b.Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 })
      assert.equal(other.sandboxId, sbx.sandboxId)
      assert.equal((await other.commands.run('cat /home/user/m.txt')).stdout, 'from the first handle')
      assert.ok(secondsLeft(await other.getInfo()) > 500)
    })
  })

  test('list filters by metadata and state', T, async () => {
    await withSandbox({ metadata: { role: 'alpha' } }, async (a) => {
      await withSandbox({ metadata: { role: 'beta' } }, async (b) => {
        const alpha = await listAll({ metadata: { 'suite-run': RUN, role: 'alpha' } })
        assert.deepEqual(alpha.map((s) => s.sandboxId), [a.sandboxId])
        const running = await listAll({ metadata: { 'suite-run': RUN }, state: ['running'] })
        const ids = new Set(running.map((s) => s.sandboxId))
        assert.ok(ids.has(a.sandboxId) && ids.has(b.sandboxId))
        assert.deepEqual(await listAll({ metadata: { 'suite-run': RUN }, state: ['paused'] }), [])
      })
    })
  })

  test('setTimeout, expiry at the timeout, kill', T, async () => {
    const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000, metadata: { 'suite-run': RUN } })
    try {
      await sbx.setTimeout(400_000)
      assert.ok(secondsLeft(await sbx.getInfo()) > 380)
      await sbx.setTimeout(1_000)
      await waitFor('the sandbox expired', async () => !(await sbx.isRunning()), 20_000)
      await assert.rejects(e2b.Sandbox.connect(sbx.sandboxId), e2b.NotFoundError)
    } finally {
      await sbx.kill()
    }
    const other = await e2b.Sandbox.create({ metadata: { 'suite-run': RUN } })
    assert.equal(await other.kill(), true)
    assert.equal(await other.isRunning(), false)
    assert.equal(await e2b.Sandbox.kill(other.sandboxId), false)
  })

  test('pause, then connect resumes the same box with its files', T, async () => {
    await withSandbox({}, async (sbx) => {
      await sbx.commands.run('echo kept > /tmp/state')
      await sbx.pause()
      assert.equal((await e2b.Sandbox.getInfo(sbx.sandboxId)).state, 'paused')
      const again = await e2b.Sandbox.connect(sbx.sandboxId)
      assert.equal((await again.commands.run('cat /tmp/state')).stdout, 'kept\n')
      assert.equal((await again.getInfo()).state, 'running')
    })
  })
})

describe('commands', () => {
  test('stdout, stderr, exit codes, env vars, cwd, user', T, async () => {
    await withSandbox({}, async (sbx) => {
      const r = await sbx.commands.run('echo out; echo err >&2')
      assert.equal(r.stdout, 'out\n')
      assert.equal(r.stderr, 'err\n')
      assert.equal(r.exitCode, 0)
      await assert.rejects(sbx.commands.run('echo boom >&2; exit 3'), (err) => err instanceof e2b.CommandExitError && err.exitCode === 3 && err.stderr === 'boom\n')
      assert.equal((await sbx.commands.run('echo $FOO', { envs: { FOO: 'bar' } })).stdout, 'bar\n')
      assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
      assert.equal((await sbx.commands.run('whoami', { user: 'user' })).stdout, 'user\n')
      const out = []
      await sbx.commands.run('echo a; echo b', { onStdout: (d) => out.push(d) })
      assert.equal(out.join(''), 'a\nb\n')
    })
  })

  // The JS suite runs against native boxes, whose receipt has a `root` line: root is uid 0 of a
  // user namespace nested in the box's that maps only the box user, with no capability.
  test('user root: uid 0 of the box, no capability, home /root, files as root', T, async () => {
    await withSandbox({}, async (sbx) => {
      const who = await sbx.commands.run("id -u; whoami; pwd; grep -E '^CapEff' /proc/self/status", { user: 'root' })
      assert.equal(who.stdout, '0\nroot\n/root\nCapEff:\t0000000000000000\n')
      assert.equal((await sbx.commands.run('id -u')).stdout, '1000\n')
      await sbx.files.write('js-root.txt', 'from js', { user: 'root' })
      assert.equal((await sbx.commands.run('cat /root/js-root.txt; stat -c %u /root/js-root.txt', { user: 'root' })).stdout, 'from js0\n')
      const probes = await sbx.commands.run('test -w /usr && echo usr-writable || echo usr-read-only; hostname changed 2>/dev/null && echo changed || echo refused', { user: 'root' })
      assert.equal(probes.stdout, 'usr-read-only\nrefused\n')
    })
  })

  test('background commands: wait, kill, list, connect, sendStdin', T, async () => {
    await withSandbox({}, async (sbx) => {
      const bg = await sbx.commands.run('sleep 0.3; echo done', { background: true })
      assert.equal((await bg.wait()).stdout, 'done\n')
      const sleeper = await sbx.commands.run('sleep 120', { background: true })
      assert.ok((await sbx.commands.list()).some((p) => p.pid === sleeper.pid))
      assert.equal(await sleeper.kill(), true)
      await assert.rejects(sleeper.wait(), e2b.CommandExitError)
      assert.equal(await sbx.commands.kill(999999), false)
      const late = await sbx.commands.run('sleep 1.5; echo late', { background: true })
      const attached = await sbx.commands.connect(late.pid)
      assert.ok((await attached.wait()).stdout.includes('late\n'))
      const reader = await sbx.commands.run('read a; echo "got $a"', { background: true, stdin: true })
      await sbx.commands.sendStdin(reader.pid, 'piped\n')
      assert.equal((await reader.wait()).stdout, 'got piped\n')
    })
  })

  test('fast large output arrives whole', T, async () => {
    await withSandbox({}, async (sbx) => {
      for (const n of [200_000, 1_000_000, 8_000_000]) {
        let seen = 0
        const r = await sbx.commands.run(`head -c ${n} /dev/zero | tr '\\0' a; echo end >&2`, { onStdout: (d) => { seen += d.length }, timeoutMs: 60_000 })
        assert.equal(r.stdout.length, n)
        assert.ok(/^a*$/.test(r.stdout))
        assert.equal(seen, n)
        assert.equal(r.stderr, 'end\n')
      }
    })
  })

  test('per-command timeout', T, async () => {
    await withSandbox({}, async (sbx) => {
      const started = Date.now()
      await assert.rejects(sbx.commands.run('sleep 60', { timeoutMs: 1_000 }), e2b.TimeoutError)
      assert.ok(Date.now() - started < 15_000)
    })
  })

  test('PTY create, input, resize', T, async () => {
    await withSandbox({}, async (sbx) => {
      const chunks = []
      const text = () => Buffer.concat(chunks).toString()
      const term = await sbx.pty.create({ rows: 24, cols: 80, onData: (d) => chunks.push(Buffer.from(d)) })
      await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size; echo TERM=$TERM\n'))
      await waitFor('the terminal shows TERM', () => text().includes('TERM=xterm-256color'))
      assert.ok(text().includes('24 80'), text())
      await sbx.pty.resize(term.pid, { rows: 30, cols: 100 })
      await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size\n'))
      await waitFor('the terminal shows the new size', () => text().includes('30 100'))
      await sbx.pty.sendInput(term.pid, new TextEncoder().encode('exit 0\n'))
      assert.equal((await term.wait()).exitCode, 0)
    })
  })
})

describe('files', () => {
  test('read/write text, bytes, several files; list depth; exists, getInfo, makeDir, rename, remove', T, async () => {
    await withSandbox({}, async (sbx) => {
      const info = await sbx.files.write('/home/user/a.txt', 'héllo')
      assert.equal(info.path, '/home/user/a.txt')
      assert.equal(await sbx.files.read('/home/user/a.txt'), 'héllo')
      const bytes = new Uint8Array(4096).map((_, i) => i % 256)
      await sbx.files.write('/home/user/b.bin', bytes.buffer)
      assert.deepEqual(Buffer.from(await sbx.files.read('/home/user/b.bin', { format: 'bytes' })), Buffer.from(bytes))
      const many = await sbx.files.write([
        { path: '/home/user/t/x.txt', data: 'x' },
        { path: '/home/user/t/y/z.txt', data: 'z' },
      ])
      assert.deepEqual(many.map((w) => w.path).sort(), ['/home/user/t/x.txt', '/home/user/t/y/z.txt'])
      const shallow = await sbx.files.list('/home/user/t')
      assert.deepEqual(shallow.map((e) => [e.name, e.type]).sort(), [['x.txt', 'file'], ['y', 'dir']])
      const deep = await sbx.files.list('/home/user/t', { depth: 2 })
      assert.ok(deep.some((e) => e.path === '/home/user/t/y/z.txt'))
      assert.equal(await sbx.files.exists('/home/user/t/x.txt'), true)
      assert.equal(await sbx.files.exists('/home/user/nope'), false)
      const st = await sbx.files.getInfo('/home/user/t/x.txt')
      assert.equal(st.size, 1)
      assert.equal(st.type, 'file')
      assert.equal(await sbx.files.makeDir('/home/user/nd'), true)
      assert.equal(await sbx.files.makeDir('/home/user/nd'), false)
      const moved = await sbx.files.rename('/home/user/t/x.txt', '/home/user/nd/x.txt')
      assert.equal(moved.path, '/home/user/nd/x.txt')
      await sbx.files.remove('/home/user/nd/x.txt')
      assert.equal(await sbx.files.exists('/home/user/nd/x.txt'), false)
      await assert.rejects(sbx.files.read('/home/user/never'), e2b.NotFoundError)
    })
  })

  test('watchDir sees a file a command creates', T, async () => {
    await withSandbox({}, async (sbx) => {
      await sbx.files.makeDir('/home/user/w')
      const events = []
      const handle = await sbx.files.watchDir('/home/user/w', (e) => events.push(e))
      await sbx.commands.run('echo hi > /home/user/w/new.txt')
      await waitFor('the watch reports new.txt', () => events.some((e) => e.name === 'new.txt' && e.type === e2b.FilesystemEventType.CREATE))
      await handle.stop()
    })
  })

  test('as envd: remove of a missing path, mode bits, symlink info, CHMOD events', T, async () => {
    await withSandbox({}, async (sbx) => {
      await sbx.files.remove('/home/user/never-was')
      await sbx.commands.run('cd /home/user && mkdir -m 750 p && echo x > p/t && ln -s p/t ln && ln -s p dl')
      const dir = await sbx.files.getInfo('/home/user/p')
      assert.deepEqual([dir.mode, dir.permissions], [0o750, 'drwxr-x---'])
      const ln = await sbx.files.getInfo('/home/user/ln')
      assert.deepEqual([ln.type, ln.symlinkTarget, ln.path], ['file', '/home/user/p/t', '/home/user/ln'])
      assert.deepEqual([(await sbx.files.getInfo('/home/user/dl')).type], ['dir'])
      const events = []
      const handle = await sbx.files.watchDir('/home/user/p', (e) => events.push(e))
      await sbx.commands.run('chmod 600 /home/user/p/t')
      await waitFor('the watch reports CHMOD of t', () => events.some((e) => e.name === 't' && e.type === e2b.FilesystemEventType.CHMOD))
      await handle.stop()
    })
  })

  test('upload and download URLs', T, async () => {
    await withSandbox({}, async (sbx) => {
      const up = await sbx.uploadUrl('/home/user/up.txt')
      assert.ok(up.startsWith(process.env.E2B_SANDBOX_URL) && !up.includes(sbx.sandboxId))
      const form = new FormData()
      form.append('file', new Blob(['uploaded via url']), 'up.txt')
      const res = await fetch(up, { method: 'POST', body: form })
      assert.equal(res.status, 200, await res.text())
      assert.equal((await sbx.commands.run('cat /home/user/up.txt')).stdout, 'uploaded via url')
      const downUrl = await sbx.downloadUrl('/home/user/up.txt')
      const down = await fetch(downUrl)
      assert.equal(down.status, 200)
      assert.equal(await down.text(), 'uploaded via url')
      // envd's words for a signature that matches nothing come first.
      const bad = await fetch(downUrl.replace('up.txt', 'other.txt'))
      assert.equal(bad.status, 401)
      assert.match((await bad.json()).message, /^invalid signature/)
    })
  })
})

describe('code', () => {
  test('state, text, logs, error with traceback, callbacks', T, async () => {
    await withSandbox({}, async (sbx) => {
      await sbx.runCode('x = 41')
      assert.equal((await sbx.runCode('x + 1')).text, '42')
      const logs = await sbx.runCode("import sys\nprint('o')\nprint('e', file=sys.stderr)")
      assert.deepEqual(logs.logs.stdout, ['o\n'])
      assert.deepEqual(logs.logs.stderr, ['e\n'])
      const failed = await sbx.runCode('1/0')
      assert.equal(failed.error.name, 'ZeroDivisionError')
      assert.ok(failed.error.traceback.includes('ZeroDivisionError'))
      const out = []
      const results = []
      await sbx.runCode("print('cb')\n6*7", { onStdout: (m) => out.push(m.line), onResult: (r) => results.push(r.text) })
      assert.deepEqual(out, ['cb\n'])
      assert.deepEqual(results, ['42'])
    }, true)
  })

  test('matplotlib PNG', T, async () => {
    await withSandbox({}, async (sbx) => {
      const ex = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')
      const png = ex.results.find((r) => r.png)
      assert.ok(png, JSON.stringify(ex))
      assert.deepEqual([...Buffer.from(png.png, 'base64').subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    }, true)
  })

  test('as E2B: dedent, unquoted str text, default contexts, top-level await, imports, charts, data', T, async () => {
    await withSandbox({}, async (sbx) => {
      const listed = await sbx.listCodeContexts()
      assert.ok(['python', 'javascript'].every((l) => listed.some((c) => c.language === l)), JSON.stringify(listed))
      const dedented = await sbx.runCode('\n    x = 2\n    if x:\n        print("in")\n    x * 3\n')
      assert.deepEqual([dedented.error, dedented.text, dedented.logs.stdout], [undefined, '6', ['in\n']])
      assert.equal((await sbx.runCode("'hello'")).text, 'hello')
      assert.equal((await sbx.runCode("!echo from shell")).logs.stdout.join(''), 'from shell\n')
      const awaited = await sbx.runCode('const v = await Promise.resolve(20)\nv + 1', { language: 'js' })
      assert.equal(awaited.text, '21')
      const imported = await sbx.runCode("import { basename } from 'node:path'\nbasename('/a/b.txt')", { language: 'js' })
      assert.equal(imported.text, 'b.txt')
      const chart = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\nplt.title("t")\nplt.show()')
      assert.equal(chart.results[0].chart.type, 'line')
      assert.deepEqual(chart.results[0].chart.elements[0].points, [[1, 3], [2, 4]])
      const frame = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
      assert.deepEqual(frame.results[0].data, { a: [1, 2] })
    }, true)
  })

  test('contexts and languages', T, async () => {
    await withSandbox({}, async (sbx) => {
      const ctx = await sbx.createCodeContext({ cwd: '/tmp' })
      await sbx.runCode('only_here = 1', { context: ctx })
      assert.equal((await sbx.runCode('only_here', { context: ctx })).text, '1')
      assert.equal((await sbx.runCode('only_here')).error.name, 'NameError')
      assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
      await sbx.restartCodeContext(ctx)
      assert.equal((await sbx.runCode('only_here', { context: ctx })).error.name, 'NameError')
      await sbx.removeCodeContext(ctx)
      assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
      assert.equal((await sbx.runCode('const k = 20; k + 1', { language: 'js' })).text, '21')
      assert.equal((await sbx.runCode('k * 2', { language: 'js' })).text, '40')
      assert.deepEqual((await sbx.runCode('echo $((6 * 7))', { language: 'bash' })).logs.stdout, ['42\n'])
    }, true)
  })

  // The pinned compiler (scripts/e2b-clients.sh; the harness passes its path) is copied into the
  // box's working directory's node_modules, as `npm install typescript` in the box would put it.
  async function giveTypescript(sbx) {
    const where = process.env.E2B_TYPESCRIPT
    if (!where || !fs.existsSync(`${where}/lib/typescript.js`)) {
      throw new Error(`E2B_TYPESCRIPT (${where}) names no typescript package: run scripts/e2b-clients.sh`)
    }
    for (const name of ['package.json', 'lib/typescript.js']) {
      await sbx.files.write(`/home/user/node_modules/typescript/${name}`, fs.readFileSync(`${where}/${name}`).toString())
    }
  }

  test('typescript: typed functions, interfaces, top-level await, imports, errors', T, async () => {
    const globals = ['/usr/local/lib/node_modules', '/usr/lib/node_modules', '/usr/share/nodejs']
      .map((d) => `${d}/typescript`).filter((d) => fs.existsSync(d))
    assert.deepEqual(globals, [], 'this test needs a host without a global TypeScript compiler')
    await withSandbox({}, async (sbx) => {
      const missing = await sbx.runCode('const n: number = 1; n', { language: 'typescript' })
      assert.equal(missing.error.name, 'TypeScriptNotFound')
      assert.match(missing.error.value, /npm install -g typescript/)
      await giveTypescript(sbx)
      const typed = await sbx.runCode('function twice(n: number): number {\n  return n * 2\n}\ntwice(21)', { language: 'ts' })
      assert.deepEqual([typed.error, typed.text], [undefined, '42'])
      const shaped = await sbx.runCode('interface User { name: string }\nconst u: User = { name: "ada" }\nu.name.toUpperCase()', { language: 'typescript' })
      assert.equal(shaped.text, 'ADA')
      const awaited = await sbx.runCode('const w: number = await Promise.resolve(twice(5))\nw + 1', { language: 'typescript' })
      assert.equal(awaited.text, '11')
      const hashed = await sbx.runCode('import { createHash } from "crypto"\ncreateHash("sha256").update("airlock").digest("hex")', { language: 'typescript' })
      assert.equal(hashed.text, crypto.createHash('sha256').update('airlock').digest('hex'))
      const bad = await sbx.runCode('let fine: string = "x"\nfunction f(a: ) {}', { language: 'typescript' })
      assert.equal(bad.error.name, 'SyntaxError')
      assert.match(bad.error.value, /line 2/)
      assert.match(bad.error.traceback, /function f\(a: \) \{\}/)
      const ctx = await sbx.createCodeContext({ language: 'typescript' })
      assert.equal(ctx.language, 'typescript')
    }, true)
  })
})

describe('network', () => {
  // The only destination: an HTTP server on the host's 127.0.0.1, reachable from a box only
  // through airlock's egress proxy and only when a rule grants 127.0.0.1.
  async function withServer(fn) {
    const secret = crypto.randomBytes(8).toString('hex')
    const seen = []
    const server = http.createServer((req, res) => {
      seen.push(req.url)
      res.end(secret)
    })
    await new Promise((r) => server.listen(0, '127.0.0.1', r))
    try {
      return await fn(`http://127.0.0.1:${server.address().port}/probe`, secret, seen)
    } finally {
      server.close()
    }
  }
  // Through the proxy: `--noproxy ''` overrides NO_PROXY (which keeps loopback in the box).
  const fetchIn = async (sbx, url) =>
    (await sbx.commands.run(`curl --noproxy '' -sS --max-time 10 -o /tmp/body -w '%{http_code}' ${url}; echo " exit=$?"; cat /tmp/body 2>/dev/null; true`, { timeoutMs: 30_000 })).stdout

  test('allowOut grants, allowInternetAccess=false and denyOut refuse', T, async () => {
    await withServer(async (url, secret, seen) => {
      await withSandbox({ network: { allowOut: ['127.0.0.1'] } }, async (sbx) => {
        const out = await fetchIn(sbx, url)
        assert.ok(out.startsWith('200 exit=0') && out.includes(secret), out)
      })
      assert.equal(seen.length, 1)
      await withSandbox({ allowInternetAccess: false }, async (sbx) => {
        const out = await fetchIn(sbx, url)
        assert.ok(!out.includes(secret), out)
      })
      await withSandbox({ network: { denyOut: ['0.0.0.0/0'] } }, async (sbx) => {
        const out = await fetchIn(sbx, url)
        assert.ok(!out.includes(secret), out)
      })
      assert.equal(seen.length, 1, 'the denied sandboxes never reached the server')
      // denyOut of one address wins over the allowed range it is in; another address denied
      // leaves this one reachable.
      await withSandbox({ network: { allowOut: ['127.0.0.0/8'], denyOut: ['127.0.0.1'] } }, async (sbx) => {
        const out = await fetchIn(sbx, url)
        assert.ok(!out.includes(secret), out)
      })
      assert.equal(seen.length, 1, 'the denied address saw nothing')
      await withSandbox({ network: { allowOut: ['127.0.0.0/8'], denyOut: ['127.0.0.2'] } }, async (sbx) => {
        const out = await fetchIn(sbx, url)
        assert.ok(out.startsWith('200 exit=0') && out.includes(secret), out)
      })
      assert.equal(seen.length, 2)
    })
  })

  test('updateNetwork changes a running box\'s egress', T, async () => {
    await withServer(async (url, secret, seen) => {
      await withSandbox({}, async (sbx) => {
        assert.ok(!(await fetchIn(sbx, url)).includes(secret))
        await sbx.updateNetwork({ allowOut: ['127.0.0.1'] })
        const out = await fetchIn(sbx, url)
        assert.ok(out.startsWith('200 exit=0') && out.includes(secret), out)
        await sbx.updateNetwork({ denyOut: ['0.0.0.0/0'] })
        assert.ok(!(await fetchIn(sbx, url)).includes(secret))
      })
      assert.deepEqual(seen, ['/probe'], 'only the granted fetch got through')
    })
  })

  test("in-box loopback works in every network mode and is the box's own", T, async () => {
    await withServer(async (url, secret, seen) => {
      const port = new URL(url).port
      const script = [
        'mkdir -p /tmp/www && echo box-own > /tmp/www/inbox.txt',
        `python3 -m http.server ${port} --bind 127.0.0.1 --directory /tmp/www >/dev/null 2>&1 &`,
        `hex=$(printf '0100007F:%04X' ${port})`,
        `for _ in $(seq 100); do awk -v a="$hex" '$2 == a && $4 == "0A" {f=1} END {exit !f}' /proc/net/tcp && break; sleep 0.05; done`,
        'echo "NO_PROXY=${NO_PROXY:-}"',
        `got=$(curl -sS --max-time 10 http://127.0.0.1:${port}/inbox.txt); echo "by-address $got exit=$?"`,
        `got=$(curl -sS --max-time 10 http://localhost:${port}/inbox.txt); echo "by-name $got exit=$?"`,
        'kill %1',
      ].join('\n')
      for (const [opts, noProxy] of [[{}, 'localhost,127.0.0.1,::1'], [{ allowInternetAccess: false }, '']]) {
        await withSandbox(opts, async (sbx) => {
          const lines = (await sbx.commands.run(script, { timeoutMs: 30_000 })).stdout.split('\n')
          assert.ok(lines.includes(`NO_PROXY=${noProxy}`), lines.join('\n'))
          assert.ok(lines.includes('by-address box-own exit=0'), lines.join('\n'))
          assert.ok(lines.includes('by-name box-own exit=0'), lines.join('\n'))
          assert.ok(!lines.join('\n').includes(secret))
        })
      }
      assert.equal(seen.length, 0, "the host's server on the same port saw nothing")
    })
  })
})

describe('ports', () => {
  // getHost(port) is `{port}-{id}.localhost` (the server runs with --e2b-domain localhost); the
  // client speaks to the server's own address with that Host, as a browser resolving
  // *.localhost would. See tests/e2b/python/test_ports.py.
  const fs = require('node:fs')
  const net = require('node:net')
  const path = require('node:path')
  const WS_ECHO = fs.readFileSync(path.join(__dirname, '..', 'ws_echo.py'), 'utf8')
  const gw = new URL(process.env.E2B_API_URL)
  const PORT = 8000

  function get(host, urlPath, headers = {}) {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: gw.hostname, port: gw.port, path: urlPath, headers: { host, ...headers } }, (res) => {
        let body = ''
        res.on('data', (d) => (body += d))
        res.on('end', () => resolve({ status: res.statusCode, body }))
      })
      req.on('error', reject)
      req.end()
    })
  }
  async function untilUp(host, urlPath, headers) {
    let r
    await waitFor(`${host} answers`, async () => (r = await get(host, urlPath, headers)).status !== 502, 20_000).catch(() => {})
    return r
  }
  function wsRoundtrip(host, message) {
    return new Promise((resolve, reject) => {
      const sock = net.connect(Number(gw.port), gw.hostname)
      let buf = Buffer.alloc(0)
      let status = null
      sock.setTimeout(20_000, () => { sock.destroy(); reject(new Error('websocket timed out')) })
      sock.on('error', reject)
      sock.on('connect', () => {
        const key = crypto.randomBytes(16).toString('base64')
        sock.write(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
      })
      sock.on('data', (d) => {
        buf = Buffer.concat([buf, d])
        if (status === null) {
          const end = buf.indexOf('\r\n\r\n')
          if (end < 0) return
          status = buf.subarray(0, buf.indexOf('\r\n')).toString()
          buf = buf.subarray(end + 4)
          if (!status.includes(' 101 ')) { sock.destroy(); return resolve({ status, echoed: null }) }
          const payload = Buffer.from(message)
          const mask = crypto.randomBytes(4)
          const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]))
          sock.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]))
        }
        if (buf.length >= 2 && buf.length >= 2 + (buf[1] & 0x7f)) {
          sock.destroy()
          resolve({ status, echoed: buf.subarray(2, 2 + (buf[1] & 0x7f)).toString() })
        }
      })
    })
  }

  test('getHost reaches HTTP and WebSocket servers in the box', T, async () => {
    await withSandbox({}, async (sbx) => {
      const host = sbx.getHost(PORT)
      assert.equal(host, `${PORT}-${sbx.sandboxId}.localhost`)
      const secret = crypto.randomBytes(8).toString('hex')
      await sbx.files.write('/home/user/site/secret.txt', secret)
      await sbx.commands.run(`python3 -m http.server ${PORT} --bind 127.0.0.1 --directory /home/user/site`, { background: true })
      assert.deepEqual(await untilUp(host, '/secret.txt'), { status: 200, body: secret })
      await sbx.files.write('/home/user/ws_echo.py', WS_ECHO)
      await sbx.commands.run(`python3 /home/user/ws_echo.py ${PORT + 1}`, { background: true })
      let r
      await waitFor('the echo server answers', async () => (r = await wsRoundtrip(sbx.getHost(PORT + 1), 'hi js')).echoed !== null, 20_000)
      assert.match(r.status, /^HTTP\/1.1 101/)
      assert.equal(r.echoed, 'echo:hi js')
      // An attack: a port nothing listens on, and a name that is no sandbox.
      const closed = await get(sbx.getHost(PORT + 2), '/secret.txt')
      assert.equal(closed.status, 502)
      assert.ok(closed.body.includes('port is not open') && !closed.body.includes(secret), closed.body)
      const none = await get(`${PORT}-nosuchsandbox.localhost`, '/secret.txt')
      assert.ok(none.status === 502 && !none.body.includes(secret), none.body)
    })
  })

  test('allowPublicTraffic false needs the traffic token; maskRequestHost', T, async () => {
    await withSandbox({ network: { allowPublicTraffic: false, maskRequestHost: '${PORT}-myapp.example.com' } }, async (sbx) => {
      const token = sbx.trafficAccessToken
      assert.ok(token, 'a sandbox without public traffic has a traffic token')
      const info = await sbx.getInfo()
      assert.equal(info.network.allowPublicTraffic, false, JSON.stringify(info.network))
      assert.equal(info.network.maskRequestHost, '${PORT}-myapp.example.com')
      const hostEcho = [
        'import http.server, sys',
        'class H(http.server.BaseHTTPRequestHandler):',
        '    def do_GET(self):',
        '        body = ("host=" + self.headers["Host"]).encode()',
        '        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)',
        'http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()',
      ].join('\n')
      await sbx.files.write('/home/user/host.py', hostEcho)
      await sbx.commands.run(`python3 /home/user/host.py ${PORT}`, { background: true })
      const host = sbx.getHost(PORT)
      const ok = await untilUp(host, '/', { 'e2b-traffic-access-token': token })
      assert.deepEqual(ok, { status: 200, body: `host=${PORT}-myapp.example.com` })
      for (const headers of [{}, { 'e2b-traffic-access-token': 'wrong' }]) {
        const r = await get(host, '/', headers)
        assert.equal(r.status, 403, JSON.stringify(r))
        assert.ok(!r.body.includes('host='), r.body)
      }
    })
  })
})

describe('errors', () => {
  test('invalid API key, unknown sandbox, not found, already exists', T, async () => {
    await assert.rejects(e2b.Sandbox.create({ apiKey: WRONG_KEY }), e2b.AuthenticationError)
    await assert.rejects(e2b.Sandbox.connect('i0doesnotexist0000000'), e2b.NotFoundError)
    await assert.rejects(e2b.Sandbox.getInfo('i0doesnotexist0000000'), e2b.NotFoundError)
    assert.equal(await e2b.Sandbox.kill('i0doesnotexist0000000'), false)
  })
})
