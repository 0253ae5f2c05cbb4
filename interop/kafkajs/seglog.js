// Helpers that run seglog itself: `seglog serve` as a child process, and
// the seglog CLI, which reads back what a kafkajs call changed without
// sharing any code with kafkajs.
'use strict'

const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

let bin = process.env.SEGLOG_BIN

// The servers still running: the script's process.exit, which a hung
// call's case needs to end the run, must not leave them behind.
const running = new Set()
process.on('exit', () => { for (const child of running) child.kill('SIGKILL') })

// seglogBin returns the seglog binary: SEGLOG_BIN, or one built from the
// repository (two directories up) with go build.
function seglogBin () {
  if (!bin) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seglog-kafkajs-bin-'))
    bin = path.join(dir, 'seglog')
    execFileSync('go', ['build', '-o', bin, './cmd/seglog'], { cwd: path.join(__dirname, '..', '..'), stdio: 'inherit' })
  }
  return bin
}

// startServer runs `seglog serve dir --listen 127.0.0.1:0` and resolves to
// { addr, stop } once the server prints the address it listens on. stop()
// sends SIGTERM (a clean shutdown) and resolves when it exits 0.
function startServer (dir) {
  return new Promise((resolve, reject) => {
    const child = spawn(seglogBin(), ['serve', dir, '--listen', '127.0.0.1:0', '--group-initial-rebalance-delay', '0'], { stdio: ['ignore', 'pipe', 'pipe'] })
    running.add(child)
    let out = ''
    let exited = null
    const exitWaiters = []
    child.on('exit', (code, signal) => {
      exited = { code, signal }
      running.delete(child)
      exitWaiters.forEach(f => f())
      reject(new Error(`seglog serve ${dir} exited (${code ?? signal}) before listening:\n${out}`))
    })
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`seglog serve did not listen within 30s:\n${out}`)) }, 30000)
    const onData = data => {
      out += data
      const m = /^seglog serve: listening on ([^,\s]+)/m.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve({
          addr: m[1],
          output: () => out,
          stop: () => new Promise((resolve, reject) => {
            const done = () => {
              if (exited.code === 0) resolve()
              else reject(new Error(`seglog serve exited with ${exited.code ?? exited.signal}:\n${out}`))
            }
            if (exited) return done()
            exitWaiters.push(done)
            child.kill('SIGTERM')
          }),
          kill: () => { if (!exited) child.kill('SIGKILL') }
        })
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
  })
}

// seglog runs a seglog command and returns its standard output; a non-zero
// exit throws with its output.
function seglog (...args) {
  try {
    return execFileSync(seglogBin(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 })
  } catch (e) {
    throw new Error(`seglog ${args.join(' ')}: ${e.message}\n${e.stdout || ''}${e.stderr || ''}`)
  }
}

// consume reads a partition with `seglog consume --json` (read-only, beside
// the running server): [{ offset, timestamp, key, value, headers }], with
// key and value Buffers (null for null) and headers { key: Buffer }.
function consume (dir, topic, partition) {
  const out = seglog('consume', '--json', path.join(dir, `${topic}-${partition}`))
  return out.split('\n').filter(l => l).map(l => {
    const j = JSON.parse(l)
    const b64 = s => s === null ? null : Buffer.from(s, 'base64')
    const headers = {}
    for (const h of j.headers) headers[h.key] = b64(h.value)
    return { offset: j.offset, timestamp: j.timestamp, key: b64(j.key), value: b64(j.value), headers }
  })
}

// describeTopic reads `seglog topics describe DIR TOPIC`: the partition
// count, the configs (with their sources when it prints a CONFIG VALUE
// SOURCE table; a seglog without the table lists every config in its
// Configs: field) and each partition's start offset.
function describeTopic (dir, topic) {
  const out = seglog('topics', 'describe', dir, topic)
  const h = /^Topic: (\S+)\tPartitionCount: (\d+)\tConfigs: (.*)$/m.exec(out)
  if (!h || h[1] !== topic) throw new Error(`seglog topics describe ${dir} ${topic}:\n${out}`)
  const configs = {}
  const sources = {}
  const rows = [...out.matchAll(/^([a-z][a-z0-9.]*)\s+(\S+)\s+([A-Z_]+)$/mg)]
  if (rows.length > 0) {
    for (const m of rows) { configs[m[1]] = m[2]; sources[m[1]] = m[3] }
  } else if (h[3] !== '') {
    for (const kv of h[3].split(',')) {
      const i = kv.indexOf('=')
      configs[kv.slice(0, i)] = kv.slice(i + 1)
    }
  }
  const start = {}
  for (const m of out.matchAll(/^(\d+)\s+(\d+)\s+(\d+)\s/mg)) start[Number(m[1])] = Number(m[2])
  return { partitions: Number(h[2]), configs, sources, start }
}

// committed reads a group's committed offsets on topic with `seglog groups
// describe`: { partition: offset }.
function committed (dir, group, topic) {
  const out = seglog('groups', 'describe', dir, group)
  const got = {}
  for (const m of out.matchAll(/^\S+\s+(\S+)\s+(\d+)\s+(-?\d+)\s/mg)) {
    if (m[1] === topic) got[Number(m[2])] = Number(m[3])
  }
  return got
}

// dump lists a partition's batches with `seglog dump`.
function dump (dir, topic, partition) {
  const out = seglog('dump', path.join(dir, `${topic}-${partition}`))
  const batches = []
  for (const m of out.matchAll(/count: (\d+) baseSequence: (-?\d+) .*producerId: (-?\d+) .*compresscodec: (\S+)/g)) {
    batches.push({ count: Number(m[1]), baseSequence: Number(m[2]), producerId: Number(m[3]), codec: m[4] })
  }
  return batches
}

// fsckClean throws unless `seglog fsck dir` finds every partition clean.
function fsckClean (dir) {
  const out = seglog('fsck', dir)
  if (!out.includes(' 0 problems (0 errors, 0 warnings)')) throw new Error(`seglog fsck ${dir} is not clean:\n${out}`)
}

module.exports = { startServer, seglog, consume, describeTopic, committed, dump, fsckClean }
