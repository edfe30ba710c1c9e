// The attention lab: the course's GRU translator (exported by tools/site/lab) run with onnxruntime-web.
// Greedy decoding as course_utils.search.greedy_decode (PAD and SOS never chosen, EOS ends, the same length cap);
// an edit replaces one step's weights, as decoder.step(prev, state, memory, weights=...), and the rest is recomputed.
// window.lab exposes the state for tests/browser/run_lab_check.py.
"use strict";
(function () {
  const M = window.LAB_MODEL;
  const $ = (id) => document.getElementById(id);
  const lab = window.lab = { ready: false, runs: 0, result: null, message: "", error: null, timings: [] };
  const SPECIAL = M.special;
  const sourceIndex = new Map(M.source_vocab.map((word, i) => [word, i]));
  const alphabet = new Set(Array.from(M.alphabet));
  let sessions = null;
  let current = null; // {words, unknown, ids, memory, steps: [{prev, state, weights, token, p, edited}], cursor, own}

  // ------------------------------------------------------------------------------------------ loading
  function bytesOf(base64) {
    const text = atob(base64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  }

  async function load() {
    const started = performance.now();
    if (!window.ort || !window.LAB_ORT || !M) throw new Error("the page's files are incomplete (ort/, model.js)");
    if (typeof DecompressionStream === "undefined") throw new Error("this browser is too old (no DecompressionStream)");
    const stream = new Blob([bytesOf(window.LAB_ORT.wasmGzip)]).stream().pipeThrough(new DecompressionStream("gzip"));
    ort.env.wasm.wasmBinary = await new Response(stream).arrayBuffer();
    ort.env.wasm.wasmPaths = { mjs: URL.createObjectURL(new Blob([window.LAB_ORT.glue], { type: "text/javascript" })) };
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.proxy = false;
    const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
    sessions = {
      encoder: await ort.InferenceSession.create(bytesOf(M.encoder), options),
      step: await ort.InferenceSession.create(bytesOf(M.step), options),
    };
    lab.loadMs = performance.now() - started;
  }

  // ------------------------------------------------------------------------------------ the input
  function normalise(text) { // course_utils.data.normalize_string
    let s = text.toLowerCase().trim().normalize("NFD").replace(/\p{Mn}/gu, "");
    s = s.replace(/([.!?])/g, " $1").replace(/[^a-zA-Z.!?]+/g, " ");
    return s.trim();
  }

  // In the corpus's French text (any case), or a Latin letter with accents (what the normalisation turns into a-z).
  const known = (c) => alphabet.has(c.toLowerCase()) ||
    /^[a-z]$/.test(c.toLowerCase().normalize("NFD").replace(/\p{Mn}/gu, ""));

  // A one-line message saying what to type instead, or null when the sentence can be translated.
  function problem(raw) {
    const text = raw.replace(/^\s+|\s+$/g, "");
    const example = `'${M.example}'`;
    const lines = text.split(/\r\n|\r|\n/).filter((line) => line.trim());
    if (lines.length > 1) return `One sentence at a time: this has ${lines.length} lines. Paste a single line, e.g. ${example}.`;
    if (!text) return `Nothing to translate: type a French sentence, e.g. ${example}.`;
    if (/[0-9]/.test(text)) return "Digits are not in the corpus's alphabet (the course's normalisation drops them): " +
      "write the number in words, e.g. 'j ai vingt ans .'.";
    const outside = [...new Set(Array.from(text.normalize("NFC")).filter((c) => !/\s/.test(c) && !known(c)))];
    if (outside.length) return `${outside.slice(0, 5).map((c) => `'${c}'`).join(", ")} ${outside.length > 1 ? "are" : "is"} ` +
      "not in the corpus's alphabet (French in Latin letters with accents and punctuation): type the sentence without " +
      (outside.length > 1 ? "them." : "it.");
    const words = normalise(text).split(" ").filter(Boolean);
    if (!words.length) return `Nothing to translate once punctuation is dropped: type French words, e.g. ${example}.`;
    if (words.length > M.max_words) return `Too long: the model learned from sentences of at most ${M.max_words} ` +
      `words and punctuation marks, and this has ${words.length}. Split it into shorter sentences.`;
    if (words.every((w) => !sourceIndex.has(w))) return `None of these words is in the model's vocabulary ` +
      `(${words.slice(0, 6).join(", ")}): it knows short everyday French such as ${example}; check the spelling and ` +
      "the direction (French to English).";
    return null;
  }

  // ------------------------------------------------------------------------------------- decoding
  const int64 = (values, dims) => new ort.Tensor("int64", BigInt64Array.from(values.map(BigInt)), dims);
  const float32 = (values, dims) => new ort.Tensor("float32", Float32Array.from(values), dims);

  async function encode(ids) {
    const out = await sessions.encoder.run({ src: int64(ids, [1, ids.length]) });
    const memory = {}, state = {};
    M.names.memory.forEach((n) => { memory[n] = out[n]; });
    M.names.state.forEach((n) => { state[n] = out[n]; });
    return { memory, state };
  }

  function chooseToken(logProbs) { // argmax with PAD and SOS forbidden (search.forbid_special_tokens); first best wins
    let best = -1, bestValue = -Infinity;
    for (let i = 0; i < logProbs.length; i++) {
      if (i === SPECIAL.pad || i === SPECIAL.sos) continue;
      if (logProbs[i] > bestValue || best < 0) { best = i; bestValue = logProbs[i]; }
    }
    return { token: best, p: Math.exp(bestValue) };
  }

  // Run steps from steps.length on (steps before it stay), with `edits` {t: weights} replacing the scorer's.
  async function decodeFrom(c, edits) {
    const S = c.ids.length, cap = M.caps[S];
    let prev, state;
    if (c.steps.length === 0) { prev = SPECIAL.sos; state = c.initial; } else {
      const last = c.steps[c.steps.length - 1];
      if (last.token === SPECIAL.eos) return;
      prev = last.token; state = last.stateOut;
    }
    for (let t = c.steps.length; t < cap; t++) {
      const edited = Object.prototype.hasOwnProperty.call(edits, t);
      const feeds = { prev_token: int64([prev], [1]), given: float32(edited ? edits[t] : new Array(S).fill(0), [1, S]),
        use_given: float32([edited ? 1 : 0], [1]), ...state, ...c.memory };
      const out = await sessions.step.run(feeds);
      const { token, p } = chooseToken(out.log_probs.data);
      const stateOut = {};
      M.names.state.forEach((n) => { stateOut[n] = out[`next_${n}`]; });
      c.steps.push({ prev, state, stateOut, weights: Array.from(out.weights.data), token, p, edited });
      if (token === SPECIAL.eos) break;
      prev = token; state = stateOut;
    }
  }

  async function translate() {
    const raw = $("sentence").value;
    const message = problem(raw);
    if (message) { showMessage(message, true); current = null; render(); return; }
    const started = performance.now();
    const words = normalise(raw).split(" ").filter(Boolean);
    const ids = words.map((w) => sourceIndex.get(w) ?? SPECIAL.unk).concat([SPECIAL.eos]);
    const { memory, state } = await encode(ids);
    const c = { words, ids, unknown: words.map((w) => !sourceIndex.has(w)), memory, initial: state, steps: [],
      edits: {}, cursor: 0 };
    await decodeFrom(c, {});
    c.own = c.steps.map((s) => s.token);
    const ms = performance.now() - started;
    lab.timings.push(ms);
    current = c;
    const unknown = words.filter((w) => !sourceIndex.has(w));
    showMessage(unknown.length ? `Translated in ${ms.toFixed(0)} ms; ${unknown.length} unknown word(s) read as <unk>: ` +
      `${unknown.join(", ")}.` : `Translated in ${ms.toFixed(0)} ms.`, false);
    render();
  }

  async function edit(t, weights) {
    const c = current;
    const edits = {};
    Object.keys(c.edits).map(Number).filter((k) => k < t).forEach((k) => { edits[k] = c.edits[k]; });
    edits[t] = weights; // an edit changes what follows: later edits are dropped
    c.edits = edits;
    c.steps = c.steps.slice(0, t);
    await decodeFrom(c, edits);
    c.cursor = Math.min(t, c.steps.length - 1);
    render();
  }

  async function reset() {
    const c = current;
    c.edits = {};
    c.steps = [];
    await decodeFrom(c, {});
    c.cursor = Math.min(c.cursor, c.steps.length - 1);
    render();
  }

  // Weights with word j set to `value` (0..1) and the others scaled to sum to 1 - value.
  function reweigh(weights, j, value) {
    const others = weights.reduce((sum, w, i) => sum + (i === j ? 0 : w), 0);
    const n = weights.length;
    return weights.map((w, i) => (i === j ? value : (others > 1e-9 ? w * (1 - value) / others : (1 - value) / (n - 1))));
  }

  // -------------------------------------------------------------------------------------- drawing
  function showMessage(text, isError) {
    const element = $("message");
    element.textContent = text;
    element.className = isError ? "error" : "info";
    lab.message = text;
    lab.error = isError ? text : null;
  }

  const colour = (w) => M.colours[Math.max(0, Math.min(255, Math.round(w * 255)))];
  const sourceTokens = (c) => c.words.concat(["<eos>"]);
  const targetWord = (id) => M.target_vocab[id];

  function element(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function render() {
    const c = current;
    $("result").hidden = !c;
    if (!c) { lab.result = null; lab.runs++; return; }
    const tokens = $("tokens");
    tokens.replaceChildren(...sourceTokens(c).map((w, j) => element("span",
      "token" + (j === c.words.length ? " special" : c.unknown[j] ? " unknown" : ""), w)));
    const out = c.steps.map((s) => targetWord(s.token));
    const translation = $("translation");
    translation.replaceChildren(...out.filter((w) => w !== "<eos>").flatMap((w, t) => {
      const span = element("span", c.steps[t].edited ? "edited" : "", w);
      return [span, document.createTextNode(" ")];
    }));
    const own = c.own.map(targetWord).filter((w) => w !== "<eos>").join(" ");
    const edited = Object.keys(c.edits).length > 0;
    $("own").hidden = !edited;
    $("own").textContent = edited ? `With the model's own attention: ${own}` : "";
    $("reset").disabled = !edited;
    drawHeatmap(c, out);
    drawStep(c, out);
    lab.result = { words: c.words, unknown: c.unknown, ids: c.ids, output: c.steps.map((s) => s.token), tokens: out,
      text: out.filter((w) => w !== "<eos>").join(" "), weights: c.steps.map((s) => s.weights), cursor: c.cursor,
      edits: c.edits };
    lab.runs++;
  }

  function drawHeatmap(c, out) {
    const S = c.ids.length;
    const grid = element("div", "hm");
    grid.style.gridTemplateColumns = `auto repeat(${S}, 2.4rem)`;
    grid.appendChild(element("div", "axis", "output ↓ / source →"));
    sourceTokens(c).forEach((w, j) => {
      const label = element("div", "col-label");
      label.appendChild(element("span", c.unknown[j] ? "unknown" : "", w));
      grid.appendChild(label);
    });
    out.forEach((w, t) => {
      const rowLabel = element("div", "row-label" + (t === c.cursor ? " current" : ""), (c.steps[t].edited ? "✎ " : "") + w);
      rowLabel.addEventListener("click", () => { c.cursor = t; render(); });
      grid.appendChild(rowLabel);
      c.steps[t].weights.forEach((value, j) => {
        const cell = element("div", "cell");
        cell.style.background = colour(value);
        cell.title = `${w} ← ${sourceTokens(c)[j]}: ${value.toFixed(3)}`;
        if (t === c.cursor) cell.classList.add("current-row");
        cell.addEventListener("click", () => { c.cursor = t; render(); });
        grid.appendChild(cell);
      });
    });
    const bar = element("div", "colourbar");
    const ramp = element("div", "ramp");
    ramp.style.background = `linear-gradient(to right, ${M.colours.filter((_, i) => i % 32 === 0 || i === 255).join(", ")})`;
    bar.append(element("span", "", "0"), ramp, element("span", "", "1"), element("span", "", M.labels.colourbar));
    $("heatmap").replaceChildren(grid, bar);
  }

  function drawStep(c, out) {
    const t = c.cursor, step = c.steps[t];
    const previous = step.prev === SPECIAL.sos ? "<sos>" : targetWord(step.prev);
    $("step-label").textContent = `step ${t + 1} of ${c.steps.length}: after '${previous}' it writes '${out[t]}' ` +
      `(p = ${step.p.toFixed(2)})${step.edited ? " with your weights" : ""}`;
    $("previous").disabled = t === 0;
    $("next").disabled = t >= c.steps.length - 1;
    const rows = sourceTokens(c).map((w, j) => {
      const row = element("div", "bar-row");
      row.dataset.index = j;
      const word = element("button", "word", w);
      word.type = "button";
      word.title = "read only this word at this step";
      word.addEventListener("click", () => edit(t, step.weights.map((_, i) => (i === j ? 1 : 0))));
      const track = element("div", "track");
      const fill = element("div", "fill");
      fill.style.width = `${(100 * step.weights[j]).toFixed(1)}%`;
      fill.style.background = colour(step.weights[j]);
      track.appendChild(fill);
      const value = element("span", "value", step.weights[j].toFixed(3));
      const zero = element("button", "zero", "×");
      zero.type = "button";
      zero.title = "zero this word out";
      zero.addEventListener("click", () => edit(t, reweigh(step.weights, j, 0)));
      let dragging = false, pending = null;
      const at = (event) => {
        const box = track.getBoundingClientRect();
        return Math.max(0, Math.min(1, (event.clientX - box.left) / box.width));
      };
      track.addEventListener("pointerdown", (event) => {
        dragging = true; track.setPointerCapture(event.pointerId); pending = at(event);
        fill.style.width = `${(100 * pending).toFixed(1)}%`; value.textContent = pending.toFixed(3);
      });
      track.addEventListener("pointermove", (event) => {
        if (!dragging) return;
        pending = at(event);
        fill.style.width = `${(100 * pending).toFixed(1)}%`; value.textContent = pending.toFixed(3);
      });
      track.addEventListener("pointerup", () => {
        if (!dragging) return;
        dragging = false;
        edit(t, reweigh(step.weights, j, pending));
      });
      row.append(word, track, value, zero);
      return row;
    });
    $("bars").replaceChildren(...rows);
  }

  // ---------------------------------------------------------------------------------------- wiring
  function busy(action) {
    return async () => {
      try { await action(); } catch (error) {
        showMessage(`The lab failed: ${error.message || error}. Reload the page; if it persists, use the notebooks.`, true);
        lab.runs++;
      }
    };
  }

  $("translate").addEventListener("click", busy(translate));
  $("sentence").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); busy(translate)(); }
  });
  $("sentence").addEventListener("paste", () => setTimeout(busy(translate), 0));
  $("previous").addEventListener("click", () => { current.cursor = Math.max(0, current.cursor - 1); render(); });
  $("next").addEventListener("click", () => { current.cursor = Math.min(current.steps.length - 1, current.cursor + 1); render(); });
  $("reset").addEventListener("click", busy(reset));

  busy(async () => {
    if (!M) throw new Error("model.js is missing: export the lab with python -m tools.site.lab");
    $("model-name").textContent = `Model: ${M.model}${M.fast ? " (a fast-mode smoke-test model: its translations are poor)" : ""}, ` +
      `${M.attention} attention.`;
    $("footer").textContent = "Runs with onnxruntime-web (MIT) on the CPU, in WebAssembly; the graphs were checked " +
      "against PyTorch when exported.";
    await load();
    $("sentence").disabled = false;
    $("translate").disabled = false;
    lab.ready = true;
    showMessage(`Ready (loaded in ${(lab.loadMs / 1000).toFixed(1)} s): type a French sentence and press Enter.`, false);
    await translate();
  })();
}());
