/* profcc pages' shared script (report/src/render/html.rs): the DOM and number helpers,
 * sortable tables, tabs and the flame graph, used by the report page (report.js) and the diff
 * page (diff.js). html.rs wraps this file and the page's own script in one function. Every
 * node is built with textContent or attributes, never innerHTML, so the program's strings
 * (symbols, paths) show as text. */
  var errors = document.getElementById('profcc-errors');
  function fail(msg) { errors.textContent += msg + '\n'; }
  window.addEventListener('error', function (e) {
    fail('JavaScript error: ' + e.message + ' (line ' + e.lineno + ':' + e.colno + ')');
  });
  window.addEventListener('unhandledrejection', function (e) {
    fail('JavaScript error: unhandled rejection: ' + e.reason);
  });

  /* ---- DOM and number helpers ---- */
  function h(tag, props) {
    var e = document.createElement(tag);
    if (props) {
      for (var k in props) {
        var v = props[k];
        if (v === null || v === undefined) continue;
        if (k === 'text') e.textContent = v;
        else if (k === 'cls') e.className = v;
        else if (k === 'style') e.setAttribute('style', v);
        else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
  function isNum(v) { return typeof v === 'number' && isFinite(v); }
  function int(n) {
    if (!isNum(n)) return '-';
    var neg = n < 0, s = String(Math.round(Math.abs(n))), out = '';
    while (s.length > 3) { out = ',' + s.slice(-3) + out; s = s.slice(0, -3); }
    return (neg ? '-' : '') + s + out;
  }
  function fixed(n, d) { return isNum(n) ? n.toFixed(d) : '-'; }
  function pct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + '%' : '-'; }
  function bytes(n) {
    if (!isNum(n)) return '-';
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, v = n;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(v) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + u[i];
  }
  function ns(n) {
    if (!isNum(n)) return '-';
    var a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(a >= 1e10 ? 1 : 3) + ' s';
    if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 1 : 2) + ' ms';
    if (a >= 1e3) return (n / 1e3).toFixed(a >= 1e4 ? 1 : 2) + ' us';
    return n.toFixed(a >= 10 ? 0 : 1) + ' ns';
  }
  function hex(n) { return isNum(n) ? '0x' + n.toString(16) : '-'; }
  function base(p) { return p ? String(p).split('/').pop() : p; }
  function ids(v) { return (v || []).join(', '); }
  function sum(v, f) { var s = 0; (v || []).forEach(function (x) { s += f ? f(x) || 0 : x || 0; }); return s; }
  function frameText(f) {
    var fn = f.function || (f.module ? base(f.module) + '+' + hex(f.offset) : hex(f.address));
    var at = f.file ? base(f.file) + (f.line ? ':' + f.line : '') : '';
    return fn + (at ? ' (' + at + ')' : '') + (f.inlined ? ' [inlined]' : '');
  }
  /* A colour per thread id, spread around the hue circle. */
  function threadColour(t) { return 'hsl(' + ((t * 137.5) % 360).toFixed(0) + ',62%,46%)'; }
  function heat(v, max) {
    if (!(max > 0) || !(v > 0)) return null;
    var a = Math.min(1, v / max);
    return 'background: rgba(230,85,45,' + (0.06 + 0.5 * a).toFixed(3) + ')';
  }
  function download(name, text, type) {
    var a = h('a', { download: name });
    a.href = URL.createObjectURL(new Blob([text], { type: type }));
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }
  function csvCell(v) {
    var s = v === null || v === undefined ? '' : String(v);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  /* ---- Tables: sortable (click a header), filterable, CSV/JSON downloads, expandable rows ---- */
  var TABLES = {};
  /* spec: {name, rows, columns: [{label, get(row), num, fmt(v,row), heat, cls, title}],
   *        detail(row) -> node, sort: index, desc, limit} */
  function table(spec) {
    var cols = spec.columns, rows = spec.rows.slice(), shown = rows;
    var sortCol = spec.sort === undefined ? -1 : spec.sort, desc = spec.desc !== false;
    var limit = spec.limit || 500;
    var filter = h('input', { type: 'search', placeholder: 'filter ' + spec.name + '...' });
    var count = h('span', { cls: 'count' });
    var max;
    function scale() {
      max = cols.map(function (c) {
        if (!c.heat) return 0;
        var m = 0;
        rows.forEach(function (r) { var v = c.get(r); if (isNum(v) && v > m) m = v; });
        return m;
      });
    }
    scale();
    var thead = h('thead'), tbody = h('tbody');
    var tr = h('tr');
    cols.forEach(function (c, i) {
      if (c.hidden) return;
      var th = h('th', { cls: 'sortable' + (c.num ? ' num' : ''), title: 'sort by ' + c.label, text: c.label });
      th.addEventListener('click', function () {
        if (sortCol === i) desc = !desc; else { sortCol = i; desc = !!c.num; }
        draw();
      });
      tr.appendChild(th);
    });
    thead.appendChild(tr);
    var more = h('button', { text: 'show all' });
    more.addEventListener('click', function () { limit = Infinity; draw(); });
    function cellText(c, r) { var v = c.get(r); return c.fmt ? c.fmt(v, r) : c.num ? int(v) : v === null || v === undefined ? '' : String(v); }
    function draw() {
      var q = filter.value.trim().toLowerCase();
      shown = rows.filter(function (r) {
        if (!q) return true;
        for (var i = 0; i < cols.length; i++) if (String(cellText(cols[i], r)).toLowerCase().indexOf(q) >= 0) return true;
        return spec.search ? spec.search(r).toLowerCase().indexOf(q) >= 0 : false;
      });
      if (sortCol >= 0) {
        var c = cols[sortCol];
        shown.sort(function (a, b) {
          var x = c.get(a), y = c.get(b);
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          var o = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
          return desc ? -o : o;
        });
      }
      var ths = thead.firstChild.children, k = 0;
      cols.forEach(function (c, i) {
        if (c.hidden) return;
        ths[k].classList.toggle('asc', i === sortCol && !desc);
        ths[k].classList.toggle('desc', i === sortCol && desc);
        k++;
      });
      tbody.textContent = '';
      shown.slice(0, limit).forEach(function (r) {
        var row = h('tr', { cls: spec.detail ? 'expandable' : null });
        cols.forEach(function (c, i) {
          if (c.hidden) return;
          var v = c.get(r);
          var td = h('td', { cls: (c.num ? 'num ' : '') + (c.cls || ''), style: c.heat ? heat(v, max[i]) : null });
          var t = cellText(c, r);
          if (c.node) add(td, c.node(v, r)); else td.textContent = t;
          if (c.title) td.title = c.title(v, r) || '';
          row.appendChild(td);
        });
        tbody.appendChild(row);
        if (spec.detail) {
          var open = null;
          row.firstChild.addEventListener('click', function () {
            if (open) { open.remove(); open = null; row.classList.remove('expanded'); return; }
            var d = h('td', { colspan: cols.filter(function (c) { return !c.hidden; }).length });
            try { add(d, spec.detail(r)); } catch (e) { fail('JavaScript error: ' + e); }
            open = h('tr', { cls: 'detail' }, d);
            row.after(open);
            row.classList.add('expanded');
          });
        }
      });
      count.textContent = shown.length === rows.length ? int(rows.length) + ' rows' : int(shown.length) + ' of ' + int(rows.length) + ' rows';
      more.style.display = shown.length > limit ? '' : 'none';
    }
    filter.addEventListener('input', draw);
    var csv = h('button', { text: 'CSV', title: 'download this table as CSV' });
    csv.addEventListener('click', function () {
      var lines = [cols.map(function (c) { return csvCell(c.label); }).join(',')];
      shown.forEach(function (r) {
        lines.push(cols.map(function (c) { var v = c.get(r); return csvCell(Array.isArray(v) ? v.join(' ') : v); }).join(','));
      });
      download(spec.name.replace(/\W+/g, '_') + '.csv', lines.join('\n') + '\n', 'text/csv');
    });
    var json = h('button', { text: 'JSON', title: 'download these rows as JSON' });
    json.addEventListener('click', function () {
      download(spec.name.replace(/\W+/g, '_') + '.json', JSON.stringify(shown, null, 1), 'application/json');
    });
    draw();
    var box = h('div', { cls: 'tablebox', 'data-table': spec.name },
      h('div', { cls: 'tools' }, filter, count, csv, json),
      h('div', { cls: 'scroll' }, h('table', { cls: 'data' }, thead, tbody)), more);
    TABLES[spec.name] = {
      filter: function (q) { filter.value = q; draw(); }, box: box,
      setRows: function (r) { rows = r.slice(); scale(); draw(); }
    };
    return box;
  }
  function num(label, get, extra) {
    var c = { label: label, get: get, num: true };
    for (var k in extra || {}) c[k] = extra[k];
    return c;
  }
  function txt(label, get, extra) {
    var c = { label: label, get: get };
    for (var k in extra || {}) c[k] = extra[k];
    return c;
  }
  function tiles(list) {
    return h('div', { cls: 'tiles' }, list.filter(Boolean).map(function (t) {
      return h('div', { cls: 'tile', title: t[2] || null }, h('div', { cls: 'v', text: t[1] }), h('div', { cls: 'k', text: t[0] }));
    }));
  }
  function note(text) { return h('p', { cls: 'hint', text: text }); }
  function objLink(name, label) {
    return h('a', { cls: 'obj', title: 'show in Objects', text: label || name, onclick: function () { goObject(name); } });
  }
  function goObject(name) {
    location.hash = '#objects';
    if (TABLES.objects) TABLES.objects.filter(name);
  }

  /* ---- Tabs ---- */
  var TABS = [];
  function tab(id, label, has, draw) { TABS.push({ id: id, label: label, has: has, draw: draw }); }
  function show() {
    var id = location.hash.replace('#', '') || 'summary';
    if (!TABS.some(function (t) { return t.id === id; })) id = 'summary';
    TABS.forEach(function (t) {
      t.section.classList.toggle('active', t.id === id);
      t.link.classList.toggle('active', t.id === id);
    });
  }

  /* ---- Allocation sites ---- */
  function programFrame(site) { return site.stack[site.wrapper_frames || 0] || site.stack[0]; }
  function siteIdentity(site) {
    var f = programFrame(site);
    if (!f) return '?';
    return f.file && f.line ? base(f.file) + ':' + f.line : f.function || '?';
  }
  function objectName(o) { return o.kind === 'global' ? o.name : o.alloc_site ? base(o.alloc_site) : o.function; }

  /* ---- Flame graph: the report's, and the diff's coloured by change ---- */
  /* The cost trees of one report model R: {cost: {name, value, kids: {name: node}, obj}}. */
  function flameTrees(R) {
    var trees = {};
    function tree(name) { return trees[name] = trees[name] || { name: 'all', value: 0, kids: {} }; }
    function push(t, path, v, obj) {
      if (!(v > 0)) return;
      var n = t;
      n.value += v;
      path.forEach(function (p, i) {
        var k = n.kids[p.name] = n.kids[p.name] || { name: p.name, value: 0, kids: {} };
        k.value += v;
        if (p.obj) k.obj = p.obj;
        n = k;
      });
      if (obj && !n.obj) n.obj = obj;
    }
    R.alloc_sites.sites.forEach(function (s) {
      var id = siteIdentity(s), w = s.wrapper_frames || 0;
      var path = s.stack.map(function (f, i) {
        return { name: f.function || (f.module ? base(f.module) + '+' + hex(f.offset) : hex(f.address)), obj: i === w ? id : null };
      }).reverse();
      /* The allocation call's place as the leaf: one box per site. */
      path.push({ name: s.kind + ' at ' + id, obj: id });
      push(tree('allocated bytes'), path, s.bytes);
      push(tree('allocations'), path, s.count);
      push(tree('live bytes at exit'), path, s.live_bytes_at_exit);
    });
    /* A site inlined into its function: the call it came through between them. */
    R.access_sites.lines.forEach(function (l) {
      var leaf = { name: base(l.file) + ':' + l.line }, rest = l.accesses;
      (l.sites || []).forEach(function (s) {
        var path = [{ name: s.function || l.function || '?' }];
        if (s.inlined_at) path.push({ name: 'inlined at ' + base(s.inlined_at) });
        push(tree('accesses'), path.concat([leaf]), s.count);
        rest -= s.count;
      });
      if (rest > 0) push(tree('accesses'), [{ name: l.function || '?' }, leaf], rest);
    });
    (R.numa ? R.numa.inputs : []).forEach(function (n) {
      n.sites.forEach(function (s) { push(tree('remote accesses'), [{ name: s.function || '?' }, { name: s.place ? base(s.place) : '?' }], s.remote); });
    });
    (R.sharing ? R.sharing.findings : []).forEach(function (f) {
      var o = f.objects[0], name = o ? objectName(o) : null, all = sum(f.places, function (p) { return p.reads + p.writes; });
      f.places.forEach(function (p) {
        push(tree('invalidations'), [{ name: p.function || '?' }, { name: (p.line ? base(p.file) + ':' + p.line : p.file) }],
          all > 0 ? f.invalidations * (p.reads + p.writes) / all : 0, name);
      });
    });
    return trees;
  }
  /* Draws a flame graph of `trees` (flameTrees) into el: a cost selector, a search box, click
   * to zoom. opts: note (the text under the tools); paint(node) -> {cls, colour} (default: a
   * warm colour by name); about(node) -> the frame's figures in words (default: its cost and
   * share); empty(cost, root) -> a note when the cost's tree is empty; object(name) -> a node to
   * open a frame's object; initial: the cost shown first (default the first). */
  function flameGraph(el, trees, opts) {
    opts = opts || {};
    var costs = Object.keys(trees);
    if (!costs.length) { add(el, note('No allocation stacks or access sites recorded.')); return; }
    var cost = opts.initial && trees[opts.initial] ? opts.initial : costs[0], root = trees[cost], zoom = null;
    var select = h('select', null, costs.map(function (c) { return h('option', { value: c, text: c, selected: c === cost ? 'selected' : null }); }));
    var search = h('input', { type: 'search', placeholder: 'search functions...' });
    var matched = h('span', { cls: 'count' });
    var reset = h('button', { text: 'reset zoom' });
    var box = h('div', { cls: 'flame', 'data-flame': '1' });
    var info = h('div', { cls: 'mono' });
    var paint = opts.paint || function (n) { return { cls: null, colour: flameColour(n.name) }; };
    function label(v) { return cost.indexOf('bytes') >= 0 ? bytes(v) + ' (' + int(v) + ' bytes)' : int(v); }
    function about(n) { return opts.about ? opts.about(n, label) : label(n.value) + ', ' + pct(n.value, root.value) + ' of all'; }
    function draw() {
      box.textContent = '';
      var top = zoom || root, q = search.value.trim().toLowerCase(), hit = 0, depthMax = 0;
      function walk(n, x, depth, under) {
        var w = n.value / top.value;
        if (w < 0.002) return;
        depthMax = Math.max(depthMax, depth);
        var m = q && n.name.toLowerCase().indexOf(q) >= 0;
        if (m && !under) hit += n.value;
        var p = paint(n), cls = [p.cls, q ? (m ? 'match' : 'dim') : null].filter(Boolean).join(' ');
        var d = h('div', {
          cls: cls || null, title: n.name + ': ' + about(n) + (n.obj ? ' (object ' + n.obj + ')' : ''),
          style: 'left:' + (100 * x).toFixed(4) + '%;width:' + (100 * w).toFixed(4) + '%;top:' + depth * 19 + 'px;background:' + p.colour, text: n.name
        });
        d.addEventListener('click', function () {
          zoom = n === root ? null : n;
          info.textContent = '';
          add(info, [n.name + ': ' + about(n) + ' ', n.obj && opts.object ? opts.object(n.obj) : null]);
          draw();
        });
        box.appendChild(d);
        var kids = Object.keys(n.kids).map(function (k) { return n.kids[k]; }).sort(function (a, b) { return b.value - a.value; });
        var cx = x;
        kids.forEach(function (k) { walk(k, cx, depth + 1, under || m); cx += k.value / top.value; });
      }
      if (top.value > 0) walk(top, 0, 0, false);
      else if (opts.empty) add(box, note(opts.empty(cost, top)));
      box.style.height = top.value > 0 ? (depthMax + 1) * 19 + 2 + 'px' : '';
      matched.textContent = q ? 'matched: ' + pct(hit, top.value) + ' of ' + cost : '';
    }
    select.addEventListener('change', function () { cost = select.value; root = trees[cost]; zoom = null; draw(); });
    search.addEventListener('input', draw);
    reset.addEventListener('click', function () { zoom = null; draw(); });
    add(el, h('div', { cls: 'tools' }, 'cost ', select, search, matched, reset));
    if (opts.note) add(el, note(opts.note));
    add(el, box);
    add(el, info);
    draw();
  }
  function flameColour(name) {
    var x = 0;
    for (var i = 0; i < name.length; i++) x = (x * 33 + name.charCodeAt(i)) % 1000;
    return 'hsl(' + (10 + x % 40) + ',' + (70 + x % 20) + '%,' + (62 + x % 12) + '%)';
  }

  /* ---- The page: a tab bar and one section per tab, each drawn by its function ---- */
  function startPage() {
    var nav = document.getElementById('tabs'), app = document.getElementById('app');
    TABS.forEach(function (t) {
      t.link = h('a', { href: '#' + t.id, text: t.label, cls: t.has ? null : 'empty' });
      t.section = h('section', { cls: 'tab', id: 'tab-' + t.id }, h('h2', { cls: 'tabtitle', text: t.label }));
      nav.appendChild(t.link);
      app.appendChild(t.section);
    });
    TABS.forEach(function (t) {
      try { t.draw(t.section); } catch (e) { fail('JavaScript error in tab ' + t.label + ': ' + e + (e.stack ? '\n' + e.stack : '')); }
    });
    window.addEventListener('hashchange', show);
    show();
  }
