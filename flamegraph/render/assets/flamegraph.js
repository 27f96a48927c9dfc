// flamegraph-perf: the interactive part of every SVG, inlined verbatim (no network, no libraries).
// Frames are <g><title>NAME (INFO)</title><rect x y width height fill/></g> in depth-first order
// inside <svg id="view">, whose viewBox is in the profile's unit: zooming changes that viewBox.
// State in the URL: ?x=&y= (the zoomed frame's rect attributes), ?s= (search), ?i=1 (ignore case).
// The static view (no script) shows the capture facts below everything; here they fold into a
// block under the title that the reader opens, so the graph and the details line fit one screen.
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg", XHTML = "http://www.w3.org/1999/xhtml";
  var S = JSON.parse(document.getElementById("settings").textContent);
  var root = document.getElementById("flamegraph");
  var background = document.getElementById("background-rect");
  var view = document.getElementById("view");
  var framesEl = document.getElementById("frames");
  var labelsEl = document.getElementById("labels");
  var belowEl = document.getElementById("below");
  var factsEl = document.getElementById("facts");
  var details = document.getElementById("details");
  var unzoomBtn = document.getElementById("unzoom");
  var graphHeight = parseFloat(view.getAttribute("height"));
  var HINT = "Hover a frame for details \u00b7 click to zoom \u00b7 Ctrl-F to search";

  // --- the frames, read once ---------------------------------------------------------------
  var groups = framesEl.children;
  var n = groups.length;
  var X = new Float64Array(n), W = new Float64Array(n), D = new Int32Array(n);
  var parent = new Int32Array(n), end = new Int32Array(n), posInRow = new Int32Array(n);
  var deepest = new Int32Array(n);  // the largest depth in each frame's subtree
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
    for (var j = n - 1; j >= 0; j--) {
      if (D[j] > deepest[j]) deepest[j] = D[j];
      if (parent[j] >= 0 && deepest[j] > deepest[parent[j]]) deepest[parent[j]] = deepest[j];
    }
  })();

  var zoomed = 0;          // index of the zoomed frame (0: the root, not zoomed)
  var raised = [];         // ancestors widened for the current zoom
  var focused = 0;         // the frame in the tab order
  var term = null;         // current search
  var ignoreCase = false;
  var matches = null;      // Uint8Array of matched frames, or null
  var current = -1;        // the match next/previous stepped to
  var collapse = 0;        // pixels of empty rows above a zoomed subtree, taken out of the page
  var factsOpen = false;

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

  // --- text measured by the browser ----------------------------------------------------------
  var measure = (function () {
    var canvas = document.createElementNS(XHTML, "canvas");
    var ctx = canvas.getContext && canvas.getContext("2d");
    var style = window.getComputedStyle(details);
    return function (text, size) {
      if (!ctx) return text.length * (size || S.fontSize) * 0.62;
      ctx.font = (size || S.fontSize) + "px " + style.fontFamily;
      return ctx.measureText(text).width;
    };
  })();

  function fit(text, width, minPrefix) {
    if (width < S.fontSize) return "";
    if (measure(text) <= width) return text;
    var lo = 0, hi = text.length;   // longest prefix p with measure(p + "..") <= width
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (measure(text.slice(0, mid) + "..") <= width) lo = mid; else hi = mid - 1;
    }
    return lo >= (minPrefix || 1) ? text.slice(0, lo) + ".." : "";
  }

  // --- details: under the title, where the eye is ----------------------------------------------
  function describe(i) {
    var text = S.nameType + " " + titles[i];
    if (zoomed !== 0 && (i === zoomed || isAncestor(zoomed, i))) {
      text += " [" + percent(W[i], W[zoomed]) + "% of the zoomed frame]";
    }
    return text;
  }

  function show(i) {
    var text = i < 0 ? HINT : describe(i);
    details.textContent = fit(text, S.plotWidth) || text;
    details.classList.toggle("hint", i < 0);
  }

  // --- labels ------------------------------------------------------------------------------
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
      var label = fit(names[i], pw - 6, S.minPrefix);
      if (!label) continue;
      var t = document.createElementNS(SVGNS, "text");
      t.setAttribute("x", (S.xpad + px + 3).toFixed(2));
      t.setAttribute("y", (S.graphTop + parseFloat(yAttr[i]) - collapse + pad).toFixed(2));
      t.textContent = label;
      fragment.appendChild(t);
    }
    labelsEl.textContent = "";
    labelsEl.appendChild(fragment);
  }

  // --- page height: the graph shrinks to the zoomed subtree, the facts fold away ----------------
  function factsHeight() {
    return factsEl ? S.height - S.factsTop : 0;
  }

  function resizePage() {
    var height = S.height - collapse - factsHeight();
    if (factsOpen) height = Math.max(height, S.detailsY + 8 + factsHeight() + 8);
    root.setAttribute("height", height);
    root.setAttribute("viewBox", "0 0 " + S.width + " " + height);
    background.setAttribute("height", height);
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
  // total (off-CPU microseconds) must not be drawn at its absolute offset. The empty rows above the
  // subtree are taken out, so the zoomed frame and its ancestors move up into view.
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
    collapse = S.inverted ? 0 : (S.maxDepth - deepest[i]) * S.frameHeight;
    view.setAttribute("viewBox", "0 " + collapse + " " + W[i] + " " + (graphHeight - collapse));
    view.setAttribute("height", graphHeight - collapse);
    if (belowEl) belowEl.setAttribute("transform", collapse ? "translate(0," + (-collapse) + ")" : "");
    resizePage();
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

  // --- capture facts: a block under the title the reader opens ------------------------------
  var factsBtn = null;
  function setUpFacts() {
    if (!factsEl) return;
    var panel = document.createElementNS(SVGNS, "rect");
    panel.id = "facts-panel";
    panel.setAttribute("x", S.xpad - 6);
    panel.setAttribute("y", S.factsTop);
    panel.setAttribute("width", S.plotWidth + 12);
    panel.setAttribute("height", factsHeight());
    panel.setAttribute("rx", 3);
    factsEl.insertBefore(panel, factsEl.firstChild);
    factsEl.setAttribute("transform", "translate(0," + (S.detailsY + 8 - S.factsTop) + ")");
    factsEl.classList.add("hide");
    factsBtn = document.createElementNS(SVGNS, "text");
    factsBtn.id = "facts-toggle";
    factsBtn.setAttribute("class", "control");
    factsBtn.setAttribute("x", S.xpad);
    factsBtn.setAttribute("y", S.titleY);
    factsBtn.textContent = "\u25b8 Capture facts";
    unzoomBtn.parentNode.insertBefore(factsBtn, unzoomBtn);
    unzoomBtn.setAttribute("x", S.xpad + measure(factsBtn.textContent) + 18);
    button(factsBtn, toggleFacts, "Show or hide the capture facts");
  }

  function toggleFacts() {
    if (!factsEl) return;
    factsOpen = !factsOpen;
    factsEl.classList.toggle("hide", !factsOpen);
    factsBtn.textContent = (factsOpen ? "\u25be" : "\u25b8") + " Capture facts";
    factsBtn.setAttribute("aria-expanded", String(factsOpen));
    resizePage();
  }

  // --- search: a box that filters as you type --------------------------------------------------
  var ui = null, input = null, results = null, matchedEl = null, listEl = null, icBtn = null, timer = 0;

  function html(tag, attrs, text) {
    var el = document.createElementNS(XHTML, tag);
    for (var k in attrs) el.setAttribute(k, attrs[k]);
    if (text) el.textContent = text;
    return el;
  }

  function setUpSearch() {
    var fo = document.createElementNS(SVGNS, "foreignObject");
    fo.id = "search-box";
    fo.setAttribute("x", S.width - S.xpad - 340);
    fo.setAttribute("y", S.titleY - 16);
    fo.setAttribute("width", 340);
    fo.setAttribute("height", 26);
    ui = html("div", { id: "search-ui" });
    var bar = html("div", { id: "search-bar" });
    var examples = S.searchExamples.join("|");
    if (examples.length > 26) examples = S.searchExamples[0];
    input = html("input", { id: "search-input", type: "search", spellcheck: "false", autocomplete: "off",
      placeholder: examples ? "Search, e.g. " + examples : "Search (regular expression)",
      "aria-label": "Search functions (regular expression)",
      title: "Regular expression; Enter: next match, Shift+Enter: previous, Esc: clear; Ctrl-F twice: the browser's find" });
    var prev = html("button", { id: "search-prev", type: "button", title: "Previous match (Shift+Enter)",
      "aria-label": "Previous match" }, "\u2039");
    var next = html("button", { id: "search-next", type: "button", title: "Next match (Enter)",
      "aria-label": "Next match" }, "\u203a");
    icBtn = html("button", { id: "ignorecase", type: "button", title: "Ignore case (Ctrl-I)",
      "aria-label": "Ignore case", "aria-pressed": "false" }, "Aa");
    bar.appendChild(input); bar.appendChild(prev); bar.appendChild(next); bar.appendChild(icBtn);
    results = html("div", { id: "search-results", hidden: "hidden" });
    matchedEl = html("div", { id: "matched" });
    listEl = html("ol", { id: "search-list" });
    results.appendChild(matchedEl); results.appendChild(listEl);
    ui.appendChild(bar); ui.appendChild(results);
    fo.appendChild(ui);
    root.appendChild(fo);
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        if (input.value) search(input.value); else resetSearch();
      }, 60);
    });
    input.addEventListener("keydown", function (e) {
      if (e.key === "Enter") { e.preventDefault(); clearTimeout(timer); if (input.value !== term) search(input.value); step(e.shiftKey ? -1 : 1); }
      else if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); resetSearch(); input.blur(); }
    });
    prev.addEventListener("click", function () { step(-1); });
    next.addEventListener("click", function () { step(1); });
    icBtn.addEventListener("click", toggleIgnoreCase);
    listEl.addEventListener("click", function (e) {
      var li = e.target.closest("li");
      if (li) { var exact = "^" + li.dataset.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$"; input.value = exact; search(exact); }
    });
  }

  function fitSearchBox() {
    var fo = document.getElementById("search-box");
    fo.setAttribute("height", Math.ceil(ui.getBoundingClientRect().height / scaleY()) + 4);
  }

  function scaleY() {
    var box = root.getBoundingClientRect();
    return box.height / parseFloat(root.getAttribute("height")) || 1;
  }

  function clearHighlight() {
    if (!matches) return;
    for (var i = 0; i < n; i++) if (matches[i]) rects[i].setAttribute("fill", fills[i]);
    if (current >= 0) groups[current].classList.remove("current");
    matches = null;
    current = -1;
  }

  function coveredWeight(from, to) {
    // Weight of the matched frames in [from, to), nested matches counted once (depth-first order).
    var sum = 0;
    for (var i = from; i < to;) {
      if (matches[i]) { sum += W[i]; i = end[i]; } else i++;
    }
    return sum;
  }

  function matchedNames(from, to) {
    // Each matched function's weight in [from, to), its own nested frames counted once; heaviest first.
    var weight = new Map(), until = new Map();
    for (var i = from; i < to; i++) {
      if (!matches[i] || i < (until.get(names[i]) || 0)) continue;
      weight.set(names[i], (weight.get(names[i]) || 0) + W[i]);
      until.set(names[i], end[i]);
    }
    return Array.from(weight.entries()).sort(function (a, b) { return b[1] - a[1] || (a[0] < b[0] ? -1 : 1); });
  }

  function updateMatched() {
    var from = zoomed, to = zoomed === 0 ? n : end[zoomed];
    var count = 0;
    for (var i = from; i < to; i++) if (matches[i]) count++;
    var text = "Matched: " + percent(coveredWeight(0, n), W[0]) + "%";
    if (zoomed !== 0) {
      var inZoom = coveredWeight(zoomed, end[zoomed]);
      for (var p = parent[zoomed]; p >= 0; p = parent[p]) if (matches[p]) inZoom = W[zoomed];
      text += " (" + percent(inZoom, W[zoomed]) + "% of the zoomed frame)";
    }
    text += " \u00b7 " + count + (count === 1 ? " frame" : " frames");
    if (current >= 0) text += " \u00b7 " + (matchIndex(current) + 1) + " of " + count;
    matchedEl.textContent = text;
    listEl.textContent = "";
    matchedNames(from, to).slice(0, 12).forEach(function (pair) {
      var li = html("li", { title: pair[0] });
      li.dataset.name = pair[0];
      li.appendChild(html("span", { "class": "share" }, percent(pair[1], W[zoomed]) + "%"));
      li.appendChild(document.createTextNode(pair[0]));
      listEl.appendChild(li);
    });
    results.hidden = false;
    fitSearchBox();
  }

  function visibleMatches() {
    var list = [];
    for (var i = zoomed, to = zoomed === 0 ? n : end[zoomed]; i < to; i++) if (matches[i]) list.push(i);
    return list;
  }

  function matchIndex(i) {
    return visibleMatches().indexOf(i);
  }

  function step(direction) {
    if (!matches) return;
    var list = visibleMatches();
    if (!list.length) return;
    var at = current >= 0 ? list.indexOf(current) : -1;
    var next = list[((at < 0 ? (direction > 0 ? -1 : 0) : at) + direction + list.length) % list.length];
    if (current >= 0) groups[current].classList.remove("current");
    current = next;
    groups[current].classList.add("current");
    show(current);
    updateMatched();
  }

  function search(pattern) {
    var re;
    try {
      re = new RegExp(pattern, ignoreCase ? "i" : "");
    } catch (e) {
      matchedEl.textContent = "Not a regular expression: " + pattern;
      listEl.textContent = "";
      results.hidden = false;
      fitSearchBox();
      return;
    }
    clearHighlight();
    term = pattern;
    if (input.value !== pattern) input.value = pattern;
    matches = new Uint8Array(n);
    for (var i = 0; i < n; i++) {
      if (re.test(names[i])) {
        matches[i] = 1;
        rects[i].setAttribute("fill", S.searchColor);
      }
    }
    updateMatched();
    var q = params();
    q.set("s", pattern);
    if (ignoreCase) q.set("i", "1"); else q.delete("i");
    saveParams(q);
  }

  function resetSearch() {
    clearHighlight();
    term = null;
    input.value = "";
    results.hidden = true;
    matchedEl.textContent = "";
    listEl.textContent = "";
    fitSearchBox();
    var q = params();
    q.delete("s"); q.delete("i");
    saveParams(q);
  }

  function toggleIgnoreCase() {
    ignoreCase = !ignoreCase;
    icBtn.setAttribute("aria-pressed", String(ignoreCase));
    if (term !== null) search(term);
  }

  function focusSearch() {
    input.focus();
    input.select();
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

  function button(el, action, label) {
    el.setAttribute("tabindex", "0");
    el.setAttribute("role", "button");
    if (label) el.setAttribute("aria-label", label);
    function activate(e) {
      if (e.type === "click" || e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        e.stopPropagation();
        action();
      }
    }
    el.addEventListener("click", activate);
    el.addEventListener("keydown", activate);
  }

  // --- wiring ------------------------------------------------------------------------------
  // The nested <svg> and #frames hold no tab stop of their own: Tab goes to the first frame.
  view.setAttribute("focusable", "false");
  view.setAttribute("tabindex", "-1");
  framesEl.setAttribute("tabindex", "-1");
  framesEl.addEventListener("click", function (e) {
    var i = indexOf(e.target);
    if (i < 0) return;
    zoom(i);
    focusFrame(i);
  });
  framesEl.addEventListener("mouseover", function (e) { show(indexOf(e.target)); });
  framesEl.addEventListener("mouseout", function () {
    var active = indexOf(document.activeElement);
    show(active >= 0 ? active : current);  // the focused frame (after a click), or the current match
  });
  framesEl.addEventListener("focusin", function (e) { show(indexOf(e.target)); });
  framesEl.addEventListener("keydown", onFrameKey);
  button(unzoomBtn, resetZoom);
  window.addEventListener("keydown", function (e) {
    var findKey = e.key === "F3" || ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F"));
    if (findKey) {
      if (document.activeElement === input) return;  // a second Ctrl-F: the browser's own find
      e.preventDefault();
      focusSearch();
    } else if ((e.ctrlKey || e.metaKey) && (e.key === "i" || e.key === "I")) {
      e.preventDefault();
      toggleIgnoreCase();
    } else if (e.key === "Escape" && document.activeElement !== input) {
      if (factsOpen) toggleFacts(); else resetZoom();
    }
  });

  // --- start: the controls, labels measured by the browser, then the view the URL asks for --------
  setUpSearch();
  setUpFacts();
  show(-1);
  var start = params();
  if (start.get("i") === "1") { ignoreCase = true; icBtn.setAttribute("aria-pressed", "true"); }
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
    toggleIgnoreCase: toggleIgnoreCase, next: function () { step(1); }, previous: function () { step(-1); },
    toggleFacts: toggleFacts,
    state: function () {
      return { zoomed: zoomed, term: term, ignoreCase: ignoreCase, frames: n, current: current, factsOpen: factsOpen };
    }
  };
})();
