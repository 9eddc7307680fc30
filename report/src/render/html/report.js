/* profcc report page: draws the tabs from the embedded report model (report/src/render/html.rs),
 * with common.js's helpers. Hand-written for profcc; no library, no network. */
  var R = JSON.parse(document.getElementById('profcc-data').textContent);
  var META = JSON.parse(document.getElementById('profcc-meta').textContent);
  var several = R.summary.inputs.length > 1;
  function input(i) { var x = R.summary.inputs[i]; return x ? '[' + i + '] ' + base(x.path) : String(i); }

  /* ---- Summary ---- */
  tab('summary', 'Summary', true, function (el) {
    var t = R.summary.totals;
    var dur = Math.max.apply(null, [0].concat(R.summary.inputs.map(function (i) { return i.duration_ns; })));
    add(el, tiles([
      ['run time', ns(dur), several ? 'longest input' : null],
      ['threads', int(t.threads)],
      ['accesses', int(t.accesses)],
      ['bytes read', bytes(t.bytes_read), int(t.bytes_read) + ' bytes'],
      ['bytes written', bytes(t.bytes_written), int(t.bytes_written) + ' bytes'],
      ['allocations', int(t.allocations)],
      ['bytes allocated', bytes(t.bytes_allocated), int(t.bytes_allocated) + ' bytes'],
      ['live peak', bytes(t.live_bytes_peak), int(t.live_bytes_peak) + ' bytes'],
      ['findings', int(R.findings.length)]
    ]));
    var runs = h('div');
    add(runs, h('h2', { text: several ? 'Runs (' + R.summary.inputs.length + ' profiles merged)' : 'Run' }));
    function optionsText(o) { return Object.keys(o || {}).map(function (k) { return k + '=' + o[k]; }).join(':'); }
    function allocatorText(a) { return a ? a.name + (a.version ? ' ' + a.version : '') + ' (' + a.object + ', ' + a.identified_by + ')' : ''; }
    if (several) {
      add(runs, table({
        name: 'inputs', rows: R.summary.inputs.map(function (i, n) { i._n = n; return i; }),
        columns: [
          num('input', function (i) { return i._n; }), txt('profile', function (i) { return i.path; }, { cls: 'mono' }),
          txt('command', function (i) { return (i.argv || []).join(' '); }, { cls: 'mono wrap' }), txt('host', function (i) { return i.host; }),
          num('pid', function (i) { return i.pid; }, { fmt: function (v) { return String(v); } }), num('threads', function (i) { return i.threads; }),
          num('time', function (i) { return i.duration_ns; }, { fmt: function (v) { return ns(v); } }), txt('written at', function (i) { return i.trigger; }),
          num('accesses', function (i) { return i.accesses; }, { heat: true }), txt('allocator', function (i) { return allocatorText(i.allocator); }, { cls: 'wrap' })
        ],
        detail: function (i) {
          return [h('div', { cls: 'mono', text: 'options: ' + optionsText(i.options) }),
            (i.exit_summary || []).length ? h('pre', { text: i.exit_summary.join('\n') }) : note('No exit summary kept.')];
        }
      }));
    } else R.summary.inputs.forEach(function (i) {
      var dl = h('dl', { cls: 'run' });
      function row(k, v) { if (v !== null && v !== undefined && v !== '') add(dl, [h('dt', { text: k }), h('dd', { text: v })]); }
      row('command', (i.argv || []).join(' '));
      row('profile', i.path);
      row('executable', i.exe);
      row('host', i.host);
      row('pid', String(i.pid));
      row('threads', int(i.threads));
      row('time', ns(i.duration_ns));
      row('written at', i.trigger);
      row('accesses', int(i.accesses));
      row('allocator', allocatorText(i.allocator));
      row('options', optionsText(i.options));
      row('exit summary', (i.exit_summary || []).join('\n'));
      add(runs, dl);
    });
    add(runs, h('dl', { cls: 'run' }, h('dt', { text: 'report by' }), h('dd', { text: META.generator + ', report format ' + R.format + ' ' + R.version })));
    add(el, h('h2', { text: 'Findings (every analysis, ranked by estimated time saved, then confidence)' }));
    /* The rows as the text lists them (render::finding_groups, in META): of several profiles
       (ranks), one row per key, the profile where it saves the most with the profiles that
       have it. */
    var found = META.finding_groups.map(function (g) {
      return Object.assign({}, R.findings[g.head], { _inputs: g.inputs, _label: g.label });
    });
    if (found.length < R.findings.length) add(el, note('A finding several profiles have is one row, as in the profile where it saves the most: ' + int(found.length) + ' rows for ' + int(R.findings.length) + ' findings.'));
    if (!R.findings.length) add(el, note('No findings.'));
    else add(el, table({
      name: 'findings', rows: found.map(function (f, i) { f._rank = i + 1; return f; }),
      columns: [
        num('#', function (f) { return f._rank; }),
        txt('analysis', function (f) { return f.analysis; }),
        txt('kind', function (f) { return f.kind.replace(/_/g, ' '); }, { node: function (v) { return h('span', { cls: 'kind', text: v }); } }),
        txt('finding', function (f) { return f.title; }, { cls: 'wide', node: function (v, f) {
          return [v, h('div', { cls: 'fix', text: 'fix: ' + f.fix })].concat(f.threshold ? [h('div', { cls: 'threshold', text: 'crossed: ' + f.threshold })] : []);
        } }),
        txt('at', function (f) { return f.places[0] ? base(f.places[0]) : ''; }, { cls: 'mono', title: function (v, f) { return f.places.join('\n'); } }),
        num('saves', function (f) { return f.impact.seconds; }, { fmt: function (v, f) { return v > 0 ? ns(v * 1e9) : f.impact.bytes > 0 ? bytes(f.impact.bytes) : '-'; }, heat: true }),
        txt('evidence', function (f) { return f.evidence.slice(0, 2).map(function (e) { return e.name.replace(/_/g, ' ') + ' ' + evidence(e); }).join('; '); }, { cls: 'wrap' }),
        txt('confidence', function (f) { return f.impact.confidence; }, { node: function (v) { return h('span', { cls: 'conf-' + v, text: v }); } }),
        txt('fix', function (f) { return f.fix; }, { hidden: true }),
        txt('threshold', function (f) { return f.threshold || ''; }, { hidden: true }),
        txt('object', function (f) { return f.objects.map(function (o) { return o.name; }).join(', '); }, {
          node: function (v, f) { return f.objects.filter(function (o) { return o.name; }).map(function (o) { return [objLink(o.name), ' ']; }); }
        })
      ].concat(several ? [
        num('input', function (f) { return f.input; }),
        txt('profiles', function (f) { return f._label; }, { cls: 'mono' })
      ] : []),
      detail: function (f) {
        return [
          h('div', { text: 'key: ' + f.key, cls: 'mono' })
        ].concat(f._inputs.length > 1 ? [h('div', { text: 'in ' + f._inputs.length + ' profiles (' + f._inputs.join(', ') + '); the figures are profile ' + f.input + '\'s, where it saves the most' })] : []).concat([
          h('div', { text: 'places: ' + f.places.join(', ') }),
          h('div', { text: 'evidence: ' + f.evidence.map(function (e) { return e.name + ' = ' + evidence(e); }).join('; ') }),
          h('div', { text: 'impact: ' + f.impact.formula + ' from ' + f.impact.inputs.map(function (e) { return e.name + ' = ' + evidence(e); }).join('; ') })
        ]);
      }
    }));
    add(el, runs);
    var n = R.notes;
    if (n.notes.length || n.warnings.length) {
      add(el, h('h2', { text: 'Notes' }));
      add(el, h('ul', null, n.warnings.concat(n.notes).map(function (x) { return h('li', { text: x }); })));
    }
  });
  function evidence(e) {
    var v = e.value;
    if (e.unit === 'bytes' || e.unit === 'B') return bytes(v);
    if (e.unit === 'ns') return ns(v);
    if (e.unit === 'fraction') return (100 * v).toFixed(1) + '%';
    if (e.unit === 's' || e.unit === 'seconds') return ns(v * 1e9);
    var s = Math.abs(v) >= 100 || v === Math.round(v) ? int(v) : v.toFixed(2);
    return s + (e.unit && e.unit !== 'count' && e.unit !== e.name ? (e.unit === 'x' || e.unit === '%' ? '' : ' ') + e.unit : '');
  }

  /* ---- Ranks: a rank x metric heat map; click a rank for its values, findings, objects, lines ---- */
  var RANK_COLS = [
    ['threads', 'threads', int], ['accesses', 'accesses', int], ['allocations', 'allocations', int],
    ['bytes_allocated', 'bytes allocated', int], ['peak_bytes', 'peak bytes', int],
    ['remote_accesses', 'remote accesses', int], ['invalidations', 'invalidations', int],
    ['seconds', 'seconds', function (v) { return fixed(v, 3); }]
  ];
  function rankName(row) { return row.rank !== null && row.rank !== undefined ? 'rank ' + row.rank : 'input ' + row.input; }
  function rankOfInput(i) {
    var row = R.ranks ? R.ranks.rows.filter(function (x) { return x.input === i; })[0] : null;
    return row ? rankName(row) : input(i);
  }
  tab('ranks', 'Ranks', !!(R.ranks && R.ranks.rows.length), function (el) {
    var K = R.ranks;
    if (!K || !K.rows.length) {
      add(el, note('One profile: the Ranks tab compares several processes (profcc report prof.*.json; PROFCC_OPTIONS=out=prof.%r.json names each MPI rank\'s profile by its rank).'));
      return;
    }
    var spread = {};
    K.metrics.forEach(function (m) { spread[m.metric] = m; });
    var acc = spread.accesses;
    if (acc && acc.max > 0) {
      var heavy = K.rows.filter(function (r) { return r.input === acc.worst_input; })[0];
      add(el, h('p', { cls: 'heaviest-line', 'data-heaviest': heavy ? rankName(heavy) : '' },
        'Heaviest by accesses: ', h('strong', { text: heavy ? rankName(heavy) : input(acc.worst_input) }),
        ' (' + int(acc.max) + ' accesses of ' + int(acc.sum) + ', imbalance ' + fixed(acc.imbalance, 2) + ' (max/mean), cv ' + fixed(acc.cv, 2) + ')'));
    }
    add(el, note('Each cell is shaded by its value relative to the metric\'s largest; the heaviest rank of each metric is outlined (and named in the last row) unless all ranks are equal. Click a rank for its values, findings, allocation sites and lines.'));
    var t = h('table', { cls: 'data heatmap', 'data-table': 'rank heat map' });
    add(t, h('thead', null, h('tr', null, h('th', { text: 'rank' }), h('th', { text: 'host' }), h('th', { cls: 'num', text: 'pid' }),
      RANK_COLS.map(function (c) { return h('th', { cls: 'num', text: c[1] }); }))));
    var body = h('tbody');
    var detail = h('div', { cls: 'rank-detail', id: 'rank-detail' });
    var selected = null;
    K.rows.forEach(function (row) {
      var link = h('a', { cls: 'obj', title: 'show this rank', text: rankName(row) });
      var tr = h('tr', { 'data-rank': rankName(row) }, h('td', null, link), h('td', { text: row.host }), h('td', { cls: 'num', text: String(row.pid) }),
        RANK_COLS.map(function (c) {
          var v = row[c[0]], s = spread[c[0]], top = s && s.max > s.min && s.worst_input === row.input;
          return h('td', {
            cls: 'num' + (top ? ' heaviest' : ''), style: heat(v, s ? s.max : 0), 'data-metric': c[0],
            title: top ? 'heaviest rank for ' + c[1] + ' (imbalance ' + fixed(s.imbalance, 2) + ')' : null, text: c[2](v)
          });
        }));
      link.addEventListener('click', function () {
        if (selected) selected.classList.remove('selected');
        selected = tr;
        tr.classList.add('selected');
        showRank(detail, row, spread);
      });
      add(body, tr);
    });
    add(t, body);
    add(t, h('tfoot', null, h('tr', { 'data-rank': 'heaviest' }, h('th', { text: 'heaviest' }), h('th'), h('th'),
      RANK_COLS.map(function (c) {
        var s = spread[c[0]];
        if (!s || !(s.max > 0)) return h('td', { cls: 'num', text: '-' });
        if (s.max === s.min) return h('td', { cls: 'num', 'data-metric': c[0], text: 'all equal' });
        var row = K.rows.filter(function (r) { return r.input === s.worst_input; })[0];
        return h('td', { cls: 'num', 'data-metric': c[0], text: (row ? rankName(row) : input(s.worst_input)) + ' (' + fixed(s.imbalance, 2) + 'x)' });
      }))));
    add(el, h('div', { cls: 'scroll' }, t));
    add(el, detail);
    if (K.spreads.length) {
      add(el, h('h2', { text: 'Most uneven findings, objects and lines (largest excess of the heaviest rank over the mean first)' }));
      add(el, spreadsTable('rank spreads', K.spreads));
    }
  });
  function spreadsTable(name, rows) {
    return table({
      name: name, rows: rows, columns: [
        txt('what', function (s) { return s.what; }),
        txt('key', function (s) { return s.key; }, { cls: 'mono wrap' }),
        txt('metric', function (s) { return s.metric; }),
        num('sum', function (s) { return s.sum; }), num('min', function (s) { return s.min; }),
        num('mean', function (s) { return s.mean; }, { fmt: function (v) { return fixed(v, 1); } }),
        num('max', function (s) { return s.max; }, { heat: true }),
        num('imbalance', function (s) { return s.imbalance; }, { fmt: function (v) { return fixed(v, 2); } }),
        txt('heaviest', function (s) { return rankOfInput(s.worst_input); }),
        txt('in ranks', function (s) { return s.present + ' of ' + s.of; })
      ]
    });
  }
  function showRank(el, row, spread) {
    el.textContent = '';
    el.setAttribute('data-rank-detail', rankName(row));
    var info = R.summary.inputs[row.input] || {};
    add(el, h('h2', { text: rankName(row) + ' (' + row.host + ', pid ' + row.pid + ', ' + input(row.input) + ')' }));
    var vt = h('table', { cls: 'data', 'data-table': 'rank values' });
    add(vt, h('tr', null, ['metric', 'value', 'share of all', 'vs mean', 'heaviest'].map(function (x, i) { return h('th', { cls: i ? 'num' : null, text: x }); })));
    RANK_COLS.forEach(function (c) {
      var v = row[c[0]], s = spread[c[0]] || {};
      add(vt, h('tr', { 'data-metric': c[0] }, h('td', { text: c[1] }), h('td', { cls: 'num', text: c[2](v) }),
        h('td', { cls: 'num', text: pct(v, s.sum) }), h('td', { cls: 'num', text: s.mean > 0 ? fixed(v / s.mean, 2) + 'x' : '-' }),
        h('td', { cls: 'num', text: !(s.max > 0) ? '-' : s.max === s.min ? 'all equal' : s.worst_input === row.input ? 'this rank' : rankOfInput(s.worst_input) })));
    });
    add(el, h('div', { cls: 'scroll' }, vt));
    if (info.argv) add(el, h('div', { cls: 'mono', text: 'command: ' + info.argv.join(' ') }));
    var mine = R.findings.filter(function (f) { return f.input === row.input; });
    add(el, h('h3', { text: 'Its findings (' + mine.length + ')' }));
    if (!mine.length) add(el, note('No finding of the report is from this rank.'));
    else add(el, table({
      name: 'findings of ' + rankName(row), rows: mine.slice(0, 20), columns: [
        txt('kind', function (f) { return f.kind.replace(/_/g, ' '); }),
        txt('finding', function (f) { return f.title; }, { cls: 'wide' }),
        txt('at', function (f) { return f.places[0] ? base(f.places[0]) : ''; }, { cls: 'mono' }),
        num('saves', function (f) { return f.impact.seconds; }, { fmt: function (v, f) { return v > 0 ? ns(v * 1e9) : f.impact.bytes > 0 ? bytes(f.impact.bytes) : '-'; } })
      ]
    }));
    function share(list, get) {
      var out = [];
      list.forEach(function (x) { var v = get(x); if (v) out.push({ x: x, v: v }); });
      return out;
    }
    var sites = share(R.alloc_sites.sites, function (s) {
      var p = (s.by_input || []).filter(function (b) { return b.input === row.input; })[0];
      return p ? p : null;
    }).sort(function (a, b) { return b.v.bytes - a.v.bytes; });
    add(el, h('h3', { text: 'Its allocation sites, by bytes' }));
    if (!sites.length) add(el, note('No listed allocation site of this rank.'));
    else add(el, table({
      name: 'allocation sites of ' + rankName(row), rows: sites.slice(0, 20), sort: 1, columns: [
        txt('object', function (o) { return siteIdentity(o.x); }, { cls: 'mono', node: function (v) { return objLink(v); } }),
        num('bytes', function (o) { return o.v.bytes; }, { heat: true }),
        num('allocations', function (o) { return o.v.count; }),
        num('all ranks\' bytes', function (o) { return o.x.bytes; })
      ]
    }));
    var lines = share(R.access_sites.lines, function (l) {
      var n = 0;
      l.sites.forEach(function (s) { (s.by_input || []).forEach(function (b) { if (b.input === row.input) n += b.count; }); });
      return n;
    }).sort(function (a, b) { return b.v - a.v; });
    add(el, h('h3', { text: 'Its lines, by accesses' }));
    if (!lines.length) add(el, note('No listed access line of this rank.'));
    else add(el, table({
      name: 'lines of ' + rankName(row), rows: lines.slice(0, 20), sort: 1, columns: [
        txt('line', function (o) { return base(o.x.file) + ':' + o.x.line; }, { cls: 'mono' }),
        num('accesses', function (o) { return o.v; }, { heat: true }),
        num('all ranks\' accesses', function (o) { return o.x.accesses; }),
        txt('function', function (o) { return o.x.function; }, { cls: 'mono' })
      ]
    }));
    var heaviest = (R.ranks.spreads || []).filter(function (s) { return s.worst_input === row.input && s.max > 0; });
    add(el, h('h3', { text: 'Where it is the heaviest rank (' + heaviest.length + ')' }));
    if (heaviest.length) add(el, spreadsTable('spreads of ' + rankName(row), heaviest.slice(0, 20)));
  }

  /* ---- Objects ---- */
  var SITES_BY_ID = {};
  R.alloc_sites.sites.forEach(function (s) { var k = siteIdentity(s); (SITES_BY_ID[k] = SITES_BY_ID[k] || []).push(s); });
  function sharingOf(name) {
    if (!R.sharing) return [];
    return R.sharing.findings.filter(function (f) {
      return f.objects.some(function (o) { return o.name === name || (o.alloc_site && base(o.alloc_site) === name) || o.function === name; });
    });
  }
  function numaOf(name) {
    var out = [];
    (R.numa ? R.numa.inputs : []).forEach(function (ni) {
      ni.objects.forEach(function (o) {
        if ((o.allocated_at && base(o.allocated_at) === name) || o.object === 'global ' + name) { o._input = ni.input; out.push(o); }
      });
    });
    return out;
  }
  tab('objects', 'Objects', R.objects.length > 0, function (el) {
    add(el, note('One row per heap allocation site, global, stack or region, joining every analysis on the object\'s identity. Click a row\'s first cell for its call stack, cache lines, accesses per thread and pages per thread (the NUMA analysis: PROFCC_INSTRUMENT=numa).'));
    if (!R.objects.length) { add(el, note('No objects: no analysis measured any.')); return; }
    var fnOf = function (o) { var s = (SITES_BY_ID[o.name] || [])[0]; var f = s && programFrame(s); return f ? f.function || '' : ''; };
    var modOf = function (o) { var s = (SITES_BY_ID[o.name] || [])[0]; var f = s && programFrame(s); return f && f.module ? base(f.module) : ''; };
    var banner = rangeBanner(el);
    RANGE_FILTERS.push(function (sel) {
      banner(sel, 'heap objects allocating or freeing in it; their allocations, bytes and live peak are the range\'s, the other columns the whole run\'s (only the heap is recorded over time)');
      TABLES.objects.setRows(sel ? R.objects.filter(function (o) { return o.kind === 'heap' && sel.heap[o.name]; }).map(function (o) {
        var x = sel.heap[o.name], c = {};
        for (var k in o) c[k] = o[k];
        c.allocations = x.allocations; c.bytes = x.bytes; c.live_bytes_peak = x.peak;
        return c;
      }) : R.objects);
    });
    add(el, table({
      name: 'objects', rows: R.objects, sort: 2,
      search: function (o) { return fnOf(o) + ' ' + modOf(o) + ' ' + o.findings.join(' '); },
      columns: [
        txt('kind', function (o) { return o.kind; }),
        txt('object', function (o) { return o.name; }, { cls: 'mono' }),
        num('bytes', function (o) { return o.bytes; }, { heat: true }),
        num('allocations', function (o) { return o.allocations; }),
        num('live peak', function (o) { return o.live_bytes_peak; }, { heat: true }),
        num('lifetime', function (o) { return lifeMean(o.lifetime); }, { fmt: lifeText }),
        txt('function', fnOf, { cls: 'mono' }),
        txt('module', modOf),
        txt('sharing', function (o) { return o.sharing.join(', '); }),
        num('invalidations', function (o) { return o.invalidations; }, { heat: true }),
        num('local', function (o) { return o.numa_local; }),
        num('remote', function (o) { return o.numa_remote; }, { heat: true }),
        num('remote %', function (o) { var a = (o.numa_local || 0) + (o.numa_remote || 0); return o.numa_remote === null || o.numa_remote === undefined ? null : a ? 100 * o.numa_remote / a : 0; }, { fmt: function (v) { return isNum(v) ? v.toFixed(1) : '-'; }, heat: true }),
        num('first touch thread', function (o) { return o.first_touch_thread; }),
        num('allocator time', function (o) { return o.allocator_ns; }, { fmt: function (v) { return isNum(v) ? ns(v) : '-'; }, heat: true }),
        num('region bytes', function (o) { return o.region_bytes; }, { heat: true }),
        num('findings', function (o) { return o.findings.length; })
      ],
      detail: objectDetail
    }));
  });
  function objectDetail(o) {
    var out = [];
    (SITES_BY_ID[o.name] || []).forEach(function (s) {
      out.push(h('h3', { text: 'Call stack (' + s.kind + ', ' + int(s.count) + ' calls, ' + int(s.bytes) + ' bytes), innermost first' }));
      out.push(h('ol', { cls: 'mono' }, s.stack.map(function (f, i) {
        return h('li', { text: frameText(f) + (i < (s.wrapper_frames || 0) ? '  (allocation wrapper)' : '') });
      })));
    });
    sharingOf(o.name).forEach(function (f) { out.push(lineCard(f)); });
    numaOf(o.name).forEach(function (n) {
      var of = n.object + (several ? ', input ' + n._input : ''), all = n.local + n.remote;
      var by = (n.by_thread || []).slice();
      if (n.unsplit) by.push({ thread: null, accesses: n.unsplit });
      if (by.length) {
        out.push(h('h3', { text: 'Accesses per thread (NUMA: ' + of + ')' }));
        out.push(table({
          name: 'accesses of ' + of, rows: by, sort: 1,
          columns: [txt('thread', function (r) { return r.thread === null ? 'not split by thread' : String(r.thread); }),
            num('accesses', function (r) { return r.accesses; }, { heat: true }),
            num('share', function (r) { return all ? r.accesses / all : null; }, { fmt: function (v) { return isNum(v) ? (100 * v).toFixed(1) + '%' : '-'; } })]
        }));
      }
      out.push(h('h3', { text: 'Pages per thread (NUMA: ' + of + ')' }));
      out.push(table({
        name: 'pages of ' + n.object, rows: n.threads,
        columns: [num('thread', function (r) { return r.thread; }), num('from byte', function (r) { return r.start; }), num('to byte', function (r) { return r.end; }), num('pages', function (r) { return r.pages; }, { heat: true })]
      }));
    });
    if (o.findings.length) out.push(h('div', { cls: 'mono', text: 'findings: ' + o.findings.join(', ') }));
    if (!out.length) out.push(note('Nothing more is known about this object.'));
    return out;
  }

  /* ---- Cache lines ---- */
  function objectText(o) {
    if (!o) return '?';
    if (o.kind === 'global') return 'global ' + (o.name || hex(o.start));
    if (o.kind === 'stack') return 'stack of thread ' + o.stack_thread + (o.function ? ' (' + o.function + ')' : '');
    return (o.alloc_kind || 'heap') + ' block of ' + int(o.size) + ' bytes allocated at ' + (o.alloc_site || '?') + (o.function ? ' in ' + o.function : '');
  }
  function lineMap(f, line) {
    var cells = [], words = f.words.filter(function (w) { return w.line === line; });
    for (var b = 0; b < 64; b++) {
      var w = null;
      for (var i = 0; i < words.length; i++) if (b >= words[i].line_offset && b < words[i].line_offset + Math.max(1, words[i].size)) { w = words[i]; break; }
      var c = h('div');
      if (w) {
        var tip = 'byte ' + b + (w.field ? ' ' + w.field : '') + ': ' + int(w.reads) + ' reads by [' + ids(w.readers) + '], ' + int(w.writes) + ' writes by [' + ids(w.writers) + ']';
        c.title = tip;
        if (w.writers.length) {
          c.setAttribute('style', 'background:' + threadColour(w.writers[0]) + (w.writers.length > 1 ? ';box-shadow: inset 0 -5px 0 #111' : ''));
          if (b === w.line_offset) c.textContent = String(w.writers[0]);
        } else if (w.readers.length) { c.className = 'r'; if (b === w.line_offset) c.textContent = 'r'; }
      } else c.title = 'byte ' + b + ': not accessed';
      cells.push(c);
    }
    return h('div', { cls: 'linemap', title: 'line ' + hex(line) }, cells);
  }
  function lineCard(f) {
    var card = h('div', { cls: 'card', id: 'line-' + f.rank + '-' + f.input });
    var obj = f.objects[0];
    add(card, h('h3', null, '#' + f.rank + ' ', h('span', { cls: 'kind', text: f.kind_text + (f.allocator_induced ? ' (allocator-induced)' : '') }), ' ', objectText(obj),
      obj && objectName(obj) ? [' ', objLink(objectName(obj), '(object)')] : null));
    add(card, h('div', { text: int(f.invalidations) + ' invalidations, ' + int(f.reads) + ' reads, ' + int(f.writes) + ' writes by threads ' + ids(f.threads) + (f.more_threads ? ' and others' : '') + (several ? '; input ' + input(f.input) : '') }));
    var writers = {};
    f.words.forEach(function (w) { w.writers.forEach(function (t) { writers[t] = true; }); });
    f.lines.forEach(function (l) {
      add(card, h('div', { cls: 'mono', text: 'line ' + hex(l) + ': 64 bytes, each coloured by its first writer thread (number: that thread, at the word\'s first byte; r: read only; dark base: several writers)' }));
      add(card, lineMap(f, l));
    });
    add(card, h('div', { cls: 'legend' }, Object.keys(writers).map(function (t) {
      return h('span', null, h('span', { cls: 'sw', style: 'background:' + threadColour(+t) }), 'thread ' + t + ' writes');
    })));
    add(card, table({
      name: 'words of line #' + f.rank + (several ? ' input ' + f.input : ''), rows: f.words, limit: 64,
      columns: [
        txt('line', function (w) { return hex(w.line); }, { cls: 'mono' }),
        num('offset', function (w) { return w.line_offset; }),
        num('size', function (w) { return w.size; }),
        txt('field', function (w) { return w.field || (w.object_offset !== null && w.object_offset !== undefined ? '+' + w.object_offset : ''); }, { cls: 'mono' }),
        num('reads', function (w) { return w.reads; }, { heat: true }),
        num('writes', function (w) { return w.writes; }, { heat: true }),
        txt('readers', function (w) { return ids(w.readers); }),
        txt('writers', function (w) { return ids(w.writers); })
      ]
    }));
    if (f.places.length) add(card, table({
      name: 'places of line #' + f.rank + (several ? ' input ' + f.input : ''), rows: f.places, limit: 20,
      columns: [
        txt('source line', function (p) { return p.line ? base(p.file) + ':' + p.line : p.file || '(no debug location)'; }, { cls: 'mono', title: function (v, p) { return p.file; } }),
        txt('function', function (p) { return p.function; }, { cls: 'mono' }),
        num('reads', function (p) { return p.reads; }, { heat: true }),
        num('writes', function (p) { return p.writes; }, { heat: true })
      ]
    }));
    if (!f.latent) add(card, h('div', { text: 'prediction: ' + (f.predicted_speedup ? f.predicted_speedup.toFixed(2) + 'x, saves up to ' + ns(f.predicted_saving_ns) : 'none') + '; basis: ' + f.prediction.basis + ' (prediction confidence ' + f.prediction.confidence + ', finding confidence ' + f.confidence + ')' }));
    else add(card, h('div', { text: 'latent: ' + (f.latent.prefetch_pair ? 'adjacent-line prefetch pair' : '') + (f.latent.shift ? ' a ' + f.latent.shift + '-byte shift would share a line' : '') }));
    add(card, h('div', { text: 'fix: ' + f.fix }));
    return card;
  }
  tab('lines', 'Cache lines', !!(R.sharing && R.sharing.findings.length), function (el) {
    var s = R.sharing;
    if (!s) { add(el, note('No sharing records: build with PROFCC_INSTRUMENT=sharing (the default).')); return; }
    add(el, tiles([
      ['lines tracked', int(s.lines_tracked)],
      ['findings', int(s.findings_total)],
      ['invalidations', int(sum(s.findings, function (f) { return f.invalidations; }))],
      ['dropped lines', int(s.dropped_lines)]
    ]));
    add(el, h('h2', { text: 'Lines by contention' }));
    add(el, table({
      name: 'cache lines', rows: s.findings,
      columns: [
        num('#', function (f) { return f.rank; }),
        txt('kind', function (f) { return f.kind_text + (f.allocator_induced ? ' (allocator-induced)' : ''); }, { node: function (v) { return h('span', { cls: 'kind', text: v }); } }),
        txt('object', function (f) { return objectText(f.objects[0]); }, { cls: 'wrap' }),
        txt('line', function (f) { return f.lines.map(hex).join(' '); }, { cls: 'mono' }),
        num('invalidations', function (f) { return f.invalidations; }, { heat: true }),
        num('reads', function (f) { return f.reads; }),
        num('writes', function (f) { return f.writes; }, { heat: true }),
        txt('threads', function (f) { return ids(f.threads); }),
        txt('at', function (f) { return f.places[0] ? base(f.places[0].file) + ':' + f.places[0].line : ''; }, { cls: 'mono' }),
        num('speed-up', function (f) { return f.predicted_speedup; }, { fmt: function (v) { return isNum(v) && v > 0 ? v.toFixed(2) + 'x' : '-'; }, heat: true }),
        txt('confidence', function (f) { return f.confidence; })
      ].concat(several ? [num('input', function (f) { return f.input; })] : []),
      detail: function (f) { var c = document.getElementById('line-' + f.rank + '-' + f.input); if (c) c.scrollIntoView(); return note('Its card is below.'); }
    }));
    (s.below_threshold || []).forEach(function (b) { add(el, note('below --min-speedup: ' + JSON.stringify(b))); });
    add(el, h('h2', { text: 'Each line: its 64 bytes, who reads and writes which word' }));
    s.findings.slice(0, 50).forEach(function (f) { add(el, lineCard(f)); });
    if (s.findings.length > 50) add(el, note((s.findings.length - 50) + ' more lines in the table above'));
  });

  /* ---- NUMA ---- */
  function matrix(name, rowLabels, colLabels, cells) {
    var max = 0;
    cells.forEach(function (r) { r.forEach(function (v) { if (v > max) max = v; }); });
    var t = h('table', { cls: 'matrix', 'data-matrix': name });
    add(t, h('tr', null, h('th', { text: '' }), colLabels.map(function (c) { return h('th', { cls: 'num', text: c }); }), h('th', { cls: 'num', text: 'total' })));
    cells.forEach(function (r, i) {
      add(t, h('tr', null, h('th', { text: rowLabels[i] }), r.map(function (v) {
        return h('td', { style: heat(v, max), text: int(v) });
      }), h('td', { text: int(sum(r)) })));
    });
    return h('div', { cls: 'scroll' }, t);
  }
  tab('numa', 'NUMA', !!R.numa, function (el) {
    if (!R.numa) { add(el, note('No NUMA records: build with PROFCC_INSTRUMENT=numa (docs/numa.md).')); return; }
    R.numa.inputs.forEach(function (n) {
      var tag = several ? ' (input ' + n.input + ')' : '';
      add(el, h('h2', { text: 'Input ' + input(n.input) + ': model ' + n.model + (n.model === 'emulate' ? ', ' + n.nodes + ' nodes' : '') }));
      add(el, tiles([
        ['pages', int(n.pages)], ['local accesses', int(n.local)], ['remote accesses', int(n.remote)],
        ['remote', pct(n.remote, n.local + n.remote)], ['remote invalidations', int(n.remote_invalidations)],
        ['unpinned thread', int(n.unpinned_thread)], ['unpinned page', int(n.unpinned_page)]
      ]));
      if (n.advice) add(el, h('p', { text: 'Advice: ' + n.advice }));
      if (n.migration) add(el, h('p', { text: 'Migration: ' + n.migration }));
      if (n.node_matrix.length) {
        add(el, h('h3', { text: 'Accesses: accessing thread\'s node (rows) x page\'s node (columns)' }));
        add(el, matrix('node' + n.input, n.node_matrix.map(function (r, i) { return 'thread node ' + i; }), n.node_matrix.map(function (r, i) { return 'page node ' + i; }), n.node_matrix));
      }
      var nodes = {};
      n.threads.forEach(function (t) { t.by_node.forEach(function (b) { nodes[b[0] === null ? 'none' : b[0]] = true; }); });
      var cols = Object.keys(nodes).sort(function (a, b) { return a === 'none' ? 1 : b === 'none' ? -1 : a - b; });
      if (cols.length && cols.length <= 64) {
        add(el, h('h3', { text: 'Accesses: thread (rows) x page\'s node (columns)' }));
        add(el, matrix('thread' + n.input, n.threads.map(function (t) { return 'thread ' + t.thread + (t.node !== null ? ' (node ' + t.node + ')' : ''); }),
          cols.map(function (c) { return c === 'none' ? 'no home' : 'node ' + c; }),
          n.threads.map(function (t) {
            return cols.map(function (c) { var v = 0; t.by_node.forEach(function (b) { if (String(b[0] === null ? 'none' : b[0]) === c) v += b[1]; }); return v; });
          })));
      }
      add(el, h('h3', { text: 'Threads: locality, binding and waits' }));
      add(el, table({
        name: 'numa threads' + tag, rows: n.threads,
        columns: [
          num('thread', function (t) { return t.thread; }),
          num('node', function (t) { return t.node; }),
          txt('routine', function (t) { return t.routine || ''; }, { cls: 'mono' }),
          txt('pinned', function (t) { return t.pinned ? 'yes' : 'no'; }),
          num('local', function (t) { return t.local; }),
          num('remote', function (t) { return t.remote; }, { heat: true }),
          num('remote %', function (t) { return t.local + t.remote ? 100 * t.remote / (t.local + t.remote) : 0; }, { fmt: function (v) { return v.toFixed(1); }, heat: true }),
          num('first touches', function (t) { return t.first_touches; }, { heat: true }),
          num('waits', function (t) { var w = t.waits; return w.mutex + w.spin + w.cond + w.barrier + w.sem; }, { title: function (v, t) { return JSON.stringify(t.waits); } }),
          num('migrations', function (t) { return t.migrations; })
        ]
      }));
      if (n.first_touch.length) {
        add(el, h('h3', { text: 'First touches by thread and line' }));
        add(el, table({
          name: 'numa first touch' + tag, rows: n.first_touch,
          columns: [
            num('thread', function (r) { return r.thread; }), num('pages', function (r) { return r.pages; }, { heat: true }),
            txt('at', function (r) { return r.place || '?'; }, { cls: 'mono' }), txt('function', function (r) { return r.function || ''; }, { cls: 'mono' }),
            txt('object', function (r) { return r.object || ''; })
          ]
        }));
      }
      if (n.objects.length) {
        add(el, h('h3', { text: 'Objects by seriousness' }));
        add(el, table({
          name: 'numa objects' + tag, rows: n.objects,
          columns: [
            txt('object', function (o) { return o.object; }, { cls: 'wrap' }),
            num('bytes', function (o) { return o.bytes; }), num('pages', function (o) { return o.pages; }),
            num('local', function (o) { return o.local; }), num('remote', function (o) { return o.remote; }, { heat: true }),
            num('remote %', function (o) { return o.local + o.remote ? 100 * o.remote / (o.local + o.remote) : 0; }, { fmt: function (v) { return v.toFixed(1); }, heat: true }),
            num('score', function (o) { return o.score; }, { fmt: function (v) { return fixed(v, 2); }, heat: true }),
            txt('first touch', function (o) { return o.first_touch_thread === null ? '' : 'thread ' + o.first_touch_thread + ' at ' + (o.first_touch_at || '?') + ' (' + int(o.first_touch_pages) + ' pages)'; }),
            num('shared pages', function (o) { return o.shared_pages; }),
            txt('kind', function (o) { return o.kind || ''; }), txt('fix', function (o) { return o.fix || ''; }, { cls: 'wrap' })
          ]
        }));
      }
      if (n.sites.length) {
        add(el, h('h3', { text: 'Source lines by remote accesses' }));
        add(el, table({
          name: 'numa sites' + tag, rows: n.sites,
          columns: [
            txt('at', function (s) { return s.place || '?'; }, { cls: 'mono' }), txt('function', function (s) { return s.function || ''; }, { cls: 'mono' }),
            num('accesses', function (s) { return s.accesses; }), num('remote', function (s) { return s.remote; }, { heat: true }),
            num('remote %', function (s) { return s.accesses ? 100 * s.remote / s.accesses : 0; }, { fmt: function (v) { return v.toFixed(1); } })
          ]
        }));
      }
      if (n.groups.length) {
        add(el, h('h3', { text: 'Thread groups (load balance)' }));
        add(el, table({ name: 'numa groups' + tag, rows: n.groups, columns: [txt('routine', function (g) { return g.routine; }, { cls: 'mono' }), num('threads', function (g) { return g.threads; }), num('overhead', function (g) { return g.overhead; }, { heat: true }), num('recommended', function (g) { return g.recommended; })] }));
      }
      if (n.plan.length) {
        add(el, h('h3', { text: 'Binding plan' + (n.plan_basis ? ' (' + n.plan_basis + ')' : '') }));
        add(el, table({ name: 'numa plan' + tag, rows: n.plan, columns: [num('node', function (c) { return c.node; }), txt('CPUs', function (c) { return c.cpu_list || c.first_cpu + '+' + c.cpus; }), txt('threads', function (c) { return ids(c.threads); }), txt('unbalanced', function (c) { return ids(c.unbalanced); })] }));
        if (n.plan_lines.length) add(el, h('pre', { cls: 'plan', text: n.plan_lines.join('\n') }));
      }
    });
  });

  /* ---- Allocator ---- */
  /* A site's or object's mean lifetime, in its thread's allocations (null: none measured). */
  function lifeMean(l) { return l && l.freed ? l.sum / l.freed : null; }
  function lifeText(v) { return isNum(v) ? (v < 10 ? v.toFixed(2) : int(Math.round(v))) + ' allocs' : '-'; }
  /* Lifetime histogram bucket k's label: 0, then [2^(k-1), 2^k), the last open. */
  function lifeBucket(k) {
    if (k === 0) return '0 (temporary)';
    var lo = Math.pow(2, k - 1), hi = Math.pow(2, k) - 1;
    if (k >= 31) return '>= ' + int(lo);
    return lo === hi ? int(lo) : int(lo) + '-' + int(hi);
  }
  function histogram(name, buckets) {
    var max = 0;
    buckets.forEach(function (b) { if (b[1] > max) max = b[1]; });
    return h('table', { cls: 'hist', 'data-hist': name }, buckets.map(function (b) {
      return h('tr', null, h('td', { cls: 'num mono', text: b[0] }), h('td', { cls: 'num', text: int(b[1]) }),
        h('td', null, h('span', { cls: 'bar', style: 'width:' + (max ? Math.max(1, 300 * b[1] / max) : 0).toFixed(0) + 'px' })));
    }));
  }
  function siteColumns(extra) {
    return [
      txt('site', function (s) { return siteIdentity(s); }, { cls: 'mono', node: function (v) { return objLink(v); } }),
      txt('function', function (s) { var f = programFrame(s); return f ? f.function || '' : ''; }, { cls: 'mono' }),
      txt('kind', function (s) { return s.kind; })
    ].concat(extra);
  }
  tab('allocator', 'Allocator', !!R.allocator || R.alloc_sites.sites.length > 0, function (el) {
    var sites = R.alloc_sites.sites;
    var inRange = h('div', { style: 'display:none' }), banner = rangeBanner(el);
    add(el, inRange);
    RANGE_FILTERS.push(function (sel) {
      banner(sel, 'the heap objects that allocated or freed in it, below; the lists after them are the whole run\'s');
      inRange.textContent = '';
      inRange.style.display = sel ? '' : 'none';
      if (sel) {
        add(inRange, h('h2', { text: 'Allocations in the selection' }));
        add(inRange, heapRangeTable('alloc selection', sel));
      }
    });
    if (sites.length) {
      add(el, h('h2', { text: 'Top allocation sites (' + int(R.alloc_sites.sites_total) + ' in all)' }));
      var lists = [
        ['peak contributors', function (s) { return s.live_bytes_peak; }, 'live peak'],
        ['most allocations', function (s) { return s.count; }, 'allocations'],
        ['temporary (freed before their thread\'s next allocation)', function (s) { return s.lifetime ? s.lifetime.temporary : 0; }, 'temporary'],
        ['leaked (live at exit)', function (s) { return s.live_bytes_at_exit; }, 'live at exit']
      ];
      lists.forEach(function (l) {
        var rows = sites.filter(function (s) { return l[1](s) > 0; }).sort(function (a, b) { return l[1](b) - l[1](a); }).slice(0, 10);
        add(el, h('h3', { text: l[0] }));
        if (!rows.length) { add(el, note('none')); return; }
        add(el, table({
          name: 'alloc ' + l[0], rows: rows, limit: 10,
          columns: siteColumns([num(l[2], l[1], { heat: true }), num('bytes', function (s) { return s.bytes; }), num('calls', function (s) { return s.count; }), num('max size', function (s) { return s.max_size; }),
            num('lifetime', function (s) { return lifeMean(s.lifetime); }, { fmt: lifeText })]),
          detail: function (s) { return h('ol', { cls: 'mono' }, s.stack.map(function (f) { return h('li', { text: frameText(f) }); })); }
        }));
      });
      var b = {};
      sites.forEach(function (s) {
        if (!s.count) return;
        var mean = s.bytes / s.count, k = 0;
        while ((1 << k) < mean && k < 40) k++;
        b[k] = (b[k] || 0) + s.count;
      });
      add(el, h('h3', { text: 'Request sizes (each site\'s mean size, by calls; the top sites)' }));
      add(el, histogram('sizes', Object.keys(b).map(Number).sort(function (x, y) { return x - y; }).map(function (k) { return ['<= ' + bytes(Math.pow(2, k)), b[k]]; })));
      var life = [];
      sites.forEach(function (s) {
        var hs = (s.lifetime && s.lifetime.histogram) || [];
        for (var k = 0; k < hs.length; k++) life[k] = (life[k] || 0) + hs[k];
      });
      add(el, h('h3', { text: 'Lifetimes (freed blocks by the allocations their thread made while they lived; the top sites)' }));
      if (!life.length) add(el, note('No lifetimes: no block was freed by its allocating thread (or the profile is older than them).'));
      else {
        var lb = [];
        for (var k = 0; k < life.length; k++) lb.push([lifeBucket(k), life[k] || 0]);
        add(el, histogram('lifetimes', lb));
      }
    }
    var A = R.allocator;
    if (!A) { add(el, note('No allocator analysis: run with PROFCC_OPTIONS=alloc_ops=1 (docs/allocators.md).')); return; }
    A.inputs.forEach(function (a) {
      var tag = several ? ' (input ' + a.input + ')' : '';
      add(el, h('h2', { text: 'The allocator: ' + a.allocator + tag }));
      add(el, note(a.description + (a.costs ? '; reference costs: ' + a.costs : '')));
      var basis = a.cpu_ns || a.duration_ns;
      add(el, tiles([
        ['time in the allocator', ns(a.total_ns)], ['share of ' + (a.share_of || 'the run'), pct(a.total_ns, basis)],
        ['operations', int(sum(a.ops, function (r) { return r.count; }))], ['first calls left out', int(a.first_calls)]
      ]));
      if (a.advice) add(el, h('p', { text: 'Advice: ' + a.advice }));
      if (a.no_advice) add(el, h('p', { text: a.no_advice }));
      add(el, h('h3', { text: 'Operations by kind' }));
      add(el, table({
        name: 'alloc ops' + tag, rows: a.ops, sort: 7,
        columns: [
          txt('op', function (r) { return r.op; }), txt('size', function (r) { return r.size_kind; }), txt('reuse', function (r) { return r.reuse; }), txt('phase', function (r) { return r.phase; }),
          num('calls', function (r) { return r.count; }, { heat: true }), num('timed', function (r) { return r.timed; }),
          num('mean', function (r) { return r.mean_ns; }, { fmt: function (v, r) { return !r.timed ? '-' : v < META.timer_floor_ns ? '< ' + META.timer_floor_ns + ' ns' : ns(v); } }),
          num('total', function (r) { return r.total_ns; }, { fmt: function (v) { return ns(v); }, heat: true })
        ]
      }));
      if (a.ops.some(function (r) { return r.timed && r.mean_ns < META.timer_floor_ns; })) add(el, note('A mean under ' + META.timer_floor_ns + ' ns is below what two TSC reads around the call resolve: the call costs about what the empty bracket costs.'));
      if (a.overhead.length) {
        add(el, h('h3', { text: 'Memory at the peak and at exit (fragmentation)' }));
        add(el, table({
          name: 'alloc overhead' + tag, rows: a.overhead,
          columns: [
            txt('moment', function (r) { return r.moment; }), num('requested', function (r) { return r.requested; }), num('usable', function (r) { return r.usable; }),
            num('internal fragmentation', function (r) { return r.internal_fragmentation; }), num('blowup', function (r) { return r.blowup; }), num('heap RSS', function (r) { return r.heap_rss; }),
            num('external + metadata', function (r) { return r.external_and_metadata; }),
            num('line use', function (r) { return r.line_utilisation; }, { fmt: function (v) { return isNum(v) ? (100 * v).toFixed(1) + '%' : '-'; } }),
            num('page use', function (r) { return r.page_utilisation; }, { fmt: function (v) { return isNum(v) ? (100 * v).toFixed(1) + '%' : '-'; } })
          ]
        }));
      }
      if (a.predictions.length) {
        add(el, h('h3', { text: 'Switching allocator: predicted' }));
        add(el, table({
          name: 'alloc predictions' + tag, rows: a.predictions,
          columns: [
            txt('allocator', function (p) { return p.allocator; }), num('predicted', function (p) { return p.predicted_ns; }, { fmt: function (v) { return ns(v); } }),
            num('change', function (p) { return p.change_ns; }, { fmt: function (v) { return ns(v); } }),
            num('of the run', function (p) { return p.change_of_run; }, { fmt: function (v) { return isNum(v) ? (100 * v).toFixed(2) + '%' : '-'; } }),
            txt('how', function (p) { return p.how; }, { cls: 'wrap mono' })
          ]
        }));
      }
      add(el, h('h3', { text: 'Channels (system calls and locks inside the allocator)' }));
      add(el, table({
        name: 'alloc channels' + tag, rows: a.channels,
        columns: [txt('channel', function (c) { return c.channel; }), txt('observable', function (c) { return c.observable ? 'yes' : 'no: ' + (c.why_not || ''); }, { cls: 'wrap' }),
          num('calls', function (c) { return c.count; }, { heat: true }), num('time', function (c) { return c.total_ns; }, { fmt: function (v) { return ns(v); } })]
      }));
      if (a.locks.length) add(el, table({
        name: 'alloc locks' + tag, rows: a.locks,
        columns: [txt('lock', function (l) { return l.place; }, { cls: 'mono' }), num('taken', function (l) { return l.taken; }), num('waited', function (l) { return l.waited; }, { heat: true }),
          num('wait', function (l) { return l.wait_ns; }, { fmt: function (v) { return ns(v); } }), num('held', function (l) { return l.hold_ns; }, { fmt: function (v) { return ns(v); } })]
      }));
    });
    if (A.top_sites.length) {
      add(el, h('h3', { text: 'Who pays: sites whose objects cost the allocator most' }));
      add(el, table({
        name: 'alloc cost sites', rows: A.top_sites,
        columns: [txt('site', function (s) { return s.site; }, { cls: 'mono' }), num('calls', function (s) { return s.count; }),
          num('allocator time', function (s) { return s.allocator_ns; }, { fmt: function (v) { return ns(v); }, heat: true }),
          num('share', function (s) { return s.share; }, { fmt: function (v) { return isNum(v) ? (100 * v).toFixed(1) + '%' : '-'; } })]
      }));
    }
  });

  /* ---- Regions ---- */
  function regionBytes(c, which) {
    if (!c) return null;
    var v = which === 'r' ? c.load_bytes : c.store_bytes, s = 0;
    for (var i = 0; i < v.length; i++) if (i !== META.local_space) s += v[i];
    return s;
  }
  tab('regions', 'Regions', !!(R.regions && R.regions.rows.length), function (el) {
    var g = R.regions;
    if (!g) { add(el, note('No region records: mark regions with PROFCC_ROI_BEGIN/END (docs/regions.md).')); return; }
    if (!g.rows.length) { add(el, note('No region completed.')); return; }
    var moved = function (r) { return r.counts ? regionBytes(r.counts, 'r') + regionBytes(r.counts, 'w') : null; };
    /* A region's threads together: time summed over them (and GB/s over that, as the low_bandwidth finding
       compares), and the longest thread's time (the model's totals: bytes over it, against the machine). */
    function aggregate(rows) {
      var byName = {};
      rows.forEach(function (r) {
        var k = (several ? r.input + ' ' : '') + r.region, x = byName[k] = byName[k] || { input: r.input, region: r.region, threads: 0, executions: 0, seconds: 0, longest: 0, bytes: 0 };
        x.threads++; x.executions += r.executions; x.seconds += r.seconds; x.longest = Math.max(x.longest, r.seconds || 0); x.bytes += moved(r) || 0;
      });
      return Object.keys(byName).map(function (k) { return byName[k]; });
    }
    /* The machine's bandwidth profcc calibrate measured, per input (null: not measured). */
    var machines = g.machine_bandwidth || [];
    function machine(input) { return machines[input] || null; }
    function share(gbps, input, all) {
      var m = machine(input);
      if (!m || !isNum(gbps)) return null;
      var best = all ? Math.max(m.copy_all, m.triad_all) : Math.max(m.copy_single, m.triad_single);
      return best > 0 ? gbps / best : null;
    }
    var fmtShare = function (v) { return isNum(v) ? (100 * v).toFixed(1) + '%' : '-'; };
    var BEST = 0;
    aggregate(g.rows).forEach(function (x) { if (x.seconds > 0) BEST = Math.max(BEST, x.bytes / x.seconds); });
    var banner = rangeBanner(el);
    RANGE_FILTERS.push(function (sel) {
      banner(sel, 'each region\'s and thread\'s counts inside it');
      var rows = sel ? sel.regions : g.rows;
      TABLES.regions.setRows(aggregate(rows));
      TABLES['region threads'].setRows(rows);
    });
    add(el, h('h2', { text: 'Regions (all threads)' }));
    add(el, table({
      name: 'regions', rows: aggregate(g.rows), sort: 5,
      columns: (several ? [num('input', function (x) { return x.input; })] : []).concat([
        txt('region', function (x) { return x.region; }, { cls: 'mono' }), num('threads', function (x) { return x.threads; }),
        num('executions', function (x) { return x.executions; }),
        num('time', function (x) { return x.seconds; }, { fmt: function (v) { return ns(v * 1e9); }, heat: true }),
        num('bytes moved', function (x) { return x.bytes; }, { heat: true }),
        num('GB/s', function (x) { return x.seconds > 0 ? x.bytes / x.seconds / 1e9 : null; }, { fmt: function (v) { return fixed(v, 2); } }),
        num('longest thread', function (x) { return x.longest; }, { fmt: function (v) { return ns(v * 1e9); } }),
        num('GB/s all threads', function (x) { return x.longest > 0 ? x.bytes / x.longest / 1e9 : null; }, { fmt: function (v) { return fixed(v, 2); },
          title: function () { return 'bytes over the longest thread\'s time: the region\'s rate when its threads run it at once'; } }),
        num('of machine (all threads)', function (x) { return x.longest > 0 ? share(x.bytes / x.longest / 1e9, x.input, true) : null; },
          { fmt: fmtShare, title: function () { return 'GB/s against the machine\'s memory bandwidth with one thread per CPU (profcc calibrate\'s best STREAM kernel)'; } }),
        num('of the best region', function (x) { return x.seconds > 0 && BEST > 0 ? x.bytes / x.seconds / BEST : null; },
          { fmt: function (v) { return isNum(v) ? (100 * v).toFixed(0) + '%' : '-'; }, title: function () { return 'GB/s against the run\'s fastest region (' + fixed(BEST / 1e9, 2) + ' GB/s; what the low_bandwidth finding compares with)'; } })
      ])
    }));
    add(el, h('h2', { text: 'Per region and thread' }));
    add(el, table({
      name: 'region threads', rows: g.rows,
      columns: (several ? [num('input', function (r) { return r.input; })] : []).concat([
        txt('region', function (r) { return r.region; }, { cls: 'mono' }), num('thread', function (r) { return r.thread; }),
        num('executions', function (r) { return r.executions; }),
        num('time', function (r) { return r.seconds; }, { fmt: function (v) { return isNum(v) ? ns(v * 1e9) : '-'; }, heat: true }),
        num('mean', function (r) { return r.executions ? r.seconds / r.executions : null; }, { fmt: function (v) { return isNum(v) ? ns(v * 1e9) : '-'; } }),
        num('bytes read', function (r) { return regionBytes(r.counts, 'r'); }, { heat: true }),
        num('bytes written', function (r) { return regionBytes(r.counts, 'w'); }, { heat: true }),
        num('GB/s', function (r) { return r.gbytes_per_s; }, { fmt: function (v) { return fixed(v, 2); } }),
        num('CF', function (r) { return r.correction_factor; }, { fmt: function (v) { return fixed(v, 3); } }),
        num('GB/s x CF', function (r) { return r.gbytes_per_s_corrected; }, { fmt: function (v) { return fixed(v, 2); } }),
        num('of machine (1 thread)', function (r) { return share(r.gbytes_per_s, r.input, false); },
          { fmt: fmtShare, title: function () { return 'GB/s against the machine\'s memory bandwidth on one CPU (profcc calibrate\'s best STREAM kernel)'; } }),
        num('instructions', function (r) { return r.counts ? r.counts.instructions : null; }),
        num('loads', function (r) { return r.counts && r.counts.loads ? sum(r.counts.loads) : null; }),
        num('stores', function (r) { return r.counts && r.counts.stores ? sum(r.counts.stores) : null; }),
        num('int ops', function (r) { return r.counts && isNum(r.counts.int_ops) ? r.counts.int_ops : null; }),
        num('fp ops', function (r) { return r.counts && isNum(r.counts.fp_ops) ? r.counts.fp_ops : null; }),
        num('vector ops', function (r) { return r.counts && isNum(r.counts.vector_ops) ? r.counts.vector_ops : null; }),
        num('branches', function (r) { return r.counts && isNum(r.counts.branches) ? r.counts.branches : null; }),
        num('calls', function (r) { return r.counts && isNum(r.counts.calls) ? r.counts.calls : null; })
      ])
    }));
    var told = [];
    machines.forEach(function (m, i) {
      if (!m) return;
      var t = (several ? 'Input ' + i + ': machine' : 'Machine') + ' bandwidth (profcc calibrate, STREAM): 1 thread ' + fixed(Math.max(m.copy_single, m.triad_single), 2) +
        ' GB/s, ' + m.threads + ' threads ' + fixed(Math.max(m.copy_all, m.triad_all), 2) + ' GB/s.';
      told.push(t);
    });
    told.forEach(function (t) { add(el, note(t)); });
    if (!machines.length || machines.some(function (m) { return !m; })) add(el, note('machine bandwidth not measured: run profcc calibrate (the program reads it when it writes its profile)' + (several && told.length ? ' (the inputs without a figure above)' : '') + '.'));
    if (g.sample_period > 1) add(el, note('Sampled (roi_sample=' + g.sample_period + '): counts and time are the counted executions\' scaled back; executions are exact.'));
    if (g.dropped || g.unmatched_ends) add(el, note(int(g.dropped) + ' markers dropped, ' + int(g.unmatched_ends) + ' unmatched ends.'));
  });

  /* ---- Timeline: snapshots over time; a range selected on a chart filters the other tabs ---- */
  var RANGE_FILTERS = [];
  function applyRange(sel) { RANGE_FILTERS.forEach(function (f) { f(sel); }); }
  /* A banner a tab shows while a selection filters it; returns its setter (sel or null, what it filters). */
  function rangeBanner(el) {
    var b = h('p', { cls: 'dropped', style: 'display:none' });
    add(el, b);
    return function (sel, what) {
      b.textContent = '';
      if (!sel) { b.style.display = 'none'; return; }
      add(b, ['Filtered to the Timeline\'s selection: ' + sel.label + ': ' + what + '. ', h('button', { text: 'show the whole run', onclick: function () { applyRange(null); } })]);
      b.style.display = '';
    };
  }
  function regionColour(name) {
    var x = 0;
    for (var i = 0; i < name.length; i++) x = (x * 31 + name.charCodeAt(i)) % 360;
    return 'hsl(' + x + ',65%,42%)';
  }
  /* Per input: [{t0, t1, rows: {region: {bytes, executions, instructions}}}] of each interval. */
  function intervals(snaps) {
    var out = [], prev = { ns: 0, rows: [] };
    snaps.forEach(function (cur) {
      var before = {};
      prev.rows.forEach(function (r) { before[r.region + '\u0000' + r.thread] = r; });
      var per = {};
      cur.rows.forEach(function (r) {
        var b = before[r.region + '\u0000' + r.thread] || { bytes_read: 0, bytes_written: 0, executions: 0, instructions: 0 };
        var x = per[r.region] = per[r.region] || { bytes: 0, executions: 0, instructions: 0 };
        x.bytes += Math.max(0, r.bytes_read + r.bytes_written - b.bytes_read - b.bytes_written);
        x.executions += Math.max(0, r.executions - b.executions);
        x.instructions += Math.max(0, r.instructions - b.instructions);
      });
      out.push({ t0: prev.ns / 1e9, t1: cur.ns / 1e9, rows: per });
      prev = cur;
    });
    return out;
  }
  /* The index of the last snapshot at or before t (seconds); -1: none (the start). */
  function atIndex(snaps, t) {
    var k = -1;
    snaps.forEach(function (s, i) { if (s.ns / 1e9 <= t + 1e-12) k = i; });
    return k;
  }
  /* The allocation sites' counts at snapshot k, by stack id: each site's last listing at or before it. */
  function sitesAt(snaps, k) {
    var m = {};
    for (var i = 0; i <= k; i++) (snaps[i].sites || []).forEach(function (x) { m[x.stack] = x; });
    return m;
  }
  /* Per heap object (the Objects tab's name), what its sites did from snapshot ia to ib: allocations,
     bytes and frees, bytes live at ib, and the most live at a snapshot in between. */
  function heapRange(g, ia, ib) {
    var snaps = g.snapshots, a = sitesAt(snaps, ia), cur = {}, peak = {}, out = {};
    for (var k in a) { cur[k] = a[k]; peak[k] = a[k].live_bytes; }
    for (var i = ia + 1; i <= ib; i++) (snaps[i].sites || []).forEach(function (x) {
      cur[x.stack] = x; peak[x.stack] = Math.max(peak[x.stack] || 0, x.live_bytes);
    });
    for (var st in cur) {
      var b = cur[st], p = a[st] || { allocations: 0, bytes: 0, frees: 0, live_bytes: 0 };
      if (b.allocations === p.allocations && b.frees === p.frees) continue;
      var name = (g.heap_objects || {})[st] || 'stack ' + st;
      var o = out[name] = out[name] || { object: name, allocations: 0, bytes: 0, frees: 0, live: 0, peak: 0 };
      o.allocations += b.allocations - p.allocations; o.bytes += b.bytes - p.bytes; o.frees += b.frees - p.frees;
      o.live += b.live_bytes; o.peak += peak[st];
    }
    return out;
  }
  function heapRangeTable(name, sel) {
    return table({
      name: name, rows: Object.keys(sel.heap).map(function (k) { return sel.heap[k]; }), sort: 1,
      columns: [txt('object', function (o) { return o.object; }, { cls: 'mono', node: function (v) { return objLink(v); } }),
        num('allocations', function (o) { return o.allocations; }, { heat: true }), num('bytes', function (o) { return o.bytes; }, { heat: true }),
        num('frees', function (o) { return o.frees; }), num('live at the end', function (o) { return o.live; }),
        num('live peak', function (o) { return o.peak; }, { heat: true, title: function () { return 'the most live at a snapshot in the range (a peak between two snapshots is not seen)'; } })]
    });
  }
  /* Drag across canvas c (its plot from x = L to W - 10 spans 0..tmax seconds): shade(sel) while dragging, done(sel) at the end. */
  function brush(c, W, L, tmax, shade, done) {
    var drag = null;
    function tOf(e) { var r = c.getBoundingClientRect(); return Math.max(0, Math.min(tmax, ((e.clientX - r.left) * W / r.width - L) / (W - L - 10) * tmax)); }
    function span(e) { var t = tOf(e); return [Math.min(drag, t), Math.max(drag, t)]; }
    c.addEventListener('mousedown', function (e) { drag = tOf(e); shade([drag, drag]); });
    c.addEventListener('mousemove', function (e) { if (drag !== null) shade(span(e)); });
    window.addEventListener('mouseup', function (e) { if (drag !== null) { var s = span(e); drag = null; done(s); } });
  }
  /* One input's charts: GB/s by region (when it has regions) and the heap live (when recorded), each
     draggable; a range shows its counts below them and filters the Regions, Objects and Allocator tabs. */
  function timeline(el, g) {
    var snaps = g.snapshots, iv = intervals(snaps);
    if (!iv.length) return false;
    var selBox = h('div'), charts = [];
    function select(range) {
      selBox.textContent = '';
      if (!range || !(range[1] - range[0] > 0)) { charts.forEach(function (c) { c(null); }); return; }
      charts.forEach(function (c) { c(range); });
      var ia = atIndex(snaps, range[0]), ib = atIndex(snaps, range[1]);
      var a = ia >= 0 ? snaps[ia] : { ns: 0, rows: [] }, b = ib >= 0 ? snaps[ib] : { ns: 0, rows: [] };
      var before = {};
      a.rows.forEach(function (r) { before[r.region + '\u0000' + r.thread] = r; });
      var rows = b.rows.map(function (r) {
        var p = before[r.region + '\u0000' + r.thread] || { bytes_read: 0, bytes_written: 0, executions: 0, ticks: 0, instructions: 0 };
        return { region: r.region, thread: r.thread, executions: r.executions - p.executions, read: r.bytes_read - p.bytes_read,
          written: r.bytes_written - p.bytes_written, seconds: g.tsc_hz > 0 ? (r.ticks - p.ticks) / g.tsc_hz : null, instructions: r.instructions - p.instructions };
      });
      var dt = (b.ns - a.ns) / 1e9, label = 'input ' + g.input + ', ' + (a.ns / 1e9).toFixed(3) + ' s to ' + (b.ns / 1e9).toFixed(3) + ' s';
      var sel = {
        label: label, input: g.input, heap: heapRange(g, ia, ib),
        regions: rows.map(function (r) {
          return { input: g.input, region: r.region, thread: r.thread, executions: r.executions, seconds: r.seconds || 0,
            counts: { load_bytes: [r.read, 0, 0, 0], store_bytes: [r.written, 0, 0, 0], instructions: r.instructions },
            gbytes_per_s: r.seconds > 0 ? (r.read + r.written) / r.seconds / 1e9 : null };
        })
      };
      applyRange(sel);
      add(selBox, h('h3', { text: 'Selection ' + (a.ns / 1e9).toFixed(3) + ' s to ' + (b.ns / 1e9).toFixed(3) + ' s (the snapshots around the range)' }));
      if (rows.length) add(selBox, table({
        name: 'timeline selection ' + g.input, rows: rows,
        columns: [txt('region', function (r) { return r.region; }, { cls: 'mono' }), num('thread', function (r) { return r.thread; }),
          num('executions', function (r) { return r.executions; }), num('bytes read', function (r) { return r.read; }, { heat: true }),
          num('bytes written', function (r) { return r.written; }, { heat: true }),
          num('time in region', function (r) { return r.seconds; }, { fmt: function (v) { return isNum(v) ? ns(v * 1e9) : '-'; } }),
          num('GB/s over the range', function (r) { return dt > 0 ? (r.read + r.written) / dt / 1e9 : null; }, { fmt: function (v) { return fixed(v, 2); } }),
          num('instructions', function (r) { return r.instructions; })]
      }));
      if (Object.keys(sel.heap).length) add(selBox, heapRangeTable('timeline heap selection ' + g.input, sel));
      else if (snaps.some(function (s) { return s.heap; })) add(selBox, note('No allocation site allocated or freed in the range.'));
    }
    var regions = {};
    iv.forEach(function (i) { for (var r in i.rows) regions[r] = true; });
    var names = Object.keys(regions).sort();
    if (names.length) bandwidthChart(el, g, iv, names, charts, select);
    heapChart(el, g, charts, select);
    add(el, note('Drag across a chart to select a range: below it each region\'s and heap object\'s counts inside it; the Regions, Objects and Allocator tabs show that range until cleared. ' +
      'A snapshot lists at most ' + META.max_snapshot_sites + ' allocation sites (those that changed most since they were last listed; the last one all): a site\'s counts are exact at the snapshots that list it.'));
    add(el, selBox);
    return snaps.some(function (s) { return s.heap; });
  }
  function bandwidthChart(el, g, iv, names, charts, select) {
    var tmax = iv[iv.length - 1].t1, ymax = 0;
    iv.forEach(function (i) { names.forEach(function (r) { var x = i.rows[r]; if (x && i.t1 > i.t0) ymax = Math.max(ymax, x.bytes / (i.t1 - i.t0) / 1e9); }); });
    if (!(ymax > 0)) ymax = 1;
    var W = 1100, H = 240, L = 60, B = 30, T = 10, sel = null;
    var c = h('canvas', { width: W, height: H, cls: 'chart', 'data-chart': 'bandwidth ' + g.input });
    function x(t) { return L + (W - L - 10) * t / tmax; }
    function y(v) { return H - B - (H - B - T) * v / ymax; }
    function draw() {
      var g2 = c.getContext('2d');
      g2.clearRect(0, 0, W, H);
      g2.fillStyle = '#fff'; g2.fillRect(0, 0, W, H);
      g2.strokeStyle = '#d9dde5'; g2.fillStyle = '#5d6778'; g2.font = '11px sans-serif';
      for (var k = 0; k <= 4; k++) {
        var v = ymax * k / 4;
        g2.beginPath(); g2.moveTo(L, y(v)); g2.lineTo(W - 10, y(v)); g2.stroke();
        g2.fillText(v.toFixed(v < 10 ? 2 : 0), 4, y(v) + 4);
      }
      for (var k2 = 0; k2 <= 8; k2++) { var t = tmax * k2 / 8; g2.fillText(t.toFixed(3) + ' s', x(t) - 14, H - 10); }
      if (sel) { g2.fillStyle = 'rgba(40,87,184,0.15)'; g2.fillRect(x(sel[0]), T, x(sel[1]) - x(sel[0]), H - B - T); }
      names.forEach(function (r) {
        g2.strokeStyle = regionColour(r); g2.lineWidth = 2; g2.beginPath();
        iv.forEach(function (i, n) {
          var xr = i.rows[r], v = xr && i.t1 > i.t0 ? xr.bytes / (i.t1 - i.t0) / 1e9 : 0;
          if (n === 0) g2.moveTo(x(i.t0), y(v)); else g2.lineTo(x(i.t0), y(v));
          g2.lineTo(x(i.t1), y(v));
        });
        g2.stroke();
      });
    }
    function shade(s) { sel = s; draw(); }
    charts.push(shade);
    brush(c, W, L, tmax, shade, select);
    draw();
    add(el, h('h3', { text: 'Input ' + input(g.input) + ': GB/s (bytes moved per second) by each region, all threads, ' + g.snapshots.length + ' snapshots' }));
    add(el, c);
    add(el, h('div', { cls: 'legend' }, names.map(function (r) { return h('span', null, h('span', { cls: 'sw', style: 'background:' + regionColour(r) }), r); })));
  }
  /* Per input: the heap at each snapshot (bytes live then), where the profile records it. */
  function heapChart(el, g, charts, select) {
    var snaps = g.snapshots.filter(function (s) { return s.heap; });
    if (!snaps.length) return;
    var tmax = snaps[snaps.length - 1].ns / 1e9 || 1, ymax = 0, top = snaps[0], sel = null;
    snaps.forEach(function (s) { if (s.heap.live_bytes > ymax) { ymax = s.heap.live_bytes; top = s; } });
    var W = 1100, H = 160, L = 70, B = 30, T = 10;
    var c = h('canvas', { width: W, height: H, cls: 'chart', 'data-chart': 'live bytes ' + g.input });
    var ys = ymax > 0 ? ymax : 1;
    function x(t) { return L + (W - L - 10) * t / tmax; }
    function y(v) { return H - B - (H - B - T) * v / ys; }
    function draw() {
      var d = c.getContext('2d');
      d.clearRect(0, 0, W, H);
      d.fillStyle = '#fff'; d.fillRect(0, 0, W, H);
      d.strokeStyle = '#d9dde5'; d.fillStyle = '#5d6778'; d.font = '11px sans-serif'; d.lineWidth = 1;
      for (var k = 0; k <= 2; k++) { var v = ys * k / 2; d.beginPath(); d.moveTo(L, y(v)); d.lineTo(W - 10, y(v)); d.stroke(); d.fillText(bytes(v), 4, y(v) + 4); }
      for (var k2 = 0; k2 <= 8; k2++) { var t = tmax * k2 / 8; d.fillText(t.toFixed(3) + ' s', x(t) - 14, H - 10); }
      if (sel) { d.fillStyle = 'rgba(40,87,184,0.15)'; d.fillRect(x(sel[0]), T, x(sel[1]) - x(sel[0]), H - B - T); }
      d.strokeStyle = '#2857b8'; d.lineWidth = 2; d.beginPath();
      snaps.forEach(function (s, n) { var px = x(s.ns / 1e9), py = y(s.heap.live_bytes); if (n === 0) d.moveTo(px, py); else d.lineTo(px, py); });
      d.stroke();
    }
    function shade(s) { sel = s; draw(); }
    charts.push(shade);
    brush(c, W, L, tmax, shade, select);
    draw();
    var last = snaps[snaps.length - 1].heap;
    add(el, h('h3', { text: 'Input ' + input(g.input) + ': heap bytes live at each snapshot' }));
    add(el, c);
    add(el, h('p', { cls: 'heap-summary', text: 'Most live: ' + bytes(ymax) + ' (' + int(ymax) + ' bytes) at ' + (top.ns / 1e9).toFixed(3) + ' s; by the last snapshot ' +
      int(last.allocations) + ' allocations, ' + int(last.frees) + ' frees, ' + bytes(last.bytes_allocated) + ' allocated.' }));
  }
  tab('timeline', 'Timeline', !!(R.regions && R.regions.snapshots && R.regions.snapshots.length), function (el) {
    var s = R.regions && R.regions.snapshots;
    if (!s || !s.length) { add(el, note('No snapshots: run the program with PROFCC_OPTIONS=roi_interval=100 (milliseconds) to have the heap and the regions\' counts over time.')); return; }
    var heap = false;
    s.forEach(function (g) { heap = timeline(el, g) || heap; });
    if (!heap) add(el, note('These snapshots do not record the heap (a profile from an older profcc): the Allocator tab has the peak and the exit.'));
  });

  /* ---- Flame graph (common.js) ---- */
  tab('flame', 'Flame graph', R.alloc_sites.sites.length > 0 || R.access_sites.lines.length > 0, function (el) {
    flameGraph(el, flameTrees(R), {
      note: 'Allocation stacks: the outermost frame at the top, the allocation call at the bottom. Access costs: function, then line. Click a frame to zoom in; its object, when it has one, opens from the line below.',
      object: function (name) { return objLink(name, 'open object ' + name); }
    });
  });

  /* ---- Sources: annotated lines (--sources DIR) ---- */
  tab('sources', 'Sources', !!document.getElementById('profcc-sources'), function (el) {
    var node = document.getElementById('profcc-sources');
    if (!node) { add(el, note('No sources: name the directory they are under with profcc report --format html --sources DIR.')); return; }
    var S = JSON.parse(node.textContent);
    (S.notes || []).forEach(function (n) { add(el, note(n)); });
    var per = {};
    function metric(file, line, k, v) {
      if (!file || !line || !(v > 0)) return;
      var f = per[file] = per[file] || {}, l = f[line] = f[line] || {};
      l[k] = (l[k] || 0) + v;
    }
    function split(place) { var i = place ? place.lastIndexOf(':') : -1; return i > 0 ? [place.slice(0, i), +place.slice(i + 1)] : [null, 0]; }
    R.access_sites.lines.forEach(function (l) { metric(l.file, l.line, 'accesses', l.accesses); metric(l.file, l.line, 'writes', l.writes); });
    (R.numa ? R.numa.inputs : []).forEach(function (n) { n.sites.forEach(function (s) { var p = split(s.place); metric(p[0], p[1], 'remote', s.remote); }); });
    (R.sharing ? R.sharing.findings : []).forEach(function (f) { f.places.forEach(function (p) { metric(p.file, p.line, 'shared', p.reads + p.writes); }); });
    R.alloc_sites.sites.forEach(function (s) { var f = programFrame(s); if (f) metric(f.file, f.line, 'allocated', s.bytes); });
    var KEYS = [['accesses', 'accesses'], ['writes', 'writes'], ['remote', 'remote accesses'], ['shared', 'accesses to shared lines'], ['allocated', 'bytes allocated']];
    S.files.forEach(function (file) {
      var m = per[file.path] || {};
      var max = {};
      KEYS.forEach(function (k) { max[k[0]] = 0; for (var l in m) max[k[0]] = Math.max(max[k[0]], m[l][k[0]] || 0); });
      add(el, h('h2', { cls: 'mono', text: file.path }));
      if (file.lines.length < file.lines_total) add(el, note('The annotated lines of ' + int(file.lines_total) + ', with ' + 5 + ' lines around each.'));
      var t = h('table', { cls: 'data source', 'data-source': file.path });
      add(t, h('tr', null, h('th', { cls: 'num', text: 'line' }), KEYS.map(function (k) { return h('th', { cls: 'num', text: k[1] }); }), h('th', { text: 'source' })));
      var last = 0;
      file.lines.forEach(function (nt) {
        var n = nt[0], text = nt[1];
        if (n > last + 1) add(t, h('tr', null, h('td', { colspan: KEYS.length + 2, cls: 'gap', text: '...' })));
        last = n;
        var x = m[n] || {};
        add(t, h('tr', { id: 'src-' + base(file.path) + '-' + n }, h('td', { cls: 'num muted', text: String(n) }),
          KEYS.map(function (k) { var v = x[k[0]]; return h('td', { cls: 'num', style: heat(v, max[k[0]]), text: v ? int(v) : '' }); }),
          h('td', null, h('pre', { cls: 'src', text: text }))));
      });
      add(el, h('div', { cls: 'scroll' }, t));
    });
    if (!S.files.length) add(el, note('None of the files the report names is under the directory given.'));
  });

  startPage();
