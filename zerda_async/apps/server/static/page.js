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
  // UTF-16 units, so the context is cut as an array of code points.  Cited spans are
  // clipped so they do not overlap; each keeps its number (its rank in start order).
  function citedSpans(cites, length) {
    const spans = [];
    let at = 0;
    cites.forEach((cite, i) => {
      const start = Math.max(cite.start, at), end = Math.min(cite.end, length);
      if (end <= start) return;
      spans.push({ cite: cite, n: i + 1, start: start, end: end });
      at = end;
    });
    return spans;
  }

  // The context's blocks: its lines, where a cited span running over a line break joins
  // the lines it covers into one block.  Each is [start, end, spans inside].
  function blocksOf(points, spans) {
    const blocks = [];
    let start = 0;
    for (let i = 0; i <= points.length; i++) {
      if (i < points.length && points[i] !== "\n") continue;
      const end = Math.min(i + 1, points.length);
      if (end > start) {
        const last = blocks[blocks.length - 1];
        if (last && spans.some((s) => s.start < last[1] && s.end > last[1])) last[1] = end;
        else blocks.push([start, end]);
      }
      start = end;
    }
    return blocks.map(([a, b]) => [a, b, spans.filter((s) => s.start < b && s.end > a)]);
  }

  function mark(points, span) {
    return el("mark", {
      class: span.cite.truncated ? "cite truncated" : "cite",
      id: `cite-${span.n}`,
      "data-n": String(span.n),
      "data-doc-id": String(span.cite.doc_id),
      title: `${span.cite.label || span.cite.source}`,
    }, points.slice(span.start, span.end).join(""));
  }

  function citedBlock(points, start, end, spans) {
    const block = el("span", { class: "block chunk", dir: "auto" });
    let at = start;
    for (const span of spans) {
      block.append(points.slice(at, span.start).join(""), mark(points, span));
      at = span.end;
    }
    block.append(points.slice(at, end).join(""));
    return block;
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

  // Where a citation comes from: "file, p. N, § Section" (page and section when known).
  function citedPlace(cite) {
    let place = String(cite.source);
    if (Number.isInteger(cite.page)) place += `, p. ${cite.page}`;
    if (cite.section) place += `, § ${cite.section}`;
    return place;
  }

  function citationItem(span) {
    const cite = span.cite;
    const item = el("li", { "data-doc-id": String(cite.doc_id) });
    const link = el("a", { href: `#cite-${span.n}`, class: "src" });
    link.append(el("bdi", {}, citedPlace(cite)));
    const meta = el("span", { class: "meta" });
    if (cite.label) meta.append(el("bdi", {}, cite.label), " · ");
    meta.append(el("bdi", {}, String(cite.doc_id)), cite.truncated ? " · truncated" : "");
    item.append(link, " ", meta);
    return item;
  }

  function renderContext(result) {
    const box = $("context"), list = $("citations");
    box.replaceChildren();
    list.replaceChildren();
    const points = Array.from(result.context || "");
    box.dir = directionOf(result.context || "");
    const cites = Array.isArray(result.citations) ? result.citations.slice() : [];
    cites.sort((a, b) => a.start - b.start);
    const spans = citedSpans(cites, points.length);
    for (const [start, end, inside] of blocksOf(points, spans)) {
      box.append(inside.length
        ? citedBlock(points, start, end, inside)
        : lineBlock(points.slice(start, end).join("")));
    }
    for (const span of spans) list.append(citationItem(span));
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
