// flamegraph-perf: the interactive part of every SVG, inlined verbatim (no network, no libraries).
// Frames are <g><title>NAME (INFO)</title><rect x y width height fill/></g> in depth-first order
// inside <svg id="view">, whose viewBox is in the profile's unit: zooming changes that viewBox.
// State in the URL: ?x=&y= (the zoomed frame's rect attributes), ?s= (search), ?i=1 (ignore case),
// and the view: ?c= (callers and callees of a function), ?fo= (focus), ?ig= (ignore), ?o=w|n (order by
// weight), ?r=1 (recursion collapsed). Views are computed here from the stacks embedded once (#stacks),
// or read back from the frames when the file drew every one (S.stacksDrawn).
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
  var HINT = S.views ? "Hover a frame for details \u00b7 click to zoom \u00b7 right-click: callers, focus, ignore \u00b7 Ctrl-F to search"
    : "Hover a frame for details \u00b7 click to zoom \u00b7 Ctrl-F to search";

  // --- the frames of the view shown, read from the DOM (the static drawing, or one built here) ------
  var groups = framesEl.children;
  var n, X, W, D, parent, end, posInRow, deepest, rects, titles, names, fills, xAttr, yAttr, rows, indexByNode;
  var maxDepth = S.maxDepth;
  var graphHeight = parseFloat(view.getAttribute("height"));
  var staticHeight = graphHeight;
  var downFrom = S.inverted ? 0 : -1;  // frames from this index on grow downwards (icicle; a sandwich's callees)
  function readFrames(depths) {
    n = groups.length;
    X = new Float64Array(n); W = new Float64Array(n); D = new Int32Array(n);
    parent = new Int32Array(n); end = new Int32Array(n); posInRow = new Int32Array(n);
    deepest = new Int32Array(n);  // the largest depth in each frame's subtree
    rects = []; titles = []; names = []; fills = []; xAttr = []; yAttr = []; rows = [];
    indexByNode = new Map();
    var open = [];
    for (var i = 0; i < n; i++) {
      var g = groups[i];
      indexByNode.set(g, i);
      var title = g.firstElementChild.textContent, selfAt = title.indexOf("; self ", title.lastIndexOf(" (")) + 7;
      if (title.slice(-S.allSelf.length) === S.allSelf) {  // a leaf: the file says "all self" to stay small
        var amounts = title.slice(title.lastIndexOf(" (") + 2, -S.allSelf.length);
        title = g.firstElementChild.textContent = title.slice(0, -S.allSelf.length) + "; self " + amounts + ")";
      } else if (selfAt > 6 && !S.diff) {  // "; self 12, 0.06%)": the file says a count's unit once, with the total
        var count = title.slice(selfAt, title.indexOf(", ", selfAt));
        if (count.indexOf(" ") < 0) {  // a duration or a size has its unit
          title = g.firstElementChild.textContent = title.slice(0, selfAt) + count + " " +
            (count === "1" ? S.countSingular : S.countName) + title.slice(selfAt + count.length);
        }
      }
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
      D[i] = depths ? depths[i] : S.inverted ? Math.round(y / S.frameHeight) : S.maxDepth - Math.round((y - 1) / S.frameHeight);
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
    shownX = xAttr.slice();
    hidden = new Uint8Array(n);
  }

  var shownX, hidden;      // per frame: the x drawn, and whether it is hidden by the zoom
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
    return zoomed === 0 || i === zoomed || isAncestor(zoomed, i) || isAncestor(i, zoomed);
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

  function fit(text, width, minPrefix, size) {
    if (width < S.fontSize) return "";
    if (measure(text, size) <= width) return text;
    var lo = 0, hi = text.length;   // longest prefix p with measure(p + "..") <= width
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (measure(text.slice(0, mid) + "..", size) <= width) lo = mid; else hi = mid - 1;
    }
    return lo >= (minPrefix || 1) ? text.slice(0, lo) + ".." : "";
  }

  // --- details: under the title, where the eye is ----------------------------------------------
  // A frame's title with its self time, also where the file leaves out a zero ("name (N, P%)").
  function fullTitle(i) {
    var title = titles[i];
    if (S.diff || title.indexOf("; self ", title.lastIndexOf(" (")) >= 0) return title;
    return title.slice(0, -1) + "; self " + amount(0) + ", 0.00%)";
  }

  function describe(i) {
    var text = S.nameType + " " + fullTitle(i);
    if (zoomed !== 0 && (i === zoomed || isAncestor(zoomed, i))) {
      text += " [" + percent(W[i], W[zoomed]) + "% of the zoomed frame]";
    }
    return text;
  }

  function show(i) {
    var text = i < 0 ? HINT : describe(i);
    var room = S.views ? S.plotWidth - 360 : S.plotWidth;  // the search box and the view bar are on the right
    details.textContent = fit(text, room) || text;
    details.classList.toggle("hint", i < 0);
  }

  // --- labels ------------------------------------------------------------------------------
  // A diff's deep blues take white text: black falls below WCAG's 4.5:1 there (color.label_fill).
  function lightText(fill) {
    var m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(fill || "");
    if (!m) return false;
    var lum = [m[1], m[2], m[3]].map(function (h) {
      var c = parseInt(h, 16) / 255;
      return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return (0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2] + 0.05) / 0.05 < 4.5;
  }

  function relabel() {
    var start = X[zoomed], width = W[zoomed], scale = S.plotWidth / width;
    var pad = (S.frameHeight - 1) / 2 + S.fontSize * 0.35;
    var fragment = document.createDocumentFragment();
    for (var i = 0; i < n; i++) {
      var px, pw;
      if (i === zoomed || isAncestor(i, zoomed)) {
        px = 0; pw = S.plotWidth;
      } else if (zoomed === 0 || isAncestor(zoomed, i)) {  // not zoomed: every root's tree
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
      if (S.diff && lightText(fills[i])) t.setAttribute("class", "light");
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
    var height = S.height - collapse + graphHeight - staticHeight - factsHeight();
    if (factsOpen) height = Math.max(height, S.detailsY + 8 + factsHeight() + 8);
    root.setAttribute("height", height);
    root.setAttribute("viewBox", "0 0 " + pageWidth + " " + height);
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
  function zoom(i) {
    var s = X[i], last = end[i];
    for (var k = 0; k < raised.length; k++) {
      var a = raised[k];
      rects[a].setAttribute("width", String(W[a]));
      groups[a].classList.remove("parent");
    }
    raised = [];
    zoomed = i;
    if (i === 0) last = n;  // not zoomed: every frame (a sandwich has two roots)
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
    collapse = downFrom >= 0 ? 0 : (maxDepth - deepest[i]) * S.frameHeight;
    view.setAttribute("viewBox", "0 " + collapse + " " + W[i] + " " + (graphHeight - collapse));
    view.setAttribute("height", graphHeight - collapse);
    var shift = graphHeight - collapse - staticHeight;  // a view may be taller or shorter than the static drawing
    if (belowEl) belowEl.setAttribute("transform", shift ? "translate(0," + shift + ")" : "");
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
      if (!li) return;
      if (e.target.classList.contains("callers")) { showCallers(li.dataset.name); return; }
      var pattern = exact(li.dataset.name);
      input.value = pattern;
      search(pattern);
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
    // A sandwich's two trees each hold every sample of the function once: the larger share is the one.
    var covered = downFrom > 0 ? Math.max(coveredWeight(0, downFrom), coveredWeight(downFrom, n)) : coveredWeight(0, n);
    var text = "Matched: " + percent(covered, W[0]) + "%";
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
      if (S.views) li.appendChild(html("button", { "class": "callers", type: "button", title: "Callers and callees of this function" }, "\u21c5"));
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


  // --- views: callers and callees (sandwich), focus, ignore, order by weight, collapsed recursion ---
  // Computed from every stack (#stacks), not from the drawn frames: frames too narrow to draw hold
  // samples a callers graph needs. The static drawing is kept and put back when no view is on.
  var staticFrames = null;     // the <g>s of the static drawing while a view is shown
  var stackData = null;        // decoded lazily: names, fills, frames per stack, weights
  var drawn;                   // the static drawing's frames, as loaded: #stacks names a drawn frame by its index
  var drawnByWeight = !!S.drawnByWeight;  // `render --order weight`: the static drawing is left-heavy
  var viewState = { callers: null, focus: null, ignore: null, weight: drawnByWeight, recursion: false };
  var viewBar = null, viewText = null, viewButtons = {};  // viewText: [what is shown, its share]
  var titleEl = document.getElementById("title"), titleText = titleEl.textContent;

  // The title says what the view shows and what share of all samples remains; cut to the room left
  // between the controls and the search box.
  function fitTitle() {
    var size = S.fontSize + 5, room = pageWidth - 2 * 360;
    if (!viewText) { titleEl.textContent = titleText; titleEl.removeAttribute("aria-label"); return; }
    var what = viewText[0], tail = ": " + viewText[1];  // the share is never cut, the description may be
    var head = titleText + " \u2014 ";
    var cut = fit(what, room - measure(head + tail, size), 1, size) || what.slice(0, 1) + "..";
    titleEl.textContent = head + cut + tail;
    titleEl.setAttribute("aria-label", head + what + tail);
  }

  function loadStacks() {
    if (!stackData) stackData = S.stacksDrawn ? drawnStacks() : embeddedStacks();
    return stackData;
  }

  function embeddedStacks() {
    var raw = JSON.parse(document.getElementById("stacks").textContent), names = [], fills = [], written = 0;
    for (var q = 0; q < raw.names.length; q++) {  // a number: the drawn frame whose title and fill it has
      var at = raw.names[q], isDrawn = typeof at === "number";
      names.push(isDrawn ? drawn.names[at] : at);
      fills.push(isDrawn ? drawn.fills[at] : raw.fills[written++]);
    }
    var records = raw.stacks ? raw.stacks.split(" ") : [];
    var start = new Int32Array(records.length + 1), weight = new Float64Array(records.length);
    var frames = [], path = [], total = 0;
    for (var r = 0; r < records.length; r++) {
      var fields = records[r].split(",");
      path.length = parseInt(fields[0], 10);
      for (var f = 1; f < fields.length - 1; f++) path.push(parseInt(fields[f], 36));
      start[r] = frames.length;
      for (var k = 0; k < path.length; k++) frames.push(path[k]);
      weight[r] = parseFloat(fields[fields.length - 1]);
      total += weight[r];
    }
    start[records.length] = frames.length;
    return { names: names, fills: fills, frames: Int32Array.from(frames), start: start,
             weight: weight, count: records.length, total: total };
  }

  // No frame was pruned: a frame's width less its children's is the weight of the stack ending in it.
  // Frames are told apart by name and fill, as the file's frames are (the file checked they can be).
  function drawnStacks() {
    var index = new Map(), names = [], fills = [], frames = [], start = [], weight = [], path = [], total = 0;
    var own = Float64Array.from(drawn.width);
    for (var i = 1; i < own.length; i++) own[drawn.parent[i]] -= drawn.width[i];
    for (i = 1; i < own.length; i++) {  // the root ("all") is no function
      var key = drawn.fills[i] + "\u0000" + drawn.names[i], q = index.get(key);
      if (q === undefined) {
        index.set(key, q = names.length);
        names.push(drawn.names[i]); fills.push(drawn.fills[i]);
      }
      path.length = drawn.depth[i] - 1;
      path.push(q);
      if (own[i] > 0) {
        start.push(frames.length);
        for (var k = 0; k < path.length; k++) frames.push(path[k]);
        weight.push(own[i] * S.coordinateDivisor);
        total += own[i] * S.coordinateDivisor;
      }
    }
    var count = weight.length;
    start.push(frames.length);
    return { names: names, fills: fills, frames: Int32Array.from(frames), start: Int32Array.from(start),
             weight: Float64Array.from(weight), count: count, total: total };
  }

  function viewActive() {
    var v = viewState;
    return v.callers !== null || v.focus !== null || v.ignore !== null || v.weight !== drawnByWeight || v.recursion;
  }

  function regexOf(pattern) {
    try { return new RegExp(pattern, ignoreCase ? "i" : ""); } catch (e) { return null; }
  }

  function nameMatches(re) {  // per name index: does the regular expression match it
    var data = loadStacks(), out = new Uint8Array(data.names.length);
    for (var k = 0; k < out.length; k++) out[k] = re.test(data.names[k]) ? 1 : 0;
    return out;
  }

  // A tree of frames: node 0 is the root; children found through one map keyed by parent and name.
  function Tree(names) {
    this.nameOf = [-1]; this.total = [0]; this.self = [0]; this.kids = [[]];
    this.key = new Map(); this.width = names + 1;
  }
  Tree.prototype.add = function (path, from, to, step, w) {
    var node = 0;
    this.total[0] += w;
    for (var k = from; k !== to; k += step) {
      var name = path[k], key = node * this.width + name, child;
      if (S.flamechart) {  // time order: only neighbours merge
        var kids = this.kids[node], last = kids[kids.length - 1];
        child = last !== undefined && this.nameOf[last] === name ? last : undefined;
      } else {
        child = this.key.get(key);
      }
      if (child === undefined) {
        child = this.nameOf.length;
        this.key.set(key, child);
        this.nameOf.push(name); this.total.push(0); this.self.push(0); this.kids.push([]);
        this.kids[node].push(child);
      }
      this.total[child] += w;
      node = child;
    }
    this.self[node] += w;
  };

  function buildTrees() {
    var data = loadStacks(), v = viewState;
    var ignored = v.ignore !== null ? nameMatches(regexOf(v.ignore)) : null;
    var focused = v.focus !== null ? nameMatches(regexOf(v.focus)) : null;
    var picked = null;
    if (v.callers !== null) {
      picked = new Uint8Array(data.names.length);
      for (var q = 0; q < picked.length; q++) picked[q] = data.names[q] === v.callers ? 1 : 0;
    }
    var callees = new Tree(data.names.length), callers = picked ? new Tree(data.names.length) : null;
    var path = new Int32Array(64), kept = 0;
    for (var r = 0; r < data.count; r++) {
      var from = data.start[r], to = data.start[r + 1], len = 0, hit = focused === null, drop = false;
      if (path.length < to - from) path = new Int32Array(2 * (to - from));
      for (var k = from; k < to; k++) {
        var name = data.frames[k];
        if (ignored !== null && ignored[name]) { drop = true; break; }
        if (!hit && focused[name]) hit = true;
        if (v.recursion && len > 0 && path[len - 1] === name) continue;  // a;a;a;b -> a;b
        path[len++] = name;
      }
      if (drop || !hit) continue;
      var w = data.weight[r];
      if (picked) {
        var at = 0;
        while (at < len && !picked[path[at]]) at++;  // the outermost call: each sample counted once
        if (at === len) continue;
        callers.add(path, at - 1, -1, -1, w);  // the root is the function itself
        callees.add(path, at + 1, len, 1, w);
      } else {
        callees.add(path, 0, len, 1, w);
      }
      kept += w;
    }
    return { main: callees, callers: callers, kept: kept, total: data.total };
  }

  // Depth-first frames of a tree, pruned as the static drawing is, siblings by name or by weight.
  function layoutTree(tree, out) {
    var data = loadStacks(), total = tree.total[0];
    if (!(total > 0)) return;
    var minimum = total * S.minWidthPx / S.plotWidth;
    var todo = [[0, 0, 0]];
    while (todo.length) {
      var item = todo.pop(), node = item[0], depth = item[1], x = item[2];
      out.node.push(node); out.tree.push(tree); out.depth.push(depth); out.x.push(x);
      var kids = tree.kids[node].filter(function (c) { return tree.total[c] >= minimum && tree.total[c] > 0; });
      if (viewState.weight && !S.flamechart) {
        kids.sort(function (a, b) { return tree.total[b] - tree.total[a] || cmp(data.names[tree.nameOf[a]], data.names[tree.nameOf[b]]); });
      } else if (!S.flamechart) {
        kids.sort(function (a, b) { return cmp(data.names[tree.nameOf[a]], data.names[tree.nameOf[b]]); });
      }
      // Alphabetical: the stack ending here first, as the static drawing; by weight: the heaviest leftmost.
      var offset = x + (viewState.weight ? 0 : tree.self[node]), placed = [];
      for (var c = 0; c < kids.length; c++) {
        placed.push([kids[c], depth + 1, offset]);
        offset += tree.total[kids[c]];
      }
      for (var p = placed.length - 1; p >= 0; p--) todo.push(placed[p]);
      if (depth + 1 > out.maxDepth && placed.length) out.maxDepth = depth + 1;
    }
  }

  function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

  function formatCount(value) {
    if (value === Math.floor(value)) return value.toLocaleString("en-US");
    return value.toLocaleString("en-US", { maximumFractionDigits: 2 });
  }

  function amount(weight) {
    if (S.sizes) {  // bytes in powers of 1024, as format_bytes writes them
      var units = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
      for (var u = 0; u < units.length; u++) {
        if (Math.abs(weight) >= units[u][1]) return (weight / units[u][1]).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + " " + units[u][0];
      }
      return weight.toLocaleString("en-US", { maximumFractionDigits: 0 }) + " B";
    }
    if (S.durations) {
      if (Math.abs(weight) >= 1e6) return (weight / 1e6).toLocaleString("en-US", { minimumFractionDigits: 3, maximumFractionDigits: 3 }) + " s";
      if (Math.abs(weight) >= 1e3) return (weight / 1e3).toFixed(1) + " ms";
      return weight.toFixed(0) + " \u00b5s";
    }
    var value = weight * S.factor;
    return formatCount(value) + " " + (value === 1 ? S.countSingular : S.countName);
  }

  function share(part, whole) {
    return whole ? (100 * part / whole).toFixed(2) : "0.00";
  }

  function frameTitle(name, total, self, whole) {
    if (!self) return name + " (" + amount(total) + ", " + share(total, whole) + "%)";
    return name + " (" + amount(total) + ", " + share(total, whole) + "%; self " + amount(self) + ", " + share(self, whole) + "%)";
  }

  // Build the frames of the view the state asks for, as the static drawing draws them.
  function drawView() {
    var data = loadStacks(), trees = buildTrees(), div = S.coordinateDivisor, fh = S.frameHeight;
    var out = { node: [], tree: [], depth: [], x: [], maxDepth: 0 }, row;
    if (trees.callers) {  // callers above (a flame graph rooted at the function), callees below (an icicle)
      layoutTree(trees.callers, out);
      var above = out.maxDepth;
      downFrom = out.node.length;
      out.maxDepth = 0;
      layoutTree(trees.main, out);
      maxDepth = above + 1 + out.maxDepth;  // rows in all, less one
      row = function (i, d) { return i < downFrom ? above - d : above + 1 + d; };
    } else {
      downFrom = S.inverted ? 0 : -1;
      layoutTree(trees.main, out);
      maxDepth = out.maxDepth;
      row = function (i, d) { return S.inverted ? d : maxDepth - d; };
    }
    var whole = data.total, fragment = document.createDocumentFragment(), depths = new Int32Array(out.node.length);
    var rootName = trees.callers ? viewState.callers : "all";
    var rootFill = staticFrames[0].lastElementChild.getAttribute("fill");
    if (trees.callers) rootFill = data.fills[data.names.indexOf(viewState.callers)] || rootFill;
    for (var i = 0; i < out.node.length; i++) {
      var tree = out.tree[i], node = out.node[i], depth = out.depth[i], nameIndex = tree.nameOf[node];
      var name = depth === 0 ? rootName : data.names[nameIndex];
      var self = depth === 0 && trees.callers ? trees.main.self[0] : tree.self[node];
      var g = document.createElementNS(SVGNS, "g"), t = document.createElementNS(SVGNS, "title");
      var rect = document.createElementNS(SVGNS, "rect");
      t.textContent = frameTitle(name, tree.total[node], self, whole);
      rect.setAttribute("x", String(out.x[i] / div));
      rect.setAttribute("y", String(row(i, depth) * fh + (downFrom >= 0 ? 0 : 1)));
      rect.setAttribute("width", String(tree.total[node] / div));
      rect.setAttribute("height", String(fh - 1));
      rect.setAttribute("fill", depth === 0 ? rootFill : data.fills[nameIndex]);
      g.appendChild(t); g.appendChild(rect);
      fragment.appendChild(g);
      depths[i] = depth;
    }
    framesEl.textContent = "";
    framesEl.appendChild(fragment);
    graphHeight = (maxDepth + 1) * fh;
    return { depths: depths, kept: trees.kept, whole: whole };
  }

  function applyView(keepZoom) {
    var again = term;
    clearHighlight();
    if (zoomed !== 0) zoom(0);
    var summary = null;
    if (!viewActive()) {
      if (staticFrames) {
        framesEl.textContent = "";
        staticFrames.forEach(function (g) { framesEl.appendChild(g); });
        staticFrames = null;
      }
      maxDepth = S.maxDepth; graphHeight = staticHeight; downFrom = S.inverted ? 0 : -1;
      readFrames(null);
    } else {
      if (!staticFrames) staticFrames = Array.prototype.slice.call(framesEl.children);
      summary = drawView();
      readFrames(summary.depths);
    }
    view.setAttribute("height", graphHeight);
    focused = 0;
    term = null;
    zoom(keepZoom || 0);
    if (again !== null) search(again);
    describeView(summary);
    saveView();
  }

  function describeView(summary) {
    if (!viewBar) return;
    var v = viewState, parts = [];
    if (v.callers !== null) parts.push("callers and callees of " + v.callers);
    if (v.focus !== null) parts.push("focus /" + v.focus + "/");
    if (v.ignore !== null) parts.push("ignore /" + v.ignore + "/");
    if (v.recursion) parts.push("recursion collapsed");
    if (v.weight) parts.push("by weight");
    viewText = summary ? [parts.join(" \u00b7 "), share(summary.kept, summary.whole) + "% of all"] : null;
    fitTitle();
    viewButtons.clear.hidden = !summary;
    viewButtons.weight.setAttribute("aria-pressed", String(v.weight));
    viewButtons.recursion.setAttribute("aria-pressed", String(v.recursion));
    fitSearchBox();
  }

  function saveView() {
    var q = params(), v = viewState;
    function put(key, value) { if (value === null || value === false) q.delete(key); else q.set(key, value === true ? "1" : value); }
    put("c", v.callers); put("fo", v.focus); put("ig", v.ignore); put("r", v.recursion);
    if (v.weight === drawnByWeight) q.delete("o"); else q.set("o", v.weight ? "w" : "n");
    saveParams(q);
  }

  function setView(change) {
    if (!S.views) return;
    for (var k in change) viewState[k] = change[k];
    if (viewState.focus !== null && !regexOf(viewState.focus)) viewState.focus = null;
    if (viewState.ignore !== null && !regexOf(viewState.ignore)) viewState.ignore = null;
    applyView();
  }

  function showCallers(name) { setView({ callers: name }); }

  function setUpViews() {
    if (!S.views) return;
    viewBar = html("div", { id: "view-bar" });
    function add(id, label, title, action, pressed) {
      var b = html("button", { id: id, type: "button", title: title }, label);
      if (pressed !== undefined) b.setAttribute("aria-pressed", "false");
      b.addEventListener("click", action);
      viewBar.appendChild(b);
      viewButtons[id.replace("view-", "")] = b;
      return b;
    }
    add("view-focus", "Focus", "Keep only the stacks through a match of the search (F on a frame)", function () {
      if (input.value) setView({ focus: input.value });
    });
    add("view-ignore", "Ignore", "Drop the stacks through a match of the search (X on a frame)", function () {
      if (input.value) setView({ ignore: input.value });
    });
    if (!S.flamechart) {
      add("view-weight", "Weight", "Order siblings by weight, the heaviest on the left (W)", function () {
        setView({ weight: !viewState.weight });
      }, false);
    } else {
      viewButtons.weight = html("button", { hidden: "hidden" });
    }
    add("view-recursion", "Recursion", "Collapse recursion: a;a;a;b becomes a;b (R)", function () {
      setView({ recursion: !viewState.recursion });
    }, false);
    add("view-clear", "\u2715 View", "Back to the whole graph", function () {
      setView({ callers: null, focus: null, ignore: null, weight: drawnByWeight, recursion: false });
    });
    ui.insertBefore(viewBar, results);
    fitSearchBox();  // the row under the search box shows from the start, not clipped until one types
    setUpMenu();
  }

  // --- a frame's context menu ---------------------------------------------------------------
  var menu = null, menuBox = null, menuFrame = -1;
  function setUpMenu() {
    menuBox = document.createElementNS(SVGNS, "foreignObject");
    menuBox.id = "menu-box";
    menuBox.setAttribute("width", 320);
    menuBox.setAttribute("height", 120);
    menuBox.classList.add("hide");
    menu = html("div", { id: "frame-menu", role: "menu" });
    [["menu-callers", "Callers and callees", function (name) { showCallers(name); }],
     ["menu-focus", "Focus on this function", function (name) { setView({ focus: exact(name) }); }],
     ["menu-ignore", "Ignore this function", function (name) { setView({ ignore: exact(name) }); }],
     ["menu-zoom", "Zoom", function () { zoom(menuFrame); }]].forEach(function (item) {
      var b = html("button", { id: item[0], type: "button", role: "menuitem" }, item[1]);
      b.addEventListener("click", function (e) {
        e.stopPropagation();
        var i = menuFrame, name = names[i];
        hideMenu();
        if (i >= 0) item[2](name);
      });
      menu.appendChild(b);
    });
    menuBox.appendChild(menu);
    root.appendChild(menuBox);
    framesEl.addEventListener("contextmenu", function (e) {
      var i = indexOf(e.target);
      if (i <= 0 && !(i === 0 && downFrom > 0)) return;  // the root "all" is no function
      e.preventDefault();
      var at = toPage(e);
      menuFrame = i;
      menu.firstChild.textContent = "Callers and callees of " + names[i];
      menuBox.setAttribute("x", Math.min(at.x, pageWidth - 324));
      menuBox.setAttribute("y", at.y);
      menuBox.classList.remove("hide");
      menu.firstChild.focus();
    });
    window.addEventListener("click", function (e) { if (!menu.contains(e.target)) hideMenu(); });
  }

  function hideMenu() {
    if (menuBox) menuBox.classList.add("hide");
    menuFrame = -1;
  }

  function exact(name) {
    return "^" + name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$";
  }

  function toPage(e) {  // the pointer in page units
    var m = root.getScreenCTM();
    if (!m) return { x: e.clientX, y: e.clientY };
    var pt = root.createSVGPoint();
    pt.x = e.clientX; pt.y = e.clientY;
    pt = pt.matrixTransform(m.inverse());
    return { x: pt.x, y: pt.y };
  }

  // --- details near the pointer: a box that follows it -----------------------------------------
  var tip = null, tipText = [], tipRect = null;
  function setUpTip() {
    tip = document.createElementNS(SVGNS, "g");
    tip.id = "tip";
    tip.classList.add("hide");
    tipRect = document.createElementNS(SVGNS, "rect");
    tipRect.setAttribute("rx", 3);
    tip.appendChild(tipRect);
    for (var k = 0; k < 2; k++) {
      var t = document.createElementNS(SVGNS, "text");
      t.setAttribute("x", 6);
      t.setAttribute("y", 15 + k * 16);
      tip.appendChild(t);
      tipText.push(t);
    }
    root.appendChild(tip);
  }

  function showTip(i, e) {
    if (i < 0 || !e) { tip.classList.add("hide"); return; }
    var title = fullTitle(i), cut = title.lastIndexOf(" (");
    tipText[0].textContent = fit(title.slice(0, cut), 560) || title.slice(0, cut);
    var info = title.slice(cut + 2, -1).split("; ");
    tipText[1].textContent = S.diff ? info.join("; ") : "total " + info[0] + (info[1] ? " \u00b7 " + info[1] : "");
    var width = Math.max(measure(tipText[0].textContent), measure(tipText[1].textContent)) + 12;
    tipRect.setAttribute("width", width);
    tipRect.setAttribute("height", 38);
    var at = toPage(e), x = at.x + 14, y = at.y + 18;
    if (x + width > pageWidth - 2) x = Math.max(2, at.x - 14 - width);
    tip.setAttribute("transform", "translate(" + x.toFixed(1) + "," + y.toFixed(1) + ")");
    tip.classList.remove("hide");
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
    var down = downFrom >= 0 && i >= downFrom;
    var deeper = down ? "ArrowDown" : "ArrowUp";
    var shallower = down ? "ArrowUp" : "ArrowDown";
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
  var hovered = -1;
  framesEl.addEventListener("mouseover", function (e) { hovered = indexOf(e.target); show(hovered); });
  framesEl.addEventListener("mousemove", function (e) { showTip(indexOf(e.target), e); });
  framesEl.addEventListener("mouseout", function () {
    var active = indexOf(document.activeElement);
    hovered = -1;
    showTip(-1);
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
      if (menuFrame >= 0) hideMenu();
      else if (factsOpen) toggleFacts();
      else if (zoomed === 0 && viewState.callers !== null) setView({ callers: null });
      else resetZoom();
    } else if (S.views && !e.ctrlKey && !e.metaKey && !e.altKey && !isField(document.activeElement)) {
      viewKey(e);
    }
  });

  function isField(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "input" || el.tagName === "BUTTON" || el.tagName === "button");
  }

  // Keys on the focused (or else the hovered) frame: C callers and callees, F focus, X ignore;
  // anywhere: W order by weight, R collapse recursion.
  function viewKey(e) {
    var key = e.key.toLowerCase(), i = indexOf(document.activeElement), wasFrame = i >= 0;
    if (i < 0) i = hovered;
    var named = i > 0 || (i === 0 && downFrom > 0);
    if (key === "c" && named) showCallers(names[i]);
    else if (key === "f" && named) setView({ focus: exact(names[i]) });
    else if (key === "x" && named) setView({ ignore: exact(names[i]) });
    else if (key === "w" && !S.flamechart) setView({ weight: !viewState.weight });
    else if (key === "r") setView({ recursion: !viewState.recursion });
    else return;
    e.preventDefault();
    if (wasFrame) focusFrame(0);  // the frame had the focus: the new view's root takes it
  }

  // --- width: the window's (the --width value when printed, and in the static file) -------------
  var pageWidth = S.width;
  function setWidth(width) {
    width = Math.max(400, Math.floor(width));
    if (width === pageWidth) return;
    pageWidth = width;
    S.plotWidth = width - 2 * S.xpad;
    root.setAttribute("width", width);
    background.setAttribute("width", width);
    view.setAttribute("width", S.plotWidth);
    ["title", "subtitle"].forEach(function (id) {
      var el = document.getElementById(id);
      if (el) el.setAttribute("x", Math.floor(width / 2));
    });
    var box = document.getElementById("search-box");
    if (box) box.setAttribute("x", width - S.xpad - parseFloat(box.getAttribute("width")));
    var panel = document.getElementById("facts-panel");
    if (panel) panel.setAttribute("width", S.plotWidth + 12);
    resizePage();
    relabel();
    show(-1);
    if (S.views) fitTitle();
  }

  function followWindow() {
    setWidth(document.documentElement.clientWidth || window.innerWidth);
  }

  // --- start: the controls, labels measured by the browser, then the view the URL asks for --------
  readFrames(null);
  // As loaded, before a search recolours the rects or a view replaces the frames.
  drawn = { names: names.slice(), fills: fills.slice(), width: W, depth: D, parent: parent };
  setUpSearch();
  setUpViews();
  setUpFacts();
  setUpTip();
  show(-1);
  var start = params();
  if (start.get("i") === "1") { ignoreCase = true; icBtn.setAttribute("aria-pressed", "true"); }
  if (S.views) {
    viewState.callers = start.get("c");
    viewState.focus = start.get("fo");
    viewState.ignore = start.get("ig");
    viewState.weight = start.get("o") === "w" || (drawnByWeight && start.get("o") !== "n");
    viewState.recursion = start.get("r") === "1";
    if (viewActive()) applyView();
  }
  var target = 0;
  if (start.has("x") && start.has("y")) {
    for (var i = 0; i < n; i++) {
      if (xAttr[i] === start.get("x") && yAttr[i] === start.get("y")) { target = i; break; }
    }
  }
  followWindow();
  zoom(target);
  if (start.get("s")) search(start.get("s"));
  window.addEventListener("resize", followWindow);
  window.addEventListener("beforeprint", function () { setWidth(S.width); });
  window.addEventListener("afterprint", followWindow);
  // A tall flame graph opens scrolled to its roots, the widest frames; the title is one scroll away.
  if (target === 0 && downFrom < 0 && !start.has("c")) {
    var bottom = (S.graphTop + graphHeight) * scaleY();
    if (bottom > window.innerHeight) window.scrollTo(0, bottom - window.innerHeight + 2 * S.frameHeight);
  }

  // For tests and tools: the state, without reaching into closures.
  window.flamegraph = {
    zoom: zoom, resetZoom: resetZoom, search: search, resetSearch: resetSearch,
    toggleIgnoreCase: toggleIgnoreCase, next: function () { step(1); }, previous: function () { step(-1); },
    toggleFacts: toggleFacts, setView: setView, showCallers: showCallers, setWidth: setWidth,
    state: function () {
      return { zoomed: zoomed, term: term, ignoreCase: ignoreCase, frames: n, current: current, factsOpen: factsOpen,
               view: JSON.parse(JSON.stringify(viewState)), width: pageWidth };
    }
  };
})();
