(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('tp-data').textContent);
  var root = document.documentElement, drawn = 0, lines = {};
  var PAL = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#edc948', '#76b7b2', '#ff9da7',
             '#9c755f', '#86bc4a', '#bab0ac', '#d37295', '#6b8fd6'];
  var colour = {}, ncolour = 0, legend = document.getElementById('tp-legend');
  var tip = document.getElementById('tp-tip');
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function colourOf(label) {
    if (!Object.prototype.hasOwnProperty.call(colour, label)) {
      colour[label] = PAL[ncolour++ % PAL.length];
      var s = el('span'), w = el('span', 'sw');
      w.style.background = colour[label];
      s.appendChild(w);
      s.appendChild(document.createTextNode(label || '(none)'));
      legend.appendChild(s);
    }
    return colour[label];
  }
  function human(b) {
    var u = ['B', 'KB', 'MB', 'GB', 'TB'], k = 0;
    while (b >= 1000 && k < u.length - 1) { b /= 1000; k++; }
    return (k ? b.toFixed(b < 10 ? 2 : 1) : String(b)) + ' ' + u[k];
  }
  function drawPanel(col, p, width) {
    var n = p.names.length, r = p.r, steps = Math.max(p.steps, 1);
    var box = el('div', 'panel');
    box.appendChild(el('h3', '', p.title + ': ' + n + ' tensors, arena ' + human(p.arena) +
                       ', lower bound ' + human(p.lower)));
    var L = 64, R = 8, T = 14, B = 22, H = 280, W = Math.max(width, 240);
    var pw = W - L - R, ph = H - T - B, ymax = Math.max(p.arena, p.lower, 1);
    for (var i = 0; i < n; i++) ymax = Math.max(ymax, r[5 * i + 2] + r[5 * i + 3]);
    ymax *= 1.08;
    var dpr = window.devicePixelRatio || 1;
    var cv = el('canvas'), hl = el('canvas', 'hl');
    [cv, hl].forEach(function (c) {
      c.width = Math.round(W * dpr); c.height = Math.round(H * dpr);
      c.style.width = W + 'px'; c.style.height = H + 'px';
    });
    hl.style.top = '0';
    var wrap = el('div', 'panel');
    wrap.appendChild(cv); wrap.appendChild(hl);
    box.appendChild(wrap);
    col.appendChild(box);
    var g = cv.getContext('2d');
    g.scale(dpr, dpr);
    function X(t) { return L + t / steps * pw; }
    function Y(b) { return T + ph - b / ymax * ph; }
    g.fillStyle = '#f7f7f7'; g.fillRect(L, T, pw, ph);
    /* bands: the stacked buffers, in alternating shades (the space a buffer holds) */
    for (i = 0; 2 * i < p.bands.length; i++) {
      g.fillStyle = i % 2 ? '#e4e4e4' : '#eeeeee';
      var by0 = Y(p.bands[2 * i] + p.bands[2 * i + 1]), by1 = Y(p.bands[2 * i]);
      g.fillRect(L, by0, pw, Math.max(by1 - by0, 1));
    }
    /* one fill colour at a time: rectangles grouped by label */
    var byLabel = p.labels.map(function () { return []; });
    for (i = 0; i < n; i++) byLabel[r[5 * i + 4]].push(i);
    var outline = n <= 4000;
    byLabel.forEach(function (list, k) {
      g.fillStyle = colourOf(p.labels[k]);
      list.forEach(function (i) {
        var x0 = X(r[5 * i]), x1 = X(r[5 * i + 1] + 1);
        var y1 = Y(r[5 * i + 2]), y0 = Y(r[5 * i + 2] + r[5 * i + 3]);
        g.fillRect(x0, y0, Math.max(x1 - x0, 1), Math.max(y1 - y0, 1));
        if (outline && x1 - x0 > 3 && y1 - y0 > 3) {
          g.strokeStyle = '#fff'; g.lineWidth = 1;
          g.strokeRect(x0 + 0.5, y0 + 0.5, x1 - x0 - 1, y1 - y0 - 1);
        }
        drawn++;
      });
    });
    /* names inside the rectangles that have room for them */
    if (outline) {
      g.font = '11px sans-serif'; g.fillStyle = '#fff'; g.textBaseline = 'middle';
      g.textAlign = 'left';
      for (i = 0; i < n; i++) {
        var nx0 = X(r[5 * i]), nx1 = X(r[5 * i + 1] + 1);
        var ny1 = Y(r[5 * i + 2]), ny0 = Y(r[5 * i + 2] + r[5 * i + 3]);
        if (ny1 - ny0 < 13 || g.measureText(p.names[i]).width > nx1 - nx0 - 6) continue;
        g.fillText(p.names[i], nx0 + 3, (ny0 + ny1) / 2);
      }
    }
    /* axes */
    g.fillStyle = '#444'; g.strokeStyle = '#888'; g.lineWidth = 1; g.font = '11px sans-serif';
    g.strokeRect(L, T, pw, ph);
    g.textAlign = 'right'; g.textBaseline = 'middle';
    for (var k = 0; k <= 4; k++) {
      var b = ymax / 1.08 * k / 4;
      g.fillText(human(Math.round(b)), L - 4, Y(b));
    }
    g.textAlign = 'center'; g.textBaseline = 'top';
    for (k = 0; k <= 4; k++) {
      var t = Math.round((steps - 1) * k / 4);
      g.textAlign = k === 4 ? 'right' : 'center';
      g.fillText(String(t), k === 4 ? L + pw : X(t + 0.5), T + ph + 4);
    }
    g.textAlign = 'right'; g.fillText('step', L - 4, T + ph + 4);
    /* the two lines, and the peak step */
    function hline(b, style, dash, text, name) {
      g.save(); g.strokeStyle = style; g.lineWidth = 1.5; g.setLineDash(dash);
      g.beginPath(); g.moveTo(L, Y(b)); g.lineTo(L + pw, Y(b)); g.stroke(); g.restore();
      g.fillStyle = style; g.textAlign = 'left'; g.textBaseline = 'bottom';
      g.fillText(text, L + 4 + (name === 'peak' ? pw / 2 : 0), Y(b) - 1);
      lines[name] = 1;
    }
    hline(p.arena, '#d62728', [], 'arena ' + human(p.arena), 'arena');
    hline(p.lower, '#1f5fbf', [6, 4], 'lower bound ' + human(p.lower), 'peak');
    if (p.peak.bytes > 0) {
      g.save(); g.strokeStyle = '#333'; g.setLineDash([2, 3]); g.beginPath();
      g.moveTo(X(p.peak.step + 0.5), T); g.lineTo(X(p.peak.step + 0.5), T + ph); g.stroke();
      g.restore();
    }
    /* hover: the rectangle under the pointer, found by a scan of the flat array */
    var h = hl.getContext('2d');
    h.scale(dpr, dpr);
    function find(mx, my) {
      var t = Math.floor((mx - L) / pw * steps), b = (T + ph - my) / ph * ymax;
      var slack = ymax / ph * 1.5, best = -1, bestSize = Infinity;
      if (t < 0 || t >= steps || b < -slack) return -1;
      /* the rectangle that holds the point, else the smallest within a pixel or so */
      for (var i = 0; i < n; i++) {
        var o = 5 * i;
        if (r[o] > t || t > r[o + 1]) continue;
        if (r[o + 2] <= b && b < r[o + 2] + r[o + 3]) return i;
        if (r[o + 2] - slack <= b && b < r[o + 2] + r[o + 3] + slack && r[o + 3] < bestSize) {
          best = i; bestSize = r[o + 3];
        }
      }
      return best;
    }
    cv.addEventListener('mousemove', function (ev) {
      var rc = cv.getBoundingClientRect(), i = find(ev.clientX - rc.left, ev.clientY - rc.top);
      h.clearRect(0, 0, W, H);
      if (i < 0) { tip.style.display = 'none'; return; }
      var o = 5 * i, x0 = X(r[o]), x1 = X(r[o + 1] + 1);
      var y0 = Y(r[o + 2] + r[o + 3]), y1 = Y(r[o + 2]);
      h.strokeStyle = '#000'; h.lineWidth = 2;
      h.strokeRect(x0, y0, Math.max(x1 - x0, 1), Math.max(y1 - y0, 1));
      var a = p.alias[String(i)];
      tip.textContent = p.names[i] + '\n' + (p.labels[r[o + 4]] || '(none)') +
        '\nsize ' + r[o + 3] + ' B (' + human(r[o + 3]) + ')' +
        '\nsteps ' + r[o] + ' .. ' + r[o + 1] + '\noffset ' + r[o + 2] +
        (a ? '\nin place: ' + a : '');
      tip.style.left = (ev.clientX + 12) + 'px'; tip.style.top = (ev.clientY + 12) + 'px';
      tip.style.display = 'block';
    });
    /* #probe=PANEL:RECT,... in the address: hover each rectangle's centre in turn and write
       the tooltips into data-probe (lines joined by " | ", tooltips by " || "), so that a
       checker can test hovering */
    probes[p.index] = function (i) {
      var rc = cv.getBoundingClientRect(), o = 5 * i;
      var cx = (X(r[o]) + X(r[o + 1] + 1)) / 2, cy = (Y(r[o + 2]) + Y(r[o + 2] + r[o + 3])) / 2;
      cv.dispatchEvent(new MouseEvent('mousemove', {clientX: rc.left + cx, clientY: rc.top + cy}));
      return tip.style.display === 'block' ? tip.textContent.split('\n').join(' | ') : '';
    };
    cv.addEventListener('mouseleave', function () {
      h.clearRect(0, 0, W, H); tip.style.display = 'none';
    });
    peakTable(box, p);
  }
  function peakTable(box, p) {
    var live = p.peak.live, top = Math.min(live.length, 12), rest = 0;
    box.appendChild(el('div', '', 'Live at the peak: step ' + p.peak.step + ', ' +
                       human(p.peak.bytes) + ' in ' + live.length + ' tensors, largest first'));
    var tb = el('table', 'peak'), tr = el('tr');
    ['share', 'bytes', 'label', 'name'].forEach(function (s, k) {
      tr.appendChild(el('th', k >= 2 ? 'n' : '', s));
    });
    tb.appendChild(tr);
    for (var k = 0; k < live.length; k++) {
      var i = live[k], size = p.r[5 * i + 3];
      if (k >= top) { rest += size; continue; }
      tr = el('tr');
      tr.appendChild(el('td', '', (100 * size / p.peak.bytes).toFixed(1) + '%'));
      tr.appendChild(el('td', '', human(size)));
      var lab = p.labels[p.r[5 * i + 4]], td = el('td', 'n'), w = el('span', 'sw');
      w.style.background = colourOf(lab);
      td.appendChild(w); td.appendChild(document.createTextNode(lab));
      tr.appendChild(td);
      tr.appendChild(el('td', 'n', p.names[i]));
      tb.appendChild(tr);
    }
    if (live.length > top) {
      tr = el('tr');
      tr.appendChild(el('td', '', (100 * rest / p.peak.bytes).toFixed(1) + '%'));
      tr.appendChild(el('td', '', human(rest)));
      tr.appendChild(el('td', 'n', ''));
      tr.appendChild(el('td', 'n', (live.length - top) + ' more'));
      tb.appendChild(tr);
    }
    box.appendChild(tb);
  }
  var probes = [], groups = [], members = {}, host = document.getElementById('tp-panels');
  D.panels.forEach(function (p, k) {
    p.index = k;
    if (!Object.prototype.hasOwnProperty.call(members, p.group)) {
      members[p.group] = [];
      groups.push(p.group);
    }
    members[p.group].push(p);
  });
  var avail = Math.max(document.documentElement.clientWidth - 24, 480);
  var width = Math.floor((avail - 16 * (groups.length - 1)) / Math.max(groups.length, 1));
  groups.forEach(function (name) {
    var col = el('div', 'col');
    if (name) col.appendChild(el('h2', '', name));
    host.appendChild(col);
    members[name].forEach(function (p) { drawPanel(col, p, width); });
  });
  root.setAttribute('data-drawn-count', String(drawn));
  root.setAttribute('data-lines', Object.keys(lines).sort().join(','));
  root.setAttribute('data-panels', String(D.panels.length));
  if (/^#probe=\d+:\d+(,\d+:\d+)*$/.test(window.location.hash)) {
    root.setAttribute('data-probe', window.location.hash.slice(7).split(',').map(function (q) {
      var pr = probes[+q.split(':')[0]];
      return pr ? pr(+q.split(':')[1]) : '';
    }).join(' || '));
  }
  root.setAttribute('data-drawn', '1');
})();
