// E2B's Secret API and network rules through the real JavaScript SDK, against `airlock serve`:
// the same steps as drive.py (see there), run by crates/airlock/tests/e2b_secrets.rs. Prints one
// JSON object: every answer the SDK gave and everything the box printed.
'use strict'

const assert = require('node:assert/strict')
const { Sandbox, Secret } = require('e2b')

const port = Number(process.env.ORIGIN_PORT)
const value = process.env.SECRET_VALUE
const name = `api-key-${process.pid}`
const out = { answers: [], box: [], steps: [] }

function answer(what, info) {
  out.answers.push(`${what}: ${JSON.stringify(info)}`)
  return info
}

async function refused(what, call, says) {
  try {
    await call()
  } catch (e) {
    out.answers.push(`${what}: ${e}`)
    assert.ok(String(e).toLowerCase().includes(says), `${what}: ${e}`)
    return
  }
  throw new Error(`${what} was accepted`)
}

async function main() {
  const created = answer('create', await Secret.create(name, 'sk-decoy-first-version', { metadata: { team: 'blue' } }))
  assert.equal(created.version, 1)
  assert.deepEqual(created.metadata, { team: 'blue' })
  const updated = answer('update', await Secret.update(created.secretId, value))
  assert.equal(updated.version, 2)
  assert.equal(updated.secretId, created.secretId)
  const got = answer('getInfo', await Secret.getInfo(name))
  assert.equal(got.version, 2)
  const page = answer('list', await Secret.list({ limit: 50 }).nextItems())
  assert.deepEqual(page.filter((s) => s.name === name).map((s) => s.name), [name])
  await refused('a second secret of the same name', () => Secret.create(name, 'sk-duplicate'), 'exists')
  out.steps.push('secret stored, updated, listed')

  const network = {
    allowOut: ['127.0.0.1', 'api.test'],
    rules: { [`api.test:${port}`]: [{ transform: { headers: { Authorization: 'Bearer ' + Secret.fill(name) } } }] },
  }
  const sbx = await Sandbox.create({ network, timeoutMs: 120_000 })
  try {
    const info = answer('sandbox info', await sbx.getInfo())
    assert.deepEqual(info.network && info.network.rules, network.rules)
    const url = `https://api.test:${port}`
    for (const cmd of [
      `curl -sS --fail -H 'Authorization: Bearer made-up' ${url}/curl`,
      `python3 -c "import urllib.request as u; print(u.urlopen('${url}/python').read().decode())"`,
      "env; cat /proc/self/environ | tr '\\0' '\\n'",
      'grep -rl -- "$(printf %s airlock-secret-)" /etc /tmp /home 2>/dev/null | head; echo grep-done',
    ]) {
      const r = await sbx.commands.run(cmd, { timeoutMs: 60_000 })
      out.box.push({ cmd, exit: r.exitCode, stdout: r.stdout, stderr: r.stderr })
    }
    out.steps.push('box ran its requests')
    out.sandbox_id = sbx.sandboxId
  } finally {
    await sbx.kill()
  }

  assert.equal(await Secret.exists(name), true)
  assert.equal(await Secret.destroy(name), true)
  assert.equal(await Secret.destroy(name), false)
  assert.equal(await Secret.exists(name), false)
  await refused("a deleted secret's info", () => Secret.getInfo(name), 'not found')
  await refused('a rule naming a deleted secret', async () => (await Sandbox.create({ network, timeoutMs: 30_000 })).kill(), 'does not exist')
  const constant = { allowOut: ['api.test'], rules: { 'api.test': [{ transform: { headers: { 'X-Team': 'blue' } } }] } }
  await refused('a constant header rule', async () => (await Sandbox.create({ network: constant, timeoutMs: 30_000 })).kill(), 'names no secret')
  out.steps.push('deleted secret refused')
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
