// kafkajs, an independent JavaScript implementation of the Kafka protocol,
// against `seglog serve` (issue 27): every codec kafkajs has (gzip built
// in; snappy, lz4 and zstd as the codecs kafkajs takes from packages), an
// idempotent producer, a consumer group across a clean server restart, and
// the admin API. Each case runs under a time limit, so a call that never
// returns fails its case instead of hanging the run; what a call changed is
// read back with the seglog CLI; fsck must find the store clean afterwards.
//
// A plain script rather than node --test, so that a call left hanging by a
// failed case cannot keep the run from ending: it prints one line per case
// and "N passed, N failed", and exits 1 if any case failed.
'use strict'

const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const LZ4Codec = require('@2l/kafkajs-lz4')
const { ZstdCodec } = require('zstd-codec')
const { startServer, seglog, consume, describeTopic, committed, dump, fsckClean } = require('./seglog')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec

// zstd: kafkajs's own @kafkajs/zstd needs a native build; this codec does
// the same through zstd-codec (zstd compiled to WebAssembly, no build).
const zstd = new Promise(resolve => ZstdCodec.run(z => resolve(new z.Simple())))
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  async compress (encoder) { return Buffer.from((await zstd).compress(encoder.buffer)) },
  async decompress (buffer) { return Buffer.from((await zstd).decompress(buffer)) }
})

// An admin call's time limit: above what kafkajs's default request
// timeout and retries allow (a call the server answers takes well under
// a second; kfake answers setOffsets in 5 s). A case's limit also covers
// the seglog CLI reading back beside the running server, which takes
// seconds on a loaded machine.
const CALL_TIMEOUT = 60000
const CASE_TIMEOUT = 300000
const ADMIN_CASE_TIMEOUT = 180000

// call awaits a kafkajs admin call, failing it if it has not answered in
// CALL_TIMEOUT: a call that never returns fails instead of hanging.
function call (name, promise) {
  return withTimeout(promise, CALL_TIMEOUT, `admin.${name}`)
}

function client (addr, clientId = 'seglog-interop-kafkajs') {
  // KAFKAJS_LOG=DEBUG (or INFO, WARN, ERROR) shows kafkajs's log.
  return new Kafka({ clientId, brokers: [addr], logLevel: logLevel[process.env.KAFKAJS_LOG || 'NOTHING'] })
}

function tempDir () {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'seglog-kafkajs-'))
}

// records makes n messages that differ from each other and from every
// other case's (tag), with bytes no text encoding keeps (0x00, 0xff), a
// null key, an empty value and binary headers among them, and values a
// codec can shrink.
function records (tag, n) {
  const out = []
  for (let i = 0; i < n; i++) {
    const r = {
      key: Buffer.from(`${tag}-key-${i % 7}`),
      value: Buffer.concat([Buffer.from(`${tag} value ${i} `), Buffer.from([0, 0xff]), Buffer.alloc(i % 50, i)])
    }
    if (i % 10 === 3) r.key = null
    if (i % 10 === 4) r.value = Buffer.alloc(0)
    if (i % 10 === 5) r.headers = { h: Buffer.from([0, i & 0xff, 0xff]), trace: Buffer.from(tag) }
    out.push(r)
  }
  return out
}

// sameRecord asserts that got (a kafkajs message or a seglog consume line)
// holds want's key, value and headers byte for byte.
function sameRecord (got, want, what) {
  const norm = b => b === null || b === undefined ? null : Buffer.from(b).toString('hex')
  assert.equal(norm(got.key), norm(want.key), `${what}: key`)
  assert.equal(norm(got.value) ?? '', norm(want.value), `${what}: value`)
  const gh = Object.fromEntries(Object.entries(got.headers || {}).map(([k, v]) => [k, norm(v)]))
  const wh = Object.fromEntries(Object.entries(want.headers || {}).map(([k, v]) => [k, norm(v)]))
  assert.deepEqual(gh, wh, `${what}: headers`)
}

// produce sends msgs to topic's partition in sends of 50 (a batch each).
async function produce (producer, topic, partition, msgs, compression = CompressionTypes.None) {
  for (let i = 0; i < msgs.length; i += 50) {
    const res = await producer.send({ topic, compression, acks: -1, messages: msgs.slice(i, i + 50).map(m => ({ ...m, partition })) })
    assert.equal(res[0].baseOffset, String(i), `${topic}: send ${i / 50} stored at offset ${res[0].baseOffset}`)
  }
}

// readGroup runs a member of group on topic until it has taken limit
// records, checking each partition's records come in order from start[p]
// (when given: where the group's commit says) with none lost or repeated;
// it then commits what it took and leaves. It returns { partition: [msg] }.
async function readGroup (kafka, group, topic, limit, start = {}) {
  const consumer = kafka.consumer({ groupId: group })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const got = {}
  const next = { ...start }
  let taken = 0
  let failure = null
  await new Promise((resolve, reject) => {
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (taken === limit) return
        const offset = Number(message.offset)
        if (next[partition] !== undefined && offset !== next[partition] && !failure) {
          failure = new Error(`partition ${partition}: record at offset ${offset}, want ${next[partition]} (a record lost or repeated)`)
        }
        next[partition] = offset + 1
        ;(got[partition] ||= []).push(message)
        if (++taken === limit) {
          const offsets = Object.entries(next).filter(([p]) => got[p]).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o) }))
          consumer.commitOffsets(offsets).then(resolve, reject)
        }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  if (failure) throw failure
  return got
}

async function testCodecs () {
  const dir = tempDir()
  const srv = await startServer(dir)
  try {
    const kafka = client(srv.addr)
    const producer = kafka.producer({ allowAutoTopicCreation: true })
    await producer.connect()
    const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD }
    for (const [name, type] of Object.entries(codecs)) {
      const topic = `kafkajs-${name}`
      const want = records(topic, 200)
      await produce(producer, topic, 0, want, type)
      const got = consume(dir, topic, 0)
      assert.equal(got.length, want.length, `${topic}: seglog consume reads ${got.length} records`)
      got.forEach((r, i) => { assert.equal(r.offset, i); sameRecord(r, want[i], `${topic} record ${i} read by seglog consume`) })
      const batches = dump(dir, topic, 0)
      assert.equal(batches.length, 4, `${topic}: ${batches.length} batches stored, want one per send`)
      for (const b of batches) assert.equal(b.codec, name, `${topic}: a batch stored with codec ${b.codec}`)
      // kafkajs's consumer decompresses every codec too.
      const read = await readGroup(kafka, `${topic}-reader`, topic, want.length)
      read[0].forEach((m, i) => sameRecord(m, want[i], `${topic} record ${i} read by a kafkajs consumer`))
    }
    await producer.disconnect()
  } finally {
    await srv.stop()
  }
  fsckClean(dir)
}

async function testIdempotent () {
  const dir = tempDir()
  const topic = 'kafkajs-idempotent'
  const want = records(topic, 300)
  for (const round of [0, 1]) {
    const srv = await startServer(dir)
    try {
      const producer = client(srv.addr).producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true })
      await producer.connect()
      const half = want.slice(round * 150, round * 150 + 150)
      for (let i = 0; i < half.length; i += 50) {
        await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: half.slice(i, i + 50).map(m => ({ ...m, partition: 0 })) })
      }
      await producer.disconnect()
      const got = consume(dir, topic, 0)
      assert.equal(got.length, (round + 1) * 150)
      got.forEach((r, i) => { assert.equal(r.offset, i); sameRecord(r, want[i], `record ${i}`) })
    } finally {
      await srv.stop()
    }
  }
  // One producer id per producer, its batches numbered from sequence 0
  // with no gap.
  const next = new Map()
  for (const b of dump(dir, topic, 0)) {
    assert.ok(b.producerId >= 0, `a batch without a producer id: ${JSON.stringify(b)}`)
    assert.equal(b.baseSequence, next.get(b.producerId) || 0, `producer ${b.producerId}: batch sequence`)
    next.set(b.producerId, (next.get(b.producerId) || 0) + b.count)
  }
  assert.equal(next.size, 2, `producer ids in the log: ${[...next.keys()]}`)
  fsckClean(dir)
}

async function testGroupAcrossRestart () {
  const dir = tempDir()
  const topic = 'kafkajs-group'
  const group = 'kafkajs-g'
  const n = 300
  const first = 130
  let srv = await startServer(dir)
  const want = {}
  let got
  try {
    const kafka = client(srv.addr)
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true })
    await admin.disconnect()
    const producer = kafka.producer()
    await producer.connect()
    for (const p of [0, 1, 2]) {
      want[p] = records(`${topic}-${p}`, n / 3)
      await produce(producer, topic, p, want[p])
    }
    await producer.disconnect()
    got = await readGroup(kafka, group, topic, first)
  } finally {
    await srv.stop()
  }
  const commits = committed(dir, group, topic)
  for (const p of [0, 1, 2]) assert.equal(commits[p] ?? 0, (got[p] || []).length, `partition ${p}: committed offset after a clean stop`)

  srv = await startServer(dir)
  try {
    const start = { 0: commits[0] ?? 0, 1: commits[1] ?? 0, 2: commits[2] ?? 0 }
    const rest = await readGroup(client(srv.addr), group, topic, n - first, start)
    for (const p of [0, 1, 2]) {
      const all = [...(got[p] || []), ...(rest[p] || [])]
      assert.equal(all.length, want[p].length, `partition ${p}: records read before and after the restart`)
      all.forEach((m, i) => sameRecord(m, want[p][i], `partition ${p} record ${i}`))
    }
  } finally {
    await srv.stop()
  }
  const final = committed(dir, group, topic)
  for (const p of [0, 1, 2]) assert.equal(final[p], want[p].length, `partition ${p}: final commit`)
  fsckClean(dir)
}

// The admin calls of issue 27, one case each, on a server shared by them:
// a call the server cannot serve fails its case and the others still run.
const adminCases = []
function adminCase (name, fn) { adminCases.push({ name: `admin.${name}`, fn }) }

const A = { topic: 'kafkajs-admin', group: 'kafkajs-admin-g', empty: 'kafkajs-admin-empty' }

adminCase('listTopics', async ({ admin, dir }) => {
  const topics = await call('listTopics', admin.listTopics())
  const cli = seglog('topics', 'list', dir).split('\n').filter(l => l)
  for (const t of [A.topic, A.empty]) {
    assert.ok(topics.includes(t), `listTopics ${topics} has no ${t}`)
    assert.ok(cli.includes(t), `seglog topics list has no ${t}`)
  }
})

adminCase('fetchTopicMetadata', async ({ admin, dir }) => {
  const { topics } = await call('fetchTopicMetadata', admin.fetchTopicMetadata({ topics: [A.topic] }))
  assert.equal(topics.length, 1)
  assert.equal(topics[0].name, A.topic)
  assert.equal(topics[0].partitions.length, describeTopic(dir, A.topic).partitions, 'partitions: fetchTopicMetadata vs seglog topics describe')
})

// The config sources of DescribeConfigs v1+, by number.
const SOURCES = ['UNKNOWN', 'DYNAMIC_TOPIC_CONFIG', 'DYNAMIC_BROKER_CONFIG', 'DYNAMIC_DEFAULT_BROKER_CONFIG', 'STATIC_BROKER_CONFIG', 'DEFAULT_CONFIG', 'DYNAMIC_BROKER_LOGGER_CONFIG']

adminCase('describeConfigs', async ({ admin, dir }) => {
  const res = await call('describeConfigs', admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: A.topic }], includeSynonyms: false }))
  assert.equal(res.resources.length, 1)
  assert.equal(res.resources[0].errorCode, 0)
  const got = Object.fromEntries(res.resources[0].configEntries.map(e => [e.configName, e]))
  // Every config seglog topics describe prints, with the same value and
  // source; none was set on the topic.
  const cli = describeTopic(dir, A.topic)
  assert.ok(Object.keys(cli.configs).length > 0, 'seglog topics describe lists no config')
  for (const [k, v] of Object.entries(cli.configs)) {
    assert.ok(got[k], `describeConfigs has no ${k} (seglog topics describe: ${v})`)
    assert.equal(got[k].configValue, v, `describeConfigs ${k} vs seglog topics describe`)
    if (cli.sources[k]) assert.equal(SOURCES[got[k].configSource], cli.sources[k], `describeConfigs: source of ${k} vs seglog topics describe`)
    assert.notEqual(SOURCES[got[k].configSource], 'DYNAMIC_TOPIC_CONFIG', `describeConfigs: ${k} is set on the topic; nothing set it`)
  }
  assert.equal(got['retention.ms'].configValue, '604800000')
})

adminCase('alterConfigs', async ({ admin, dir }) => {
  await call('alterConfigs', admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: A.topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] }))
  const cli = describeTopic(dir, A.topic)
  assert.equal(cli.configs['retention.ms'], '3600000', 'seglog topics describe after alterConfigs retention.ms=3600000')
  if (cli.sources['retention.ms']) assert.equal(cli.sources['retention.ms'], 'DYNAMIC_TOPIC_CONFIG', 'seglog topics describe: source of retention.ms after alterConfigs')
})

adminCase('createPartitions', async ({ admin, dir }) => {
  await call('createPartitions', admin.createPartitions({ topicPartitions: [{ topic: A.topic, count: 4 }] }))
  assert.equal(describeTopic(dir, A.topic).partitions, 4, 'seglog topics describe after createPartitions to 4')
})

adminCase('fetchTopicOffsetsByTimestamp', async ({ admin, dir, base }) => {
  // Record i of partition 0 has timestamp base+i*1000: asking for
  // base+4500 finds offset 5, as seglog consume's timestamps say.
  const res = await call('fetchTopicOffsetsByTimestamp', admin.fetchTopicOffsetsByTimestamp(A.topic, base + 4500))
  const p0 = res.find(r => r.partition === 0)
  const cli = consume(dir, A.topic, 0).find(r => r.timestamp >= base + 4500)
  assert.equal(p0.offset, String(cli.offset), 'fetchTopicOffsetsByTimestamp vs seglog consume')
  assert.equal(p0.offset, '5')
})

adminCase('setOffsets', async ({ admin, dir }) => {
  await call('setOffsets', admin.setOffsets({ groupId: A.group, topic: A.topic, partitions: [{ partition: 0, offset: '3' }] }))
  assert.equal(committed(dir, A.group, A.topic)[0], 3, 'seglog groups describe after setOffsets to 3')
})

// kafkajs's resetOffsets({ earliest: true }) commits -2 (EARLIEST) for
// every partition, and Kafka stores it as it is; a member of the group
// then starts at the log start. The commit is read back with seglog groups
// describe (-2, or the start offset had the server resolved it) and the
// start through a kafkajs member of the group.
async function checkEarliest (kafka, dir, group, topic) {
  const c = committed(dir, group, topic)
  const d = describeTopic(dir, topic)
  for (let p = 0; p < d.partitions; p++) {
    assert.ok(c[p] === -2 || c[p] === d.start[p], `seglog groups describe: partition ${p} committed at ${c[p]} after resetOffsets earliest (log start ${d.start[p]})`)
  }
  const want = consume(dir, topic, 0)
  if (want.length > 0) {
    const got = await readGroup(kafka, group, topic, want.length, { 0: d.start[0] })
    got[0].forEach((m, i) => sameRecord(m, want[i], `record ${want[i].offset} read after resetOffsets earliest`))
  }
}

adminCase('resetOffsets', async ({ admin, kafka, dir }) => {
  await call('resetOffsets', admin.resetOffsets({ groupId: A.group, topic: A.topic, earliest: true }))
  await checkEarliest(kafka, dir, A.group, A.topic)
})

adminCase('deleteTopicRecords', async ({ admin, dir, want }) => {
  // kafkajs finds the partitions' leaders in the admin's cached metadata,
  // which holds only the topics an earlier call asked about: ask first.
  await call('fetchTopicMetadata', admin.fetchTopicMetadata({ topics: [A.topic] }))
  await call('deleteTopicRecords', admin.deleteTopicRecords({ topic: A.topic, partitions: [{ partition: 0, offset: '5' }] }))
  assert.equal(describeTopic(dir, A.topic).start[0], 5, 'seglog topics describe: start after deleteTopicRecords before 5')
  const got = consume(dir, A.topic, 0)
  assert.equal(got[0].offset, 5)
  got.forEach((r, i) => sameRecord(r, want[i + 5], `record ${i + 5} after deleteTopicRecords`))
})

// Last: when these hang (as they do while a commit past the log end is
// refused), their temporary consumers, which share the admin's cluster
// connection, keep retrying and would disturb the cases after them.
adminCase('setOffsets past the end of an empty partition', async ({ admin, dir }) => {
  // Kafka stores a commit past the log end (issue 27: the call hung).
  await call('setOffsets', admin.setOffsets({ groupId: `${A.group}-empty`, topic: A.empty, partitions: [{ partition: 0, offset: '1' }] }))
  assert.equal(committed(dir, `${A.group}-empty`, A.empty)[0], 1, 'seglog groups describe after setOffsets to 1')
})

adminCase('resetOffsets on an empty topic', async ({ admin, kafka, dir }) => {
  await call('resetOffsets', admin.resetOffsets({ groupId: `${A.group}-empty`, topic: A.empty, earliest: true }))
  await checkEarliest(kafka, dir, `${A.group}-empty`, A.empty)
})

async function testAdmin () {
  const dir = tempDir()
  const srv = await startServer(dir)
  const kafka = client(srv.addr)
  const admin = kafka.admin()
  const base = Date.now() - 3600000
  const want = records(A.topic, 10).map((r, i) => ({ ...r, timestamp: String(base + i * 1000) }))
  const results = []
  try {
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: A.topic, numPartitions: 2 }, { topic: A.empty, numPartitions: 3 }], waitForLeaders: true })
    const producer = kafka.producer()
    await producer.connect()
    await produce(producer, A.topic, 0, want)
    await producer.disconnect()
    for (const c of adminCases) results.push(await runCase(c.name, () => c.fn({ admin, kafka, dir, base, want }), ADMIN_CASE_TIMEOUT))
    await withTimeout(admin.disconnect(), 30000, 'admin.disconnect')
  } finally {
    await srv.stop().catch(e => { srv.kill(); throw e })
  }
  fsckClean(dir)
  return results
}

function withTimeout (promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000}s`)), ms) })
  ]).finally(() => clearTimeout(timer))
}

async function runCase (name, fn, timeout = CASE_TIMEOUT) {
  const t0 = Date.now()
  try {
    await withTimeout(fn(), timeout, name)
    console.log(`ok    ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`)
    return true
  } catch (e) {
    console.log(`FAIL  ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s): ${e.message.split('\n').slice(0, 6).join('\n      ')}`)
    return false
  }
}

async function main () {
  // ONLY=word runs the cases whose name holds it (while working on one).
  const only = process.env.ONLY || ''
  const run = (name, fn, timeout) => name.includes(only) ? runCase(name, fn, timeout) : null
  const results = [
    await run('produce with every codec', testCodecs),
    await run('idempotent producer', testIdempotent),
    await run('consumer group across a server restart', testGroupAcrossRestart)
  ]
  let adminResults = []
  results.push(await run('admin (server, setup, fsck)', async () => { adminResults = await testAdmin() }, (adminCases.length + 2) * ADMIN_CASE_TIMEOUT))
  results.push(...adminResults)
  const ran = results.filter(r => r !== null)
  const passed = ran.filter(r => r).length
  console.log(`${passed} passed, ${ran.length - passed} failed`)
  process.exit(ran.length > 0 && passed === ran.length ? 0 : 1)
}

main()
