// Display equations that are wider than their column (on a phone, say) are broken into
// lines where the mathematics allows it, then drawn smaller if they still do not fit, instead
// of scrolling sideways inside their box. Wide screens keep the equations as written.
//  1. at top-level \qquad (and before a top-level \quad\text{...}): one part per line;
//  2. if a line is still too wide: before each top-level relation (=, \le, \ge, \approx),
//     aligned on it;
//  3. if still too wide: also at top-level \quad, and before each top-level + or - that
//     follows the relation, indented;
//  4. what still overflows is scaled down to fit (not below MIN_SCALE).
// When done, <html data-math-fitted> is set (the website test waits for it).
(function () {
  "use strict";
  const MIN_SCALE = 0.6;
  const OPEN = new Set(["{", "(", "["]);
  const CLOSE = new Set(["}", ")", "]"]);

  // Top-level positions: outside braces, brackets, parentheses and environments.
  function topLevel(tex, visit) {
    let depth = 0;
    for (let i = 0; i < tex.length; i++) {
      const c = tex[i];
      if (c === "\\") {
        const name = /^\\([A-Za-z]+|.)/.exec(tex.slice(i))[1];
        if (name === "begin" || name === "{") depth++; // \{ ... \} delimit, like ( ... )
        else if (name === "end" || name === "}") depth--;
        else if (depth === 0 && visit(i, name) === false) return;
        i += name.length;
        continue;
      }
      if (OPEN.has(c)) depth++;
      else if (CLOSE.has(c)) depth--;
      else if (depth === 0 && visit(i, c) === false) return;
    }
  }

  function unwrap(tex) {
    const m = /^\s*\\begin\{split\}([\s\S]*)\\end\{split\}\s*$/.exec(tex);
    if (!m) return tex;
    let aligned = false;
    topLevel(m[1], (i, tok) => { if (tok === "&" || tok === "\\") aligned = true; });
    return aligned ? tex : m[1];
  }

  function splitAtQquad(tex) {
    const cuts = [];
    topLevel(tex, (i, tok) => {
      if (tok === "qquad") cuts.push([i, i + 7]);
      else if (tok === "quad" && tex.startsWith("\\quad\\text", i)) cuts.push([i, i]);
    });
    const parts = [];
    let start = 0;
    for (const [from, to] of cuts) {
      parts.push(tex.slice(start, from));
      start = to;
    }
    parts.push(tex.slice(start));
    return parts.map((p) => p.trim()).filter((p) => p);
  }

  const RELATIONS = new Set(["=", "le", "ge", "leq", "geq", "approx"]);

  function alignAtRelations(part) {
    const cuts = [];
    topLevel(part, (i, tok) => { if (RELATIONS.has(tok)) cuts.push(i); });
    if (cuts.length === 0) return "&" + part;
    if (cuts.length === 1) return part.slice(0, cuts[0]) + "&" + part.slice(cuts[0]);
    let out = part.slice(0, cuts[0]) + "&" + part.slice(cuts[0], cuts[1]);
    for (let k = 1; k < cuts.length; k++) {
      out += "\\\\ &" + part.slice(cuts[k], k + 1 < cuts.length ? cuts[k + 1] : part.length);
    }
    return out;
  }

  // Break a part before its top-level binary + and - after the first relation.
  function breakAtOperators(part) {
    const cuts = [];
    let seenRelation = false;
    topLevel(part, (i, tok) => {
      if (RELATIONS.has(tok)) seenRelation = true;
      else if (seenRelation && (tok === "+" || tok === "-")) {
        const before = part.slice(0, i).trimEnd();
        if (before && !/[=&({,_^]$/.test(before) && !/\\(le|ge|leq|geq|approx)$/.test(before)) cuts.push(i);
      }
    });
    let out = part;
    for (const i of cuts.reverse()) out = out.slice(0, i) + "\\\\ &\\qquad " + out.slice(i);
    return out;
  }

  function splitAtQuad(parts) {
    const out = [];
    for (const part of parts) {
      const cuts = [];
      topLevel(part, (i, tok) => { if (tok === "quad") cuts.push(i); });
      let start = 0;
      for (const cut of cuts) { out.push(part.slice(start, cut)); start = cut + 5; }
      out.push(part.slice(start));
    }
    return out.map((p) => p.trim()).filter((p) => p);
  }

  function overflow(box) {
    const root = box.querySelector("mjx-container") || box;
    return root.scrollWidth - root.clientWidth > 1;
  }

  async function retypeset(box, tex) {
    MathJax.typesetClear([box]);
    const old = box.querySelector("mjx-container");
    if (old) old.replaceWith(document.createTextNode("\\[" + tex + "\\]"));
    await MathJax.typesetPromise([box]);
  }

  async function fit(box) {
    const original = box.dataset.texOriginal;
    const container = box.querySelector("mjx-container");
    if (!container) return;
    const math = container.querySelector("mjx-math");
    if (math) math.style.fontSize = "";
    if (!overflow(box) && !original) return;
    if (original) await retypeset(box, original); // start again from the equation as written
    if (!overflow(box)) { delete box.dataset.texOriginal; return; }
    const tex = original || MathJax.startup.document.getMathItemsWithin(box)[0].math;
    box.dataset.texOriginal = tex;
    const parts = splitAtQquad(unwrap(tex));
    if (parts.length > 1) {
      await retypeset(box, "\\begin{gathered}" + parts.join("\\\\") + "\\end{gathered}");
    }
    if (overflow(box)) {
      const lines = parts.map(alignAtRelations);
      await retypeset(box, "\\begin{aligned}" + lines.join("\\\\") + "\\end{aligned}");
    }
    if (overflow(box)) {
      const lines = splitAtQuad(parts).map((part) => breakAtOperators(alignAtRelations(part)));
      await retypeset(box, "\\begin{aligned}" + lines.join("\\\\") + "\\end{aligned}");
    }
    const root = box.querySelector("mjx-container");
    if (overflow(box)) {
      const scale = Math.max(MIN_SCALE, (root.clientWidth / root.scrollWidth) * 0.98);
      root.querySelector("mjx-math").style.fontSize = (100 * scale).toFixed(1) + "%";
    }
  }

  async function fitAll() {
    document.documentElement.removeAttribute("data-math-fitted");
    const boxes = [...document.querySelectorAll("div.math")].filter(
      (box) => box.querySelector('mjx-container[display="true"]'));
    for (const box of boxes) {
      try { await fit(box); } catch (error) { console.warn("fit-math:", error); }
    }
    document.documentElement.setAttribute("data-math-fitted", "");
  }

  function start() {
    if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
      document.documentElement.setAttribute("data-math-fitted", "");
      return;
    }
    MathJax.startup.promise.then(fitAll);
    let timer;
    let width = window.innerWidth;
    window.addEventListener("resize", () => {
      if (window.innerWidth === width) return;
      width = window.innerWidth;
      clearTimeout(timer);
      timer = setTimeout(() => MathJax.startup.promise.then(fitAll), 200);
    });
  }

  if (document.readyState === "complete") start();
  else window.addEventListener("load", start);
})();
