// seglog ui: polls /api/state once a second and redraws what changed.
// Plain DOM code with no dependencies; every string from the store is set
// as text, never parsed as HTML.
'use strict';

const POLL_MS = 1000;
const GLYPHS = ['▼', '▲', '◆', '■', '●', '★'];

const ui = {
  lastText: '',
  state: null,
  paused: false,
  timer: 0,
  renders: 0,
  selected: null,       // {topic, partition, base} of the segment shown
  lastProduced: null,   // {partition, offset} of the playground's last record
  glyph: {},            // group name -> marker glyph
  rewindTimeSet: false,
};

function $(id) { return document.getElementById(id); }

// el builds an element: attrs are properties (className, textContent…)
// or, prefixed with "data-"/"aria-"/"role", attributes.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    // Styles go through the CSSOM: the page's Content-Security-Policy
    // refuses style attributes.
    if (k === 'style') e.style.cssText = v;
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'role') e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function fmtBytes(n) {
  if (n < 1024) return n + ' B';
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n, i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
  return v.toFixed(1) + ' ' + units[i];
}

function fmtTime(ms) {
  if (ms === undefined || ms === null || ms < 0) return '–';
  return new Date(ms).toISOString().replace('T', ' ').replace('.000Z', 'Z');
}

function fmtClock(ms) { return new Date(ms).toISOString().slice(11, 19) + 'Z'; }

function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }

// ---- polling ----

async function poll() {
  clearTimeout(ui.timer);
  try {
    const res = await fetch('/api/state', { cache: 'no-store' });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    const text = await res.text();
    if (text !== ui.lastText) {
      ui.lastText = text;
      ui.state = JSON.parse(text);
      render(ui.state);
    }
    setStatus('live, updated ' + new Date().toLocaleTimeString(), '');
  } catch (err) {
    setStatus('not updating (' + err.message + '), retrying', 'stale');
  }
  if (!ui.paused) ui.timer = setTimeout(poll, POLL_MS);
}

function setStatus(text, cls) {
  const s = $('status');
  s.textContent = ui.paused ? 'paused' : text;
  s.className = 'status ' + (ui.paused ? 'paused' : cls);
}

$('pause').addEventListener('click', () => {
  ui.paused = !ui.paused;
  $('pause').setAttribute('aria-pressed', String(ui.paused));
  $('pause').textContent = ui.paused ? 'Resume updates' : 'Pause updates';
  if (ui.paused) { clearTimeout(ui.timer); setStatus('', 'paused'); } else poll();
});

// ---- rendering ----

function render(st) {
  ui.renders++;
  document.body.dataset.renders = ui.renders;
  document.body.dataset.now = st.now;
  $('mode').textContent = st.playground ? 'playground (temporary store)' : 'store (read-only)';
  $('dir').textContent = st.dir;
  // A cluster node's DIR: whose view of the replication the partitions show.
  $('cluster').hidden = !st.cluster;
  $('cluster').textContent = st.cluster || '';
  $('playground').hidden = !st.playground;
  $('clock-box').hidden = !st.playground;
  if (st.playground) {
    $('clock').textContent = fmtTime(st.now);
    $('clock').dataset.now = st.now;
    if (!ui.rewindTimeSet) {
      $('rewind-time').value = new Date(st.now - 30 * 60000).toISOString().slice(0, 19);
      ui.rewindTimeSet = true;
    }
  }
  renderTotals(st);
  st.groups.forEach((g, i) => { ui.glyph[g.name] = GLYPHS[i % GLYPHS.length]; });
  renderGroups(st);
  renderTopics(st);
}

function renderTotals(st) {
  const t = st.totals;
  $('total-bytes').textContent = fmtBytes(t.bytes);
  $('total-bytes').dataset.value = t.bytes;
  $('total-topics').textContent = st.topics.length;
  $('total-partitions').textContent = t.partitions;
  $('total-segments').textContent = t.segments;
  $('total-segments').dataset.value = t.segments;
  $('max-lag').dataset.value = t.maxLag;
  $('max-lag').textContent = t.maxLagGroup
    ? t.maxLag + ' (' + t.maxLagGroup + ' on ' + t.maxLagTopic + '-' + t.maxLagPartition + ')'
    : (st.groups.length ? '0' : 'no groups');
}

function renderGroups(st) {
  const body = $('groups');
  body.replaceChildren(...st.groups.map(g => el('tr', { 'data-group': g.name, 'data-lag': g.lag },
    el('td', { 'aria-hidden': 'true' }, ui.glyph[g.name]),
    el('td', {}, el('code', { textContent: g.name })),
    el('td', { className: 'num' }, g.partitions),
    el('td', { className: 'num' }, g.lag))));
  $('no-groups').hidden = st.groups.length > 0;
}

function renderTopics(st) {
  // Keep keyboard focus on the same segment across redraws.
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.key : undefined;
  let maxBytes = 0;
  for (const t of st.topics) for (const p of t.partitions) maxBytes = Math.max(maxBytes, p.bytes);
  const out = [];
  if (st.topics.length === 0) out.push(el('p', { className: 'hint' }, 'The store has no topics.'));
  for (const t of st.topics) out.push(renderTopic(t, maxBytes));
  $('topics').replaceChildren(...out);
  if (focused) {
    const again = document.querySelector('[data-key="' + CSS.escape(focused) + '"]');
    if (again) again.focus();
  }
}

function renderTopic(t, maxBytes) {
  const c = t.config;
  const retention = c['retention.ms'] === '-1' ? 'forever' : c['retention.ms'] + ' ms';
  return el('section', { className: 'topic', 'data-topic': t.name, 'aria-label': 'topic ' + t.name },
    el('h3', {}, el('code', { textContent: t.name }), ' · ', plural(t.partitions.length, 'partition'), ' · ', fmtBytes(t.bytes)),
    el('p', { className: 'config' },
      'cleanup.policy=' + c['cleanup.policy'] + ' · retention.ms=' + c['retention.ms'] + ' (' + retention + ') · retention.bytes=' +
      c['retention.bytes'] + ' · segment.bytes=' + c['segment.bytes']),
    ...t.partitions.map(p => renderPartition(t.name, p, maxBytes)));
}

// layout places each segment on [0, 100] percent of the partition's bar:
// as wide as its bytes, but at least a sliver so empty segments show.
function layout(p) {
  const total = p.segments.reduce((s, g) => s + g.size, 0);
  const minFrac = p.segments.length > 1 ? Math.min(0.03, 0.5 / p.segments.length) : 1;
  let fr = p.segments.map(g => Math.max(total > 0 ? g.size / total : 0, minFrac));
  const sum = fr.reduce((a, b) => a + b, 0) || 1;
  fr = fr.map(f => f / sum);
  let left = 0;
  return p.segments.map((g, i) => { const r = { seg: g, left: left * 100, width: fr[i] * 100 }; left += fr[i]; return r; });
}

// xOf is the position, in percent of the bar, of an offset.
function xOf(lay, offset) {
  if (lay.length === 0) return 0;
  if (offset <= lay[0].seg.base) return 0;
  for (const l of lay) {
    const g = l.seg;
    if (offset < g.next) return l.left + l.width * (offset - g.base) / Math.max(g.next - g.base, 1);
  }
  return 100;
}

function segLabel(g) {
  let s = g.next > g.base ? g.base + '–' + (g.next - 1) : g.base + ' (empty)';
  if (g.active) s = '● ' + s;
  if (g.delete) s = '✕ ' + s;
  return s;
}

function segDescription(topic, n, g) {
  const parts = ['segment of ' + topic + '-' + n,
    g.next > g.base ? 'offsets ' + g.base + ' to ' + (g.next - 1) : 'empty, base offset ' + g.base,
    fmtBytes(g.size),
    'time ' + fmtTime(g.firstTimestamp) + ' to ' + fmtTime(g.largestTimestamp),
    g.active ? 'active' : 'sealed'];
  if (g.delete) parts.push('the next cleaner pass deletes it (' + g.delete + ')');
  return parts.join(', ');
}

function renderPartition(topic, p, maxBytes) {
  const lay = layout(p);
  const widthPct = maxBytes > 0 ? Math.max(25, 100 * p.bytes / maxBytes) : 25;
  const track = el('div', { className: 'track', role: 'group', 'aria-label': topic + '-' + p.partition + ' segments, oldest first' });
  for (const l of lay) {
    const g = l.seg;
    const key = topic + '/' + p.partition + '/' + g.base;
    const sel = ui.selected && ui.selected.key === key;
    const b = el('button', {
      type: 'button',
      className: 'seg' + (g.active ? ' active' : '') + (g.delete ? ' doomed' : '') + (sel ? ' selected' : ''),
      textContent: segLabel(g),
      title: segDescription(topic, p.partition, g),
      'aria-label': segDescription(topic, p.partition, g),
      'aria-pressed': sel ? 'true' : 'false',
      style: 'left:' + l.left.toFixed(3) + '%;width:' + l.width.toFixed(3) + '%',
      'data-key': key, 'data-base': g.base, 'data-next': g.next, 'data-size': g.size,
      'data-active': g.active, 'data-delete': g.delete,
    });
    b.addEventListener('click', () => openSegment(topic, p.partition, g.base, key));
    track.append(b);
  }
  const r = p.retention;
  if (r.segments > 0) {
    track.append(el('div', { className: 'boundary', style: 'left:' + xOf(lay, r.newStart).toFixed(3) + '%', 'aria-hidden': 'true' }));
  }
  const offsets = el('div', { className: 'offsets', 'aria-hidden': 'true' },
    el('span', { className: 'first', style: 'left:0' }, p.start),
    el('span', { className: 'last', style: 'left:100%' }, p.end));
  const markers = el('div', { className: 'markers' });
  for (const m of p.groups) {
    const behind = m.skipped > 0;
    const x = behind ? 0 : xOf(lay, m.committed);
    const text = m.group + ' ' + m.committed + (behind ? ' (below start: next read skips ' + m.skipped + ')' : '') + ' · lag ' + m.lag +
      (m.lag < 0 ? ' (committed past the log end)' : '');
    markers.append(el('div', { className: 'marker-row' },
      el('span', {
        className: 'marker' + (x > 60 ? ' flip' : '') + (behind ? ' behind' : ''),
        style: 'left:' + x.toFixed(3) + '%',
        'data-group': m.group, 'data-committed': m.committed, 'data-lag': m.lag, 'data-skipped': m.skipped,
      }, el('span', { className: 'glyph', 'aria-hidden': 'true' }, ui.glyph[m.group] || '▼'), ' ', text)));
  }
  const stats = el('div', { className: 'pstats' },
    el('p', {}, plural(p.segments.length, 'segment'), ' · ', fmtBytes(p.bytes)),
    el('p', { 'data-role': 'retention' }, r.segments > 0
      ? '✕ next pass deletes ' + plural(r.segments, 'segment') + ' (' + fmtBytes(r.bytes) + ', ' + plural(r.records, 'record') + '); start becomes ' + r.newStart
      : (r.pinned >= 0 ? 'retention pinned by a future timestamp in segment ' + r.pinned : 'next pass deletes nothing')));
  if (p.replication) {
    const rep = p.replication;
    const ids = a => (a && a.length ? a.join(',') : '-');
    stats.append(el('p', {
      className: 'replication', 'data-role': 'replication',
      'data-leader': rep.leader, 'data-replicas': ids(rep.replicas), 'data-isr': ids(rep.isr),
    }, (rep.leader >= 0 ? 'leader ' + rep.leader + ' (epoch ' + rep.epoch + ')' : 'no leader known') +
      ' · replicas ' + ids(rep.replicas) + ' · ISR ' + ids(rep.isr)));
  }
  if (ui.lastProduced && ui.lastProduced.topic === topic && ui.lastProduced.partition === p.partition) {
    stats.append(el('p', { className: 'produced', 'data-offset': ui.lastProduced.offset }, '★ last produced: offset ' + ui.lastProduced.offset));
  }
  return el('div', {
    className: 'partition', 'data-topic': topic, 'data-partition': p.partition,
    'data-start': p.start, 'data-end': p.end, 'data-bytes': p.bytes, 'data-segments': p.segments.length,
  },
  el('div', { className: 'plabel' }, 'P' + p.partition, el('span', { className: 'mono' }, 'start ' + p.start + ' · end ' + p.end)),
  el('div', { className: 'track-wrap', style: 'width:' + widthPct.toFixed(2) + '%' }, track, offsets, markers),
  stats);
}

// ---- segment panel ----

async function openSegment(topic, partition, base, key) {
  ui.selected = { topic, partition, base, key };
  document.querySelectorAll('.seg.selected').forEach(b => { b.classList.remove('selected'); b.setAttribute('aria-pressed', 'false'); });
  const btn = document.querySelector('[data-key="' + CSS.escape(key) + '"]');
  if (btn) { btn.classList.add('selected'); btn.setAttribute('aria-pressed', 'true'); }
  const panel = $('segment-panel');
  panel.hidden = false;
  $('segment-h').textContent = 'Segment ' + base + ' of ' + topic + '-' + partition;
  $('segment-body').replaceChildren(el('p', {}, 'Loading…'));
  await loadBatches(topic, partition, base, 0, true);
  panel.focus();
}

async function loadBatches(topic, partition, base, from, fresh) {
  const q = new URLSearchParams({ topic, partition, base, from, limit: 50 });
  const body = $('segment-body');
  let page;
  try {
    const res = await fetch('/api/segment?' + q);
    page = await res.json();
    if (!res.ok) throw new Error(page.error || 'HTTP ' + res.status);
  } catch (err) {
    body.replaceChildren(el('p', { className: 'error' }, err.message));
    return;
  }
  if (fresh) {
    body.replaceChildren(el('p', {}, el('code', { textContent: page.file }), ' · ', fmtBytes(page.size)));
    const g = findSegment(topic, partition, base);
    if (g) body.append(el('p', { className: 'seg-summary' }, segDescription(topic, partition, g) + '.'));
    if (page.batches.length === 0) body.append(el('p', { className: 'hint' }, 'No batches: the segment is empty.'));
  } else {
    const more = body.querySelector('.more');
    if (more) more.remove();
  }
  for (const b of page.batches) body.append(renderBatch(b));
  if (page.next >= 0) {
    const more = el('button', { type: 'button', className: 'more', textContent: 'More batches' });
    more.addEventListener('click', () => loadBatches(topic, partition, base, page.next, false));
    body.append(more);
  }
}

// findSegment looks a segment up in the last state.
function findSegment(topic, partition, base) {
  const t = ui.state && ui.state.topics.find(x => x.name === topic);
  const p = t && t.partitions.find(x => x.partition === partition);
  return p && p.segments.find(x => x.base === base);
}

function renderBatch(b) {
  if (b.damaged) {
    return el('div', { className: 'batch' }, el('p', { className: 'error' },
      'position ' + b.position + ': damaged region of ' + b.size + ' bytes: ' + b.damaged));
  }
  const summary = 'offsets ' + b.baseOffset + '–' + b.lastOffset + ' · ' + plural(b.count, 'record') +
    ' · position ' + b.position + ' · ' + b.size + ' bytes · ' + fmtTime(b.baseTimestamp);
  const fields = 'baseOffset: ' + b.baseOffset + ' lastOffset: ' + b.lastOffset + ' count: ' + b.count +
    ' baseSequence: ' + b.baseSequence + ' producerId: ' + b.producerId + ' producerEpoch: ' + b.producerEpoch +
    ' partitionLeaderEpoch: ' + b.leaderEpoch + ' isTransactional: ' + b.transactional + ' isControl: ' + b.control +
    ' position: ' + b.position + ' baseTimestamp: ' + b.baseTimestamp + ' ' + b.timestampType + ': ' + b.maxTimestamp +
    ' size: ' + b.size + ' magic: ' + b.magic + ' compresscodec: ' + b.codec + ' crc: ' + b.crc + ' isvalid: true';
  const table = el('table', { className: 'records' },
    el('thead', {}, el('tr', {}, ...['Offset', 'Timestamp', 'Key', 'Value', 'Headers'].map(h => el('th', { scope: 'col' }, h)))));
  const tbody = el('tbody');
  for (const r of b.records) renderRecordRow(tbody, r);
  table.append(tbody);
  return el('details', { className: 'batch', open: b.records.length <= 5, 'data-base-offset': b.baseOffset },
    el('summary', {}, summary),
    el('p', { className: 'fields mono' }, fields),
    table,
    b.recordsOmitted > 0 ? el('p', { className: 'hint' }, b.recordsOmitted + ' more records not shown') : null,
    b.recordsError ? el('p', { className: 'error' }, b.recordsError) : null);
}

function showBytes(v, hex) {
  if (v.null) return el('span', { className: 'null' }, 'null');
  const s = (hex || !v.isText) ? v.hex : v.text;
  return el('span', { className: (hex || !v.isText) ? 'mono' : '' }, s + (v.truncated ? '… (' + v.len + ' bytes)' : ''));
}

function renderRecordRow(tbody, r) {
  const hex = $('show-hex').checked;
  const btn = el('button', { type: 'button', textContent: String(r.offset), 'aria-expanded': 'false', title: 'Show record ' + r.offset });
  const row = el('tr', { 'data-offset': r.offset },
    el('td', {}, btn),
    el('td', {}, fmtTime(r.timestamp)),
    el('td', {}, showBytes(r.key, hex)),
    el('td', {}, showBytes(r.value, hex)),
    el('td', {}, r.headers.length ? r.headers.map(h => h.key + '=' + (h.value.null ? 'null' : h.value.isText ? h.value.text : h.value.hex)).join(', ') : '–'));
  const detail = el('tr', { className: 'rec-row', hidden: true }, el('td', { colSpan: 5 }, recordDetail(r)));
  btn.addEventListener('click', () => {
    detail.hidden = !detail.hidden;
    btn.setAttribute('aria-expanded', String(!detail.hidden));
  });
  tbody.append(row, detail);
}

function recordDetail(r) {
  const both = v => v.null ? el('span', { className: 'null' }, 'null')
    : el('span', {}, v.isText ? 'text: ' + v.text + '\n' : '(not UTF-8 text)\n', 'hex: ' + v.hex,
      v.truncated ? '\n(first 4 KiB of ' + v.len + ' bytes)' : '');
  const dl = el('dl', { className: 'rec-detail' },
    el('dt', {}, 'Offset'), el('dd', {}, r.offset),
    el('dt', {}, 'Timestamp'), el('dd', {}, r.timestamp + ' ms (' + fmtTime(r.timestamp) + ')'),
    el('dt', {}, 'Key (' + (r.key.null ? 'null' : r.key.len + ' bytes') + ')'), el('dd', {}, both(r.key)),
    el('dt', {}, 'Value (' + (r.value.null ? 'null' : r.value.len + ' bytes') + ')'), el('dd', {}, both(r.value)),
    el('dt', {}, 'Headers'));
  if (r.headers.length === 0) dl.append(el('dd', {}, 'none'));
  for (const h of r.headers) dl.append(el('dd', {}, h.key + ': ', both(h.value)));
  return dl;
}

$('segment-close').addEventListener('click', () => {
  const key = ui.selected && ui.selected.key;
  ui.selected = null;
  $('segment-panel').hidden = true;
  document.querySelectorAll('.seg.selected').forEach(b => { b.classList.remove('selected'); b.setAttribute('aria-pressed', 'false'); });
  const back = key && document.querySelector('[data-key="' + CSS.escape(key) + '"]');
  if (back) back.focus();
});

$('show-hex').addEventListener('change', () => {
  if (ui.selected) loadBatches(ui.selected.topic, ui.selected.partition, ui.selected.base, 0, true);
});

// ---- playground actions ----

async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const out = await res.json();
  if (!res.ok) throw new Error(out.error || 'HTTP ' + res.status);
  return out;
}

function activity(text) {
  const now = ui.state ? fmtClock(ui.state.now) + ' ' : '';
  $('activity').prepend(el('li', {}, now + text));
}

async function act(outputId, fn) {
  const out = $(outputId);
  try {
    const text = await fn(out);
    out.className = '';
    out.textContent = text;
    activity(text);
  } catch (err) {
    out.className = 'error';
    out.textContent = err.message;
  }
  await poll();
}

$('produce-form').addEventListener('submit', ev => {
  ev.preventDefault();
  act('produce-result', async out => {
    const r = await post('/api/play/produce', { key: $('produce-key').value, value: $('produce-value').value });
    ui.lastProduced = { topic: 'bookings', partition: r.partition, offset: r.offset };
    out.dataset.partition = r.partition;
    out.dataset.offset = r.offset;
    if (!r.keyed) return 'keyless record → sticky partition ' + r.partition + ', offset ' + r.offset;
    return 'key ' + r.key + ': murmur2 = ' + r.murmur2 + ', toPositive = ' + r.positive + ', ' + r.positive +
      ' mod ' + r.partitions + ' = ' + r.partition + ' → partition ' + r.partition + ', offset ' + r.offset;
  });
});

$('consume-form').addEventListener('submit', ev => {
  ev.preventDefault();
  const group = ev.submitter ? ev.submitter.value : 'billing';
  act('consume-result', async out => {
    const r = await post('/api/play/consume', { group, max: Number($('consume-max').value) || 1 });
    out.dataset.count = r.count;
    out.dataset.skipped = r.skipped;
    let s = group + ' read ' + plural(r.count, 'record') + ' and committed.';
    if (r.skipped > 0) {
      const ps = r.resets.filter(x => x.skipped > 0);
      s += ' Its commit was below the start on ' + plural(ps.length, 'partition') +
        ': reset to the earliest offset, skipping ' + plural(r.skipped, 'record') + ' that retention removed unread (' +
        ps.map(x => 'P' + x.partition + ' ' + x.committed + '→' + x.offset).join(', ') + ').';
    }
    return s;
  });
});

$('rewind-by').addEventListener('change', () => {
  const by = $('rewind-by').value;
  $('rewind-time-l').hidden = by !== 'time';
  $('rewind-offset-l').hidden = by !== 'offset';
});

$('rewind-form').addEventListener('submit', ev => {
  ev.preventDefault();
  act('rewind-result', async () => {
    const group = $('rewind-group').value, by = $('rewind-by').value;
    const body = { group, by };
    let what = by;
    if (by === 'time') {
      body.time = Date.parse($('rewind-time').value + 'Z');
      if (Number.isNaN(body.time)) throw new Error('enter a time');
      what = 'the first record at or after ' + fmtTime(body.time);
    } else if (by === 'offset') {
      body.offset = Number($('rewind-offset').value);
      what = 'offset ' + body.offset + ' (clamped to each partition)';
    }
    const r = await post('/api/play/rewind', body);
    const n = Object.keys(r).length;
    return group + ' rewound to ' + what + ' on ' + plural(n, 'partition') + '.';
  });
});

$('advance-form').addEventListener('submit', ev => {
  ev.preventDefault();
  const ms = Number(ev.submitter ? ev.submitter.value : 600000);
  act('advance-result', async out => {
    const r = await post('/api/play/advance', { ms });
    out.dataset.segments = r.segments;
    let s = 'Clock +' + (ms / 60000) + ' min, now ' + fmtTime(r.now) + '. Retention deleted ' + plural(r.segments, 'segment') +
      ' (' + fmtBytes(r.bytes) + ', ' + plural(r.records, 'record') + ').';
    for (const [g, n] of Object.entries(r.behind)) {
      if (n > 0) s += ' ' + g + ' is behind the start by ' + plural(n, 'record') + ': its next consume resets and skips them.';
    }
    return s;
  });
});

window.seglogUI = { poll, state: () => ui.state };
poll();
