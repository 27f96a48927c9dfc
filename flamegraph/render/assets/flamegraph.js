// flamegraph-perf: the interactive part of every SVG, inlined verbatim (no network, no libraries).
// Frames are <g><title>NAME (INFO)</title><rect x y width height fill/></g> in depth-first order
// inside <svg id="view">, whose viewBox is in the profile's unit: zooming changes that viewBox.
// State in the URL: ?x=&y= (the zoomed frame's rect attributes), ?s= (search), ?i=1 (ignore case).
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var S = JSON.parse(document.getElementById("settings").textContent);
  var view = document.getElementById("view");
  var framesEl = document.getElementById("frames");
  var labelsEl = document.getElementById("labels");
  var details = document.getElementById("details");
  var matchedEl = document.getElementById("matched");
  var unzoomBtn = document.getElementById("unzoom");
  var searchBtn = document.getElementById("search");
  var icBtn = document.getElementById("ignorecase");
  var graphHeight = parseFloat(view.getAttribute("height"));

  // --- the frames, read once ---------------------------------------------------------------
  var groups = framesEl.children;
  var n = groups.length;
  var X = new Float64Array(n), W = new Float64Array(n), D = new Int32Array(n);
  var parent = new Int32Array(n), end = new Int32Array(n), posInRow = new Int32Array(n);
  var rects = [], titles = [], names = [], fills = [], xAttr = [], yAttr = [], rows = [];
  var indexByNode = new Map();
  (function readFrames() {
    var open = [];
    for (var i = 0; i < n; i++) {
      var g = groups[i];
      indexByNode.set(g, i);
      var title = g.firstElementChild.textContent;
      var rect = g.lastElementChild;
      rects.push(rect);
      titles.push(title);
      names.push(title.slice(0, title.lastIndexOf(" (")));
      fills.push(rect.getAttribute("fill"));
      xAttr.push(rect.getAttribute("x"));
      yAttr.push(rect.getAttribute("y"));
      X[i] = parseFloat(xAttr[i]);
      W[i] = parseFloat(rect.getAttribute("width"));
      var y = parseFloat(yAttr[i]);
      D[i] = S.inverted ? Math.round(y / S.frameHeight) : S.maxDepth - Math.round((y - 1) / S.frameHeight);
      while (open.length && D[open[open.length - 1]] >= D[i]) end[open.pop()] = i;
      parent[i] = open.length ? open[open.length - 1] : -1;
      open.push(i);
      if (!rows[D[i]]) rows[D[i]] = [];
      posInRow[i] = rows[D[i]].length;
      rows[D[i]].push(i);
      g.setAttribute("tabindex", i === 0 ? "0" : "-1");
      g.setAttribute("role", "button");
      g.setAttribute("aria-roledescription", "frame");
    }
    while (open.length) end[open.pop()] = n;
  })();

  var zoomed = 0;          // index of the zoomed frame (0: the root, not zoomed)
  var raised = [];         // ancestors widened for the current zoom
  var focused = 0;         // the frame in the tab order
  var term = null;         // current search
  var ignoreCase = false;
  var matches = null;      // Uint8Array of matched frames, or null

  function indexOf(node) {
    while (node && node.parentNode !== framesEl) node = node.parentNode;
    return node ? indexByNode.get(node) : -1;
  }

  function isAncestor(a, i) {
    return a < i && i < end[a];
  }

  function visible(i) {
    return i === zoomed || isAncestor(zoomed, i) || isAncestor(i, zoomed);
  }

  function percent(part, whole) {
    var p = 100 * part / whole;
    return p === 100 ? "100" : p.toFixed(2);
  }

  // --- details -----------------------------------------------------------------------------
  function describe(i) {
    var text = S.nameType + " " + titles[i];
    if (zoomed !== 0 && (i === zoomed || isAncestor(zoomed, i))) {
      text += " [" + percent(W[i], W[zoomed]) + "% of the zoomed frame]";
    }
    return text;
  }

  function show(i) {
    details.textContent = i < 0 ? " " : describe(i);
  }

  // --- labels ------------------------------------------------------------------------------
  var measure = (function () {
    var canvas = document.createElementNS("http://www.w3.org/1999/xhtml", "canvas");
    var ctx = canvas.getContext && canvas.getContext("2d");
    var probe = document.getElementById("details");
    var style = window.getComputedStyle(probe);
    if (ctx) ctx.font = S.fontSize + "px " + style.fontFamily;
    return function (text) {
      return ctx ? ctx.measureText(text).width : text.length * S.fontSize * 0.62;
    };
  })();

  function fit(text, width) {
    if (width < S.fontSize) return "";
    if (measure(text) <= width) return text;
    var lo = 0, hi = text.length;   // longest prefix p with measure(p + "..") <= width
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (measure(text.slice(0, mid) + "..") <= width) lo = mid; else hi = mid - 1;
    }
    return lo > 0 ? text.slice(0, lo) + ".." : "";
  }

  function relabel() {
    var start = X[zoomed], width = W[zoomed], scale = S.plotWidth / width;
    var pad = (S.frameHeight - 1) / 2 + S.fontSize * 0.35;
    var fragment = document.createDocumentFragment();
    for (var i = 0; i < n; i++) {
      var px, pw;
      if (i === zoomed || isAncestor(i, zoomed)) {
        px = 0; pw = S.plotWidth;
      } else if (isAncestor(zoomed, i)) {
        px = (X[i] - start) * scale; pw = W[i] * scale;
      } else {
        continue;
      }
      if (pw < 12) continue;
      var label = fit(names[i], pw - 6);
      if (!label) continue;
      var t = document.createElementNS(SVGNS, "text");
      t.setAttribute("x", (S.xpad + px + 3).toFixed(2));
      t.setAttribute("y", (S.graphTop + parseFloat(yAttr[i]) + pad).toFixed(2));
      t.textContent = label;
      fragment.appendChild(t);
    }
    labelsEl.textContent = "";
    labelsEl.appendChild(fragment);
  }

  // --- URL state ---------------------------------------------------------------------------
  function params() {
    return new URLSearchParams(window.location.search);
  }

  function saveParams(p) {
    var query = p.toString();
    try {
      history.replaceState(null, "", query ? "?" + query : window.location.pathname);
    } catch (e) { /* some viewers forbid it: the view still works */ }
  }

  // --- zoom --------------------------------------------------------------------------------
  // Zooming moves the zoomed frame's subtree to start at 0 and hides every frame that is neither in
  // it nor an ancestor: SVG coordinates are single precision, so a tiny frame far along a large
  // total (off-CPU microseconds) must not be drawn at its absolute offset.
  var shownX = xAttr.slice(), hidden = new Uint8Array(n);
  function zoom(i) {
    var s = X[i], last = end[i];
    for (var k = 0; k < raised.length; k++) {
      var a = raised[k];
      rects[a].setAttribute("width", String(W[a]));
      groups[a].classList.remove("parent");
    }
    raised = [];
    zoomed = i;
    for (var j = 0; j < n; j++) {
      var inTree = j >= i && j < last;
      var ancestor = !inTree && j < i && i < end[j];
      if (hidden[j] === ((inTree || ancestor) ? 1 : 0)) {
        hidden[j] ^= 1;
        groups[j].classList.toggle("hide", hidden[j] === 1);
      }
      var x = ancestor ? "0" : inTree ? (i === 0 ? xAttr[j] : String(X[j] - s)) : null;
      if (x !== null && x !== shownX[j]) {
        rects[j].setAttribute("x", x);
        shownX[j] = x;
      }
      if (ancestor) {
        rects[j].setAttribute("width", String(W[i]));
        groups[j].classList.add("parent");
        raised.push(j);
      }
    }
    view.setAttribute("viewBox", "0 0 " + W[i] + " " + graphHeight);
    unzoomBtn.classList.toggle("hide", i === 0);
    relabel();
    if (term !== null) updateMatched();
    var q = params();
    if (i === 0) {
      q.delete("x"); q.delete("y");
    } else {
      q.set("x", xAttr[i]); q.set("y", yAttr[i]);
    }
    saveParams(q);
  }

  function resetZoom() {
    zoom(0);
  }

  // --- search ------------------------------------------------------------------------------
  function clearHighlight() {
    if (!matches) return;
    for (var i = 0; i < n; i++) if (matches[i]) rects[i].setAttribute("fill", fills[i]);
    matches = null;
  }

  function coveredWeight(from, to) {
    // Weight of the matched frames in [from, to), nested matches counted once (depth-first order).
    var sum = 0;
    for (var i = from; i < to;) {
      if (matches[i]) { sum += W[i]; i = end[i]; } else i++;
    }
    return sum;
  }

  function updateMatched() {
    var text = "Matched: " + percent(coveredWeight(0, n), W[0]) + "%";
    if (zoomed !== 0) {
      var inZoom = coveredWeight(zoomed, end[zoomed]);
      for (var p = parent[zoomed]; p >= 0; p = parent[p]) if (matches[p]) inZoom = W[zoomed];
      text += " (" + percent(inZoom, W[zoomed]) + "% of the zoomed frame)";
    }
    matchedEl.textContent = text;
    matchedEl.classList.remove("hide");
  }

  function search(pattern) {
    var re;
    try {
      re = new RegExp(pattern, ignoreCase ? "i" : "");
    } catch (e) {
      matchedEl.textContent = "Invalid regular expression: " + pattern;
      matchedEl.classList.remove("hide");
      return;
    }
    clearHighlight();
    term = pattern;
    matches = new Uint8Array(n);
    for (var i = 0; i < n; i++) {
      if (re.test(names[i])) {
        matches[i] = 1;
        rects[i].setAttribute("fill", S.searchColor);
      }
    }
    searchBtn.classList.add("show");
    searchBtn.textContent = "Reset Search";
    updateMatched();
    var q = params();
    q.set("s", pattern);
    if (ignoreCase) q.set("i", "1"); else q.delete("i");
    saveParams(q);
  }

  function resetSearch() {
    clearHighlight();
    term = null;
    searchBtn.classList.remove("show");
    searchBtn.textContent = "Search";
    matchedEl.classList.add("hide");
    matchedEl.textContent = " ";
    var q = params();
    q.delete("s"); q.delete("i");
    saveParams(q);
  }

  function searchPrompt() {
    if (term !== null) { resetSearch(); return; }
    var pattern = window.prompt("Search for a regular expression (e.g. ^dnnl, gemm|sgemm)" +
      (ignoreCase ? ", ignoring case" : "") + "\nCtrl-I toggles case sensitivity", "");
    if (pattern) search(pattern);
  }

  function toggleIgnoreCase() {
    ignoreCase = !ignoreCase;
    icBtn.classList.toggle("show", ignoreCase);
    if (term !== null) search(term);
  }

  // --- keyboard ----------------------------------------------------------------------------
  function focusFrame(i) {
    if (i < 0 || i >= n) return;
    groups[focused].setAttribute("tabindex", "-1");
    focused = i;
    groups[i].setAttribute("tabindex", "0");
    groups[i].focus();
    show(i);
  }

  function firstVisibleChild(i) {
    for (var c = i + 1; c < end[i]; c = end[c]) if (visible(c) && D[c] === D[i] + 1) return c;
    return -1;
  }

  function neighbour(i, step) {
    var row = rows[D[i]];
    for (var k = posInRow[i] + step; k >= 0 && k < row.length; k += step) if (visible(row[k])) return row[k];
    return -1;
  }

  function onFrameKey(e) {
    var i = indexOf(e.target);
    if (i < 0) return;
    var deeper = S.inverted ? "ArrowDown" : "ArrowUp";
    var shallower = S.inverted ? "ArrowUp" : "ArrowDown";
    var next = -2;
    if (e.key === "Enter" || e.key === " ") { zoom(i); next = i; }
    else if (e.key === deeper) next = firstVisibleChild(i);
    else if (e.key === shallower) next = parent[i];
    else if (e.key === "ArrowLeft") next = neighbour(i, -1);
    else if (e.key === "ArrowRight") next = neighbour(i, 1);
    else if (e.key === "Home") next = 0;
    else return;
    e.preventDefault();
    e.stopPropagation();
    if (next >= 0) focusFrame(next);
  }

  function activate(e, action) {
    if (e.type === "click" || e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      e.stopPropagation();
      action();
    }
  }

  // --- wiring ------------------------------------------------------------------------------
  framesEl.addEventListener("click", function (e) {
    var i = indexOf(e.target);
    if (i < 0) return;
    zoom(i);
    focusFrame(i);
  });
  framesEl.addEventListener("mouseover", function (e) { show(indexOf(e.target)); });
  framesEl.addEventListener("mouseout", function () { show(-1); });
  framesEl.addEventListener("focusin", function (e) { show(indexOf(e.target)); });
  framesEl.addEventListener("keydown", onFrameKey);
  [[unzoomBtn, resetZoom], [searchBtn, searchPrompt], [icBtn, toggleIgnoreCase]].forEach(function (pair) {
    pair[0].setAttribute("tabindex", "0");
    pair[0].setAttribute("role", "button");
    pair[0].addEventListener("click", function (e) { activate(e, pair[1]); });
    pair[0].addEventListener("keydown", function (e) { activate(e, pair[1]); });
  });
  icBtn.setAttribute("aria-label", "Toggle case-insensitive search");
  window.addEventListener("keydown", function (e) {
    if (e.key === "F3" || (e.ctrlKey && (e.key === "f" || e.key === "F"))) {
      e.preventDefault();
      searchPrompt();
    } else if (e.ctrlKey && (e.key === "i" || e.key === "I")) {
      e.preventDefault();
      toggleIgnoreCase();
    } else if (e.key === "Escape") {
      resetZoom();
    }
  });

  // --- start: labels measured by the browser, then the view the URL asks for ---------------
  var start = params();
  if (start.get("i") === "1") { ignoreCase = true; icBtn.classList.add("show"); }
  var target = 0;
  if (start.has("x") && start.has("y")) {
    for (var i = 0; i < n; i++) {
      if (xAttr[i] === start.get("x") && yAttr[i] === start.get("y")) { target = i; break; }
    }
  }
  zoom(target);
  if (start.get("s")) search(start.get("s"));

  // For tests and tools: the state, without reaching into closures.
  window.flamegraph = {
    zoom: zoom, resetZoom: resetZoom, search: search, resetSearch: resetSearch,
    toggleIgnoreCase: toggleIgnoreCase,
    state: function () { return { zoomed: zoomed, term: term, ignoreCase: ignoreCase, frames: n }; }
  };
})();
