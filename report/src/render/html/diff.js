/* profcc diff page: draws the comparison of BASE and NEW from the embedded diff (its JSON output)
 * and the two sides' allocation stacks and access sites (report/src/render/html.rs), with
 * common.js's helpers. Hand-written for profcc; no library, no network. */
  var D = JSON.parse(document.getElementById('profcc-diff').textContent);
  var SIDE_BASE = JSON.parse(document.getElementById('profcc-base').textContent);
  var SIDE_NEW = JSON.parse(document.getElementById('profcc-new').textContent);

  /* A metric's value in its unit; exact counts with thousands separators. */
  function value(v, unit) {
    if (!isNum(v)) return '-';
    if (unit === 's') return ns(v * 1e9);
    if (unit === '%') return v.toFixed(2) + '%';
    if (unit === 'GB/s') return v.toFixed(2) + ' GB/s';
    var s = v === Math.round(v) ? int(v) : Math.abs(v) >= 100 ? int(v) : v.toFixed(2);
    return unit ? s + ' ' + unit : s;
  }
  function signed(v, unit) { return isNum(v) ? (v > 0 ? '+' : '') + value(v, unit) : '-'; }
  function relative(r) { return isNum(r) ? (r > 0 ? '+' : '') + (100 * r).toFixed(1) + '%' : '-'; }
  /* The text diff's words (better, worse, same, new, gone, changed), coloured: worse red,
   * better green. */
  function verdict(v) { return h('span', { cls: 'verdict v-' + v, text: v }); }
  function badge(b) { return h('span', { cls: 'badge badge-' + b, text: b.toUpperCase() }); }
  function isHead(m) { return m.scope === 'total' || m.scope.indexOf('region:') === 0; }
  var F = D.findings;

  /* The change columns of a metric table: base, new, delta, %, verdict. */
  function changeColumns() {
    return [
      num('base', function (m) { return m.base; }, { fmt: function (v, m) { return value(v, m.unit); } }),
      num('new', function (m) { return m.new; }, { fmt: function (v, m) { return value(v, m.unit); } }),
      num('delta', function (m) { return m.change; }, { fmt: function (v, m) { return signed(v, m.unit); } }),
      num('%', function (m) { return m.relative; }, { fmt: relative }),
      txt('verdict', function (m) { return m.verdict; }, { node: verdict })
    ];
  }
  function side(s) { return s.exe + ' (' + s.profiles.join(', ') + ')'; }

  /* ---- Summary: the sides, the findings' counts, the headline numbers ---- */
  tab('summary', 'Summary', true, function (el) {
    var dl = h('dl', { cls: 'run' });
    add(dl, [h('dt', { text: 'base' }), h('dd', { text: side(D.base) }), h('dt', { text: 'new' }), h('dd', { text: side(D.new) })]);
    if (D.normalize) add(dl, [h('dt', { text: 'normalised' }), h('dd', { text: 'NEW scaled by ' + D.normalize.by + ': x' + D.normalize.factor.toPrecision(4) + ' (base ' + value(D.normalize.base, '') + ', new ' + value(D.normalize.new, '') + ')' })]);
    add(el, dl);
    var worse = D.metrics.filter(function (m) { return m.verdict === 'worse'; }).length;
    var better = D.metrics.filter(function (m) { return m.verdict === 'better'; }).length;
    add(el, tiles([
      ['new findings', int(F.new.length)], ['gone findings', int(F.gone.length)], ['changed findings', int(F.changed.length)],
      ['unchanged findings', int(F.unchanged)], ['figures worse', int(worse)], ['figures better', int(better)]
    ]));
    add(el, h('h2', { text: 'Totals and regions' }));
    add(el, note('Every headline figure of each analysis; worse in red, better in green, same: within 1%. No verdict: profcc check gates.'));
    add(el, table({
      name: 'headline', rows: D.metrics.filter(isHead), sort: -1,
      columns: [txt('metric', function (m) { return m.metric; }), txt('scope', function (m) { return m.scope; }, { cls: 'mono' })].concat(changeColumns())
    }));
  });

  /* ---- Findings: new, gone and changed, with their impact on each side ---- */
  tab('findings', 'Findings', F.new.length + F.gone.length + F.changed.length > 0, function (el) {
    var rows = [];
    F.new.forEach(function (f) { rows.push({ badge: 'new', f: f, base: null, new: f.seconds, base_bytes: null, new_bytes: f.bytes }); });
    F.gone.forEach(function (f) { rows.push({ badge: 'gone', f: f, base: f.seconds, new: null, base_bytes: f.bytes, new_bytes: null }); });
    F.changed.forEach(function (f) { rows.push({ badge: 'changed', f: f, base: f.base_seconds, new: f.new_seconds, base_bytes: f.base_bytes, new_bytes: f.new_bytes }); });
    rows.forEach(function (r) {
      r.delta = (r.new || 0) - (r.base || 0);
      r.relative = r.base ? r.delta / r.base : null;
    });
    add(el, note(int(F.unchanged) + ' findings are on both sides with an impact that moved by less than 25%: not listed. Times are each side\'s estimated saving of the fix.'));
    var anyBytes = rows.some(function (r) { return r.base_bytes || r.new_bytes; });
    var secs = function (v) { return isNum(v) ? ns(v * 1e9) : '-'; };
    add(el, table({
      name: 'findings', rows: rows, sort: -1,
      columns: [
        txt('', function (r) { return r.badge; }, { node: badge }),
        txt('kind', function (r) { return r.f.kind.replace(/_/g, ' '); }, { node: function (v) { return h('span', { cls: 'kind', text: v }); } }),
        txt('finding', function (r) { return r.f.title; }, { cls: 'wide' }),
        txt('at', function (r) { return r.f.places[0] || ''; }, { cls: 'mono', title: function (v, r) { return r.f.places.join('\n'); } }),
        num('base', function (r) { return r.base; }, { fmt: secs }),
        num('new', function (r) { return r.new; }, { fmt: secs }),
        num('delta', function (r) { return r.delta; }, { fmt: function (v) { return isNum(v) ? (v > 0 ? '+' : '') + ns(v * 1e9) : '-'; } }),
        num('%', function (r) { return r.relative; }, { fmt: relative }),
        num('base bytes', function (r) { return r.base_bytes; }, { hidden: !anyBytes }),
        num('new bytes', function (r) { return r.new_bytes; }, { hidden: !anyBytes })
      ],
      detail: function (r) { return h('div', { cls: 'mono', text: 'key ' + r.f.key + '\nplaces: ' + r.f.places.join(', ') }); }
    }));
  });

  /* ---- Objects and access lines: every entry on either side ---- */
  tab('changes', 'Objects and lines', D.metrics.some(function (m) { return !isHead(m); }), function (el) {
    var rows = D.metrics.filter(function (m) { return !isHead(m); });
    var moved = rows.filter(function (m) { return m.verdict !== 'same'; }).length;
    add(el, note(int(moved) + ' of ' + int(rows.length) + ' figures of objects and access lines changed by 1% or more (of the figure\'s BASE total); the largest change first. Filter by a file, an object or a verdict.'));
    rows.forEach(function (m) { m._order = m.verdict === 'same' ? -1 : isNum(m.relative) ? Math.abs(m.relative) : 1e300; });
    add(el, table({
      name: 'changes', rows: rows, sort: 0,
      columns: [num('rank', function (m) { return m._order; }, { hidden: true }), txt('metric', function (m) { return m.metric; }),
        txt('scope', function (m) { return m.scope; }, { cls: 'mono' })].concat(changeColumns())
    }));
  });

  /* ---- Differential flame graph: NEW's frames, coloured by the change against BASE ---- */
  /* Each cost's tree of NEW, each node with `base`, BASE's cost at the same stack. A cost NEW
   * has none of is BASE's tree, drawn at BASE's size, every node `gone`. */
  function diffTrees() {
    var b = flameTrees(SIDE_BASE), n = flameTrees(SIDE_NEW), out = {};
    function mark(node, old) {
      node.base = old ? old.value : 0;
      Object.keys(node.kids).forEach(function (k) { mark(node.kids[k], old && old.kids[k]); });
    }
    function gone(node) {
      node.base = node.value;
      node.gone = true;
      Object.keys(node.kids).forEach(function (k) { gone(node.kids[k]); });
    }
    Object.keys(n).concat(Object.keys(b)).forEach(function (c) {
      if (out[c]) return;
      if (n[c] && n[c].value > 0) { out[c] = n[c]; mark(out[c], b[c]); }
      else if (b[c] && b[c].value > 0) { out[c] = b[c]; gone(out[c]); }
      else out[c] = { name: 'all', value: 0, base: 0, kids: {} };
    });
    return out;
  }
  /* The cost whose total changed most (relative to the larger side): shown first. */
  function mostChanged(trees) {
    var best = null, most = -1;
    Object.keys(trees).forEach(function (c) {
      var t = trees[c], v = t.gone ? 0 : t.value, m = Math.max(v, t.base), r = m > 0 ? Math.abs(v - t.base) / m : 0;
      if (r > most + 1e-9) { most = r; best = c; }
    });
    return best;
  }
  function diffPaint(n) {
    if (n.gone) return { cls: 'diff-less diff-gone', colour: 'hsl(215,85%,62%)' };
    var d = n.value - n.base, m = Math.max(n.value, n.base), r = m > 0 ? Math.abs(d) / m : 0;
    if (r < 0.01) return { cls: 'diff-same', colour: 'hsl(40,8%,84%)' };
    var a = Math.min(1, 0.25 + r);
    return d > 0 ? { cls: 'diff-more', colour: 'hsl(0,' + (45 + 40 * a).toFixed(0) + '%,' + (88 - 28 * a).toFixed(0) + '%)' }
      : { cls: 'diff-less', colour: 'hsl(215,' + (45 + 40 * a).toFixed(0) + '%,' + (88 - 28 * a).toFixed(0) + '%)' };
  }
  tab('flame', 'Flame graph', !!(SIDE_NEW.alloc_sites.sites.length || SIDE_NEW.access_sites.lines.length || SIDE_BASE.alloc_sites.sites.length || SIDE_BASE.access_sites.lines.length), function (el) {
    var trees = diffTrees();
    flameGraph(el, trees, {
      note: 'Frames sized by NEW\'s cost, coloured by the change against BASE: red more, blue less, grey within 1% (the stronger, the larger the change); a frame only BASE has is not drawn, except for a cost NEW has none of: BASE\'s frames at BASE\'s size, all blue. First shown: the cost that changed most. Allocation stacks: the outermost frame at the top, the allocation call at the bottom. Access costs: function, then line. Click a frame to zoom in.',
      paint: diffPaint,
      initial: mostChanged(trees),
      about: function (n, label) {
        if (n.gone) return 'new none, base ' + label(n.base) + ' (gone; drawn at BASE\'s size)';
        var d = n.value - n.base;
        return 'new ' + label(n.value) + ', base ' + label(n.base) + ' (' + (d > 0 ? '+' : d < 0 ? '-' : '') + label(Math.abs(d)) + (n.base > 0 ? ', ' + relative(d / n.base) : '') + ')';
      },
      empty: function (cost) { return 'Neither side has any ' + cost + '.'; }
    });
  });

  startPage();
