/**
 * The profiles page (GET /profiles): a flame graph of a run, or a
 * differential flame graph of a candidate run against a baseline, drawn as
 * SVG by a plain script from the API's nested-set rows. Search (a regular
 * expression; matches in magenta and their share of samples), zoom (click a
 * frame; click a frame below it or "Reset zoom" to go back), the frame under
 * the pointer described in a line above the graph, and for a diff the frames
 * whose share changed most. No build step and no external assets. The
 * colours are the SVG export's (flame-svg.ts), embedded from its source.
 *
 * Every frame drawn is a <g class="frame"> with data-label, data-level,
 * data-value, data-self and data-x (and data-self-delta, data-total-delta in
 * a diff; data-match when the search matches it), so tests and tools can
 * read what was drawn from the DOM. URL: /profiles?run=R[,R2] or
 * /profiles?baseline=A&candidate=B.
 */
import { diffColor, frameColor } from '../core/profiles/flame-svg.js'

export const profilesPageHtml = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Benchstream profiles</title>
<style>
 body{font:14px system-ui,sans-serif;margin:1.5rem;color:#222}
 h1{font-size:1.2rem;margin:0 0 .6rem} select,input,button{font:inherit}
 form,#bar{display:flex;gap:1rem;align-items:center;margin:.4rem 0;flex-wrap:wrap}
 #info{font:12px ui-monospace,monospace;min-height:1.3em;margin:.4rem 0;
  white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
 #status{color:#a00;margin:.4rem 0} #matched{font-weight:600}
 svg{background:#f8f8f8;border:1px solid #ddd;display:block} g.frame{cursor:pointer} g.frame text{pointer-events:none}
 g.frame.ancestor rect{opacity:.55}
 table{border-collapse:collapse;margin-top:1rem;font-size:13px}
 td,th{padding:.15rem .6rem;border-bottom:1px solid #eee;text-align:right}
 td:first-child,th:first-child{text-align:left;max-width:60rem;
  overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
 .up{color:#b00} .down{color:#00b}
</style></head><body>
<h1>Benchstream profiles</h1>
<form id="pick">
 <label>Run <select id="run"></select></label>
 <label><input type="checkbox" id="compare"> against baseline</label>
 <label>Baseline <select id="baseline"></select></label>
 <button type="submit">Show</button>
</form>
<div id="bar">
 <input id="search" size="32" placeholder="search frames (regular expression)">
 <button type="button" id="reset">Reset zoom</button>
 <label id="colourBy" hidden>colour by <select id="colour">
  <option value="self">self share change (Gregg)</option>
  <option value="total">total share change</option>
 </select></label>
 <span id="matched"></span>
</div>
<div id="title"></div>
<div id="info">&nbsp;</div>
<div id="status"></div>
<svg id="flame" width="1200" height="40"></svg>
<table id="changes"></table>
<script>
'use strict';
${frameColor.toString()}
${diffColor.toString()}
var FRAME_H = 16, PAD = 10, MATCH = 'rgb(230,0,230)';
var $ = function (id) { return document.getElementById(id); };
var state = { graph: null, diff: false, zoom: 0, term: null };
function esc(s) {
  return s.replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; });
}
async function get(url) {
  var r = await fetch(url);
  var text = await r.text();
  if (!r.ok) { var m = text; try { m = JSON.parse(text).message; } catch (e) {} throw new Error(m); }
  return JSON.parse(text);
}
function pct(v, t) { return t > 0 ? (100 * v / t).toFixed(2) + '%' : '-'; }
function signed(n) { return (n > 0 ? '+' : '') + n.toFixed(2); }
function describe(r) {
  var g = state.graph;
  var s = r.label + ' (' + r.value.toLocaleString('en-US') + ' samples, ' + pct(r.value, g.total) +
    '; self ' + r.self.toLocaleString('en-US') + ')';
  if (state.diff) {
    s += ' self ' + signed(r.selfDelta) + ' pp, total ' + signed(r.totalDelta) + ' pp; baseline ' +
      r.baselineValue.toLocaleString('en-US') + ' samples';
  }
  return s;
}
function fill(r) {
  if (state.term && state.term.test(r.label)) return MATCH;
  if (!state.diff) return frameColor(r.label);
  var bySelf = $('colour').value === 'self';
  return diffColor(bySelf ? r.selfDelta : r.totalDelta, bySelf ? state.graph.maxSelfDelta : state.graph.maxTotalDelta);
}
function draw() {
  var g = state.graph, svg = $('flame');
  if (!g) return;
  var rows = g.rows, z = state.zoom, zr = rows[z];
  var W = Math.max(400, Math.min(2400, document.body.clientWidth - 10));
  var maxLevel = 0;
  for (var i = 0; i < rows.length; i++) if (rows[i].level > maxLevel) maxLevel = rows[i].level;
  var H = (maxLevel + 1) * FRAME_H + 2 * PAD;
  svg.setAttribute('width', W); svg.setAttribute('height', H);
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  // Ancestors of the zoomed frame (full width), the frame itself and its subtree (contiguous in pre-order).
  var ancestors = [], lvl = zr.level;
  for (var j = z - 1; j >= 0 && lvl > 0; j--) if (rows[j].level < lvl) { ancestors.push(j); lvl = rows[j].level; }
  var scale = zr.value > 0 ? (W - 2 * PAD) / zr.value : 0;
  var out = [];
  function frame(i, x, w, cls) {
    var r = rows[i], y = H - PAD - (r.level + 1) * FRAME_H;
    var chars = Math.floor(w / 7);
    var text = chars < 3 ? '' : r.label.length <= chars ? r.label : r.label.slice(0, chars - 2) + '..';
    var matched = state.term && state.term.test(r.label);
    out.push('<g class="frame' + cls + '" data-i="' + i + '" data-label="' + esc(r.label) + '" data-level="' + r.level +
      '" data-value="' + r.value + '" data-self="' + r.self + '" data-x="' + r.x + '"' +
      (state.diff ? ' data-self-delta="' + r.selfDelta + '" data-total-delta="' + r.totalDelta + '"' : '') +
      (matched ? ' data-match="1"' : '') +
      '><title>' + esc(describe(r)) + '</title><rect x="' + x.toFixed(2) + '" y="' + y + '" width="' + w.toFixed(2) +
      '" height="' + (FRAME_H - 1) + '" rx="2" fill="' + fill(r) + '"/>' +
      (text ? '<text x="' + (x + 3).toFixed(2) + '" y="' + (y + FRAME_H - 4) +
        '" font-size="12" font-family="Verdana,sans-serif">' + esc(text) + '</text>' : '') + '</g>');
  }
  for (var a = 0; a < ancestors.length; a++) frame(ancestors[a], PAD, W - 2 * PAD, ' ancestor');
  frame(z, PAD, W - 2 * PAD, '');
  for (var k = z + 1; k < rows.length && rows[k].level > zr.level; k++) {
    var w = rows[k].value * scale;
    if (w < 0.5) continue;
    frame(k, PAD + (rows[k].x - zr.x) * scale, w, '');
  }
  svg.innerHTML = out.join('');
  svg.setAttribute('data-zoom', String(z));
  svg.setAttribute('data-frames', String(out.length));
  matched();
}
// Share of samples in frames that match the search, each subtree counted once.
function matched() {
  var g = state.graph, el = $('matched');
  if (!state.term) { el.textContent = ''; el.removeAttribute('data-samples'); return; }
  var sum = 0, inside = -1;
  for (var i = 0; i < g.rows.length; i++) {
    var r = g.rows[i];
    if (inside >= 0 && r.level <= inside) inside = -1;
    if (inside < 0 && state.term.test(r.label)) { sum += r.value; inside = r.level; }
  }
  el.textContent = 'Matched: ' + pct(sum, g.total) + ' (' + sum.toLocaleString('en-US') + ' samples)';
  el.setAttribute('data-samples', String(sum));
}
function changes(d) {
  var t = $('changes');
  if (!d) { t.innerHTML = ''; return; }
  function rowsOf(kind, list) {
    return list.slice(0, 10).map(function (c) {
      return '<tr data-kind="' + kind + '"><td title="' + esc(c.frame) + '">' + esc(c.frame) + '</td><td>' + kind +
        '</td><td>' + c.baseline.toFixed(2) + '%</td><td>' + c.candidate.toFixed(2) + '%</td><td class="' +
        (c.change > 0 ? 'up' : 'down') + '">' + signed(c.change) + ' pp</td></tr>';
    }).join('');
  }
  t.innerHTML = '<tr><th>frame whose share changed most</th><th>share</th><th>baseline</th><th>candidate</th>' +
    '<th>change</th></tr>' + rowsOf('self', d.self) + rowsOf('total', d.total);
}
async function show() {
  var run = $('run').value, base = $('baseline').value, cmp = $('compare').checked && base !== '';
  $('status').textContent = '';
  if (!run) {
    $('status').textContent = 'no run with profiles yet: attach one with benchstream profile attach';
    return;
  }
  try {
    if (cmp) {
      var q = 'baseline=' + encodeURIComponent(base) + '&candidate=' + encodeURIComponent(run);
      var both = await Promise.all([get('/api/v1/profiles/diff-flamegraph?' + q), get('/api/v1/profiles/diff?' + q)]);
      state.graph = both[0]; state.diff = true; changes(both[1]);
      $('title').textContent = 'Differential flame graph: ' + run + ' (widths, ' +
        both[0].total.toLocaleString('en-US') + ' samples) against ' + base + ' (' +
        both[0].baselineTotal.toLocaleString('en-US') + ' samples)';
      history.replaceState(null, '', '?' + q);
    } else {
      state.graph = await get('/api/v1/profiles/flamegraph?run=' + encodeURIComponent(run));
      state.diff = false; changes(null);
      $('title').textContent = 'Flame graph: ' + run + ' (' + state.graph.total.toLocaleString('en-US') + ' samples)';
      history.replaceState(null, '', '?run=' + encodeURIComponent(run));
    }
    $('colourBy').hidden = !state.diff;
    state.zoom = 0;
    draw();
    document.body.setAttribute('data-ready', '1');
  } catch (e) { $('status').textContent = String(e.message || e); }
}
async function init() {
  var p = new URLSearchParams(location.search);
  try {
    var runs = (await get('/api/v1/profiles/runs?limit=200')).runs.map(function (r) { return r.runId; });
    var want = [p.get('run'), p.get('candidate'), p.get('baseline')].filter(Boolean);
    want.forEach(function (w) { if (runs.indexOf(w) < 0) runs.push(w); });
    var opts = runs.map(function (r) { return '<option>' + esc(r) + '</option>'; }).join('');
    $('run').innerHTML = opts; $('baseline').innerHTML = opts;
    if (p.get('candidate')) {
      $('run').value = p.get('candidate'); $('baseline').value = p.get('baseline') || ''; $('compare').checked = true;
    } else if (p.get('run')) $('run').value = p.get('run');
    await show();
  } catch (e) { $('status').textContent = String(e.message || e); }
}
$('pick').addEventListener('submit', function (e) { e.preventDefault(); show(); });
$('flame').addEventListener('click', function (e) {
  var g = e.target.closest && e.target.closest('g.frame');
  if (!g) return;
  state.zoom = Number(g.getAttribute('data-i'));
  draw();
});
$('flame').addEventListener('mouseover', function (e) {
  var g = e.target.closest && e.target.closest('g.frame');
  if (g) $('info').textContent = describe(state.graph.rows[Number(g.getAttribute('data-i'))]);
});
$('reset').addEventListener('click', function () { state.zoom = 0; draw(); });
$('colour').addEventListener('change', draw);
$('search').addEventListener('input', function () {
  var v = $('search').value;
  try {
    state.term = v === '' ? null : new RegExp(v); $('search').style.background = '';
  } catch (e) {
    state.term = null; $('search').style.background = '#fdd';
  }
  draw();
});
window.addEventListener('resize', draw);
init();
</script></body></html>`
