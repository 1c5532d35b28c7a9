// The zerda page: a question box, the stage timeline from the SSE stream, the cited context.
// Plain script, no build step.  It runs while the page loads (it is the last element), so a
// result the service built in for /?q=... is in the DOM before the load event.
"use strict";
(function () {
  const boot = JSON.parse(document.getElementById("zerda-boot").textContent);
  const $ = (id) => document.getElementById(id);
  const STAGES = ["analysis", "retrieved", "filtered", "ranked", "composed", "guarded"];
  const form = $("ask"), query = $("q"), template = $("template"), profile = $("profile");
  const key = $("key"), timeline = $("timeline"), status = $("status");

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fillChoices(select, values, chosen) {
    for (const value of values) select.append(el("option", { value: value }, value));
    if (values.includes(chosen)) select.value = chosen;
  }

  fillChoices(template, boot.templates, boot.template || boot.default_template);
  if (boot.profiles) {
    $("profile-choice").hidden = false;
    fillChoices(profile, boot.profiles, boot.profile);
  }
  if (boot.auth) {
    $("key-choice").hidden = false;
    key.value = sessionStorage.getItem("zerda-key") || "";
  }
  query.value = boot.query || "";

  function setState(state, message, isError) {
    document.body.dataset.state = state;
    status.textContent = message || "";
    status.className = isError ? "error" : "";
  }

  function detail(name, data) {
    if (!("event" in data)) return "";  // a timing from a built-in result: nothing more to say
    if (name === "analysis") return `${data.language}, ${data.intent}, budget ${data.budget}`;
    if (name === "ranked" || name === "retrieved" || name === "filtered") return `${data.count}`;
    if (name === "composed") return `${data.context_length} / ${data.budget} chars`;
    if (name === "guarded") return data.passed ? "passed" : `warnings: ${data.warnings.length}`;
    if (name === "error") return `${data.error_type}: ${data.message}`;
    return "";
  }

  function addStage(name, data) {
    const item = el("li", { "data-event": name, class: name });
    item.append(el("span", { class: "name" }, name));
    if (typeof data.duration_ms === "number") {
      item.append(" ", el("span", { class: "ms" }, `${data.duration_ms.toFixed(2)} ms`));
    }
    const text = detail(name, data);
    if (text) item.append(" ", el("span", { class: "detail" }, text));
    timeline.append(item);
  }

  // Bidi: the context mixes Arabic and English lines, so it is not one paragraph with
  // one direction.  Each line (or each cited chunk) is a block of its own: text and
  // headers take their own direction (dir="auto"); separators and blank lines take the
  // context's (its first letter's), so in an Arabic context they sit on the right; a
  // source label is isolated in <bdi>, so "[المصدر: …]" keeps its brackets facing in.
  const RTL_LETTER = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFF]/u;
  const SEPARATOR = /^[\s\-─━=_*·.]*$/u;
  const LABEL = /^(\[.*\]|---\s*\[\d+\].*---)$/u;

  function directionOf(text) {
    const letter = text.match(/\p{L}/u);
    return letter && RTL_LETTER.test(letter[0]) ? "rtl" : "ltr";
  }

  // Offsets count Unicode code points (Python's str indices); JavaScript strings count
  // UTF-16 units, so the context is cut as an array of code points.
  function lineEnds(points) {
    const ends = [];
    points.forEach((ch, i) => { if (ch === "\n") ends.push(i + 1); });
    if (!ends.length || ends[ends.length - 1] < points.length) ends.push(points.length);
    return ends;
  }

  function lineBlock(text) {
    const line = text.replace(/\n$/u, "");
    if (SEPARATOR.test(line)) return el("span", { class: "block sep" }, text);
    if (LABEL.test(line)) {
      const block = el("span", { class: "block label" });
      block.append(el("bdi", {}, line), text.slice(line.length));
      return block;
    }
    return el("span", { class: "block line", dir: "auto" }, text);
  }

  function renderContext(result) {
    const box = $("context"), list = $("citations");
    box.replaceChildren();
    list.replaceChildren();
    const points = Array.from(result.context || "");
    box.dir = directionOf(result.context || "");
    const cites = Array.isArray(result.citations) ? result.citations.slice() : [];
    cites.sort((a, b) => a.start - b.start);
    const ends = lineEnds(points);
    const endOfLine = (i) => ends.find((end) => end > i) || points.length;
    let at = 0;
    const plainUpTo = (stop) => {
      while (at < stop) {
        const end = Math.min(endOfLine(at), stop);
        box.append(lineBlock(points.slice(at, end).join("")));
        at = end;
      }
    };
    cites.forEach((cite, i) => {
      const start = Math.max(cite.start, at), end = Math.min(cite.end, points.length);
      if (end <= start) return;
      // The cited chunk's block runs from its line's start to its last line's end.
      const lineStart = Math.max(at, ...ends.filter((e) => e <= start), 0);
      plainUpTo(lineStart);
      const before = points.slice(at, start).join("");
      const block = el("span", { class: "block chunk", dir: "auto" }, before);
      const mark = el("mark", {
        class: cite.truncated ? "cite truncated" : "cite",
        id: `cite-${i + 1}`,
        "data-n": String(i + 1),
        "data-doc-id": String(cite.doc_id),
        title: `${cite.label || cite.source}`,
      }, points.slice(start, end).join(""));
      const next = cites[i + 1] ? cites[i + 1].start : points.length;
      const blockEnd = Math.max(end, Math.min(endOfLine(end - 1), next));
      block.append(mark, points.slice(end, blockEnd).join(""));
      box.append(block);
      at = blockEnd;
      const item = el("li", { "data-doc-id": String(cite.doc_id) });
      const link = el("a", { href: `#cite-${i + 1}`, class: "src" });
      link.append(el("bdi", {}, String(cite.source)));
      const meta = el("span", { class: "meta" });
      if (cite.label) meta.append(el("bdi", {}, cite.label), " · ");
      meta.append(el("bdi", {}, String(cite.doc_id)), cite.truncated ? " · truncated" : "");
      item.append(link, " ", meta);
      list.append(item);
    });
    plainUpTo(points.length);
    if (!cites.length) {
      // Without citations in the result, list the ranked chunks it used instead.
      for (const chunk of result.chunks_used || []) {
        const item = el("li", { "data-doc-id": String(chunk.doc_id) });
        item.append(el("bdi", { class: "src" }, String(chunk.source)));
        item.append(" ", el("bdi", { class: "meta" }, String(chunk.doc_id)));
        list.append(item);
      }
    }
    const lang = result.query_analysis && result.query_analysis.language;
    const section = $("result");
    section.dir = lang === "ar" ? "rtl" : "ltr";
    section.lang = lang === "ar" ? "ar" : "en";
  }

  function showResult(result) {
    renderContext(result);
    const ms = typeof result.pipeline_ms === "number" ? ` in ${result.pipeline_ms.toFixed(1)} ms` : "";
    setState("done", `${result.context_length} characters, template ${result.template}${ms}`);
  }

  function headers() {
    const out = { "Content-Type": "application/json", Accept: "text/event-stream" };
    if (boot.auth && key.value) out.Authorization = `Bearer ${key.value}`;
    return out;
  }

  function* records(buffer) {
    let cut;
    while ((cut = buffer.text.indexOf("\n\n")) >= 0) {
      const raw = buffer.text.slice(0, cut);
      buffer.text = buffer.text.slice(cut + 2);
      let name = "", data = "";
      for (const line of raw.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (name) yield [name, JSON.parse(data)];
    }
  }

  async function run(body) {
    timeline.replaceChildren();
    $("context").replaceChildren();
    $("citations").replaceChildren();
    setState("running", "building the context…");
    $("run").disabled = true;
    try {
      const response = await fetch("v1/context/stream", {
        method: "POST", headers: headers(), body: JSON.stringify(body),
      });
      if (!response.ok) {
        const problem = await response.json().catch(() => ({ error: response.statusText }));
        setState("error", `${response.status}: ${problem.error}`, true);
        return;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      const buffer = { text: "" };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer.text += value;
        for (const [name, data] of records(buffer)) {
          addStage(name, data);
          if (name === "done") showResult(data.result);
          if (name === "error") setState("error", detail(name, data), true);
        }
      }
    } catch (err) {
      setState("error", String(err), true);
    } finally {
      $("run").disabled = false;
    }
  }

  function requestBody() {
    const body = { query: query.value, template: template.value };
    if (boot.profiles && profile.value) body.profile = profile.value;
    return body;
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (boot.auth) sessionStorage.setItem("zerda-key", key.value);
    const body = requestBody();
    // Keep the address shareable: /?q=<question>&template=<name> runs it again.
    const params = new URLSearchParams({ q: body.query, template: body.template });
    history.replaceState(null, "", `?${params}`);
    run(body);
  });

  // For scripts and tests: render a result object as the page does.
  window.zerdaPage = { showResult: showResult };

  if (boot.result) {
    for (const name of STAGES) {
      const ms = boot.result.timings_ms && boot.result.timings_ms[name];
      if (typeof ms === "number") addStage(name, { duration_ms: ms });
    }
    addStage("done", {});
    showResult(boot.result);
  } else if (boot.error) {
    setState("error", `${boot.error.status}: ${boot.error.error}`, true);
  } else if (boot.query) {
    run(requestBody());  // built-in results need the key: fetch it with the one typed before
  }
})();
