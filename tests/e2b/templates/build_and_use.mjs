// E2B's Template SDK (JavaScript) against a real `airlock serve`: the same checks as
// build_and_use.py. Run by crates/airlock/tests/e2b_templates.rs:
//   node build_and_use.mjs NAME CONTEXT_DIR        (prints OK when every check passed)
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { Template, Sandbox, BuildError } = require('e2b')
const [name, context] = process.argv.slice(2)

const logs = []
const template = Template({ fileContextPath: context })
  .fromBaseImage()
  .copy('greeting.txt', '/opt/app/')
  .copy('data', '/opt/data', { mode: 0o640 })
  .setEnvs({ GREETING: 'hello from ENV' })
  .setWorkdir('/opt/app')
  .runCmd('echo "the build step ran as $(id -u)" && echo "$GREETING in $(pwd)" > /etc/built-by')
  // A root step (the build box's root: uid 0 by another name of the box user, no capability).
  .runCmd("echo $(id -u) $HOME > /opt/app/js-ids && grep -E '^CapEff' /proc/self/status >> /opt/app/js-ids", { user: 'root' })
  .runCmd('id -u >> /opt/app/js-ids')
  .setStartCmd('sleep infinity', 'true')
const info = await Template.build(template, name, { onBuildLogs: (l) => logs.push(l.message) })
assert.equal(info.name, name)
assert.ok(logs.join('\n').includes('the build step ran as'), logs.join('\n'))

let sbx = await Sandbox.create(name)
try {
  assert.equal(await sbx.files.read('/opt/app/greeting.txt'), 'greeting from the build context\n')
  assert.equal(await sbx.files.read('/opt/data/nested/deep.txt'), 'deep\n')
  const r = await sbx.commands.run("cat /etc/built-by; stat -c %a /opt/data/nested/deep.txt; python -c 'print(6*7)'; cat /opt/app/js-ids")
  assert.equal(r.stdout, 'hello from ENV in /opt/app\n640\n42\n0 /root\nCapEff:\t0000000000000000\n1000\n')
} finally {
  await sbx.kill()
}

assert.equal(await Template.exists(name), true)
assert.equal(await Template.exists(`${name}-never-built`), false)
const tagged = await Template.assignTags(`${name}:latest`, ['v1', 'stable'])
assert.deepEqual([...tagged.tags].sort(), ['stable', 'v1'])
let tags = await Template.getTags(name)
assert.deepEqual(tags.map((t) => t.tag).sort(), ['latest', 'stable', 'v1'])
sbx = await Sandbox.create(`${name}:v1`)
try {
  assert.equal((await sbx.commands.run('cat /opt/app/greeting.txt')).stdout, 'greeting from the build context\n')
} finally {
  await sbx.kill()
}
await Template.removeTags(name, 'stable')
tags = await Template.getTags(name)
assert.deepEqual(tags.map((t) => t.tag).sort(), ['latest', 'v1'])

const failLogs = []
const failing = Template().fromBaseImage().runCmd('true').runCmd('echo the-failing-step-said-this && exit 3')
await assert.rejects(
  Template.build(failing, `${name}-fails`, { onBuildLogs: (l) => failLogs.push(l.message) }),
  (e) => e instanceof BuildError && e.message.includes('step 2'),
)
assert.ok(failLogs.join('\n').includes('the-failing-step-said-this'), failLogs.join('\n'))
assert.equal(await Template.exists(`${name}-fails`), false)
console.log('OK')
