// jiggler dashboard: live counters and chart, confirmations and select-all. No framework, no inline script.
"use strict";

(function () {
  const SAMPLES = 60;
  const SVG = "http://www.w3.org/2000/svg";
  const PAUSED = "paused while the tab is hidden";

  // Buttons of forms with data-confirm ask first.
  document.addEventListener("submit", (event) => {
    const message = event.target.dataset && event.target.dataset.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  });

  // A data-select-all checkbox selects every job of its form.
  document.addEventListener("change", (event) => {
    if (!event.target.matches("[data-select-all]")) return;
    event.target.form.querySelectorAll('input[name="keys[]"]').forEach((box) => { box.checked = event.target.checked; });
  });

  function number(value) { return Math.round(value).toLocaleString("en-US"); }

  function duration(seconds) {
    if (seconds < 10) return seconds.toFixed(1) + " s";
    if (seconds < 120) return Math.round(seconds) + " s";
    if (seconds < 7200) return Math.round(seconds / 60) + " min";
    return Math.round(seconds / 3600) + " h";
  }

  function element(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    Object.entries(attributes).forEach(([name, value]) => node.setAttribute(name, value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A round maximum for the scale: 1, 2 or 5 times a power of ten.
  function ceiling(value) {
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    return [1, 2, 5, 10].map((step) => step * power).find((max) => max >= value);
  }

  // Draws the processed and failed rates as two lines, oldest sample on the left, at the chart's pixel size.
  function draw(chart, samples) {
    const width = Math.max(chart.clientWidth, 200), height = 180, top = 14, bottom = 6;
    const max = ceiling(Math.max(1, ...samples.map((s) => Math.max(s.processed, s.failures))));
    const y = (value) => top + (height - top - bottom) * (1 - value / max);
    const x = (index) => index * width / (SAMPLES - 1);
    chart.setAttribute("viewBox", "0 0 " + width + " " + height);
    chart.replaceChildren();
    [0, 0.5, 1].forEach((part) => {
      const label = (max * part).toLocaleString("en-US", { maximumFractionDigits: 1 }) + "/s";
      chart.append(element("line", { class: "grid", x1: 0, x2: width, y1: y(max * part), y2: y(max * part) }));
      chart.append(element("text", { class: "axis", x: 4, y: y(max * part) - 3 }, label));
    });
    ["processed", "failed"].forEach((series) => {
      const key = series === "failed" ? "failures" : "processed";
      const points = samples.map((sample, index) => x(index).toFixed(1) + "," + y(sample[key]).toFixed(1)).join(" ");
      chart.append(element("polyline", { class: series, points: points }));
    });
  }

  function showQueues(body, queues) {
    const rows = queues.map((queue) => {
      const row = document.createElement("tr");
      const link = document.createElement("a");
      // A name of only dots gets a "|" after it, as the server writes it: the browser would resolve ".." away.
      link.href = body.dataset.base + "/" + encodeURIComponent(/^\.{1,2}$/.test(queue.name) ? queue.name + "|" : queue.name);
      link.textContent = queue.name;
      const cells = [link, number(queue.size), duration(queue.latency), queue.paused ? "paused" : "running"];
      cells.forEach((content, index) => {
        const cell = document.createElement("td");
        if (index === 1 || index === 2) cell.className = "num";
        cell.append(content);
        row.append(cell);
      });
      return row;
    });
    body.replaceChildren(...rows);
    const empty = document.getElementById("no-queues");
    if (empty) empty.hidden = queues.length > 0;
  }

  // Polls the stats endpoint while the tab is visible; the chart shows per-second rates between polls.
  function live(root) {
    const chart = document.getElementById("chart");
    const select = document.getElementById("interval");
    const status = document.getElementById("live");
    const samples = [];
    let previous = null, timer = null, polling = false;

    async function poll() {
      timer = null;
      polling = true;
      try {
        const response = await fetch(root.dataset.poll, { headers: { accept: "application/json" }, credentials: "same-origin" });
        if (!response.ok) throw new Error("HTTP " + response.status);
        const stats = await response.json();
        document.querySelectorAll("[data-stat]").forEach((node) => { node.textContent = number(stats[node.dataset.stat] || 0); });
        if (previous) {
          const seconds = Math.max(stats.time - previous.time, 0.001);
          samples.push({
            processed: Math.max(stats.processed - previous.processed, 0) / seconds,
            failures: Math.max(stats.failures - previous.failures, 0) / seconds,
          });
          if (samples.length > SAMPLES) samples.shift();
          document.getElementById("rate-processed").textContent = number(samples[samples.length - 1].processed);
          document.getElementById("rate-failures").textContent = number(samples[samples.length - 1].failures);
        }
        previous = stats;
        draw(chart, samples);
        showQueues(document.getElementById("queue-rows"), stats.queues);
        status.textContent = hidden() ? PAUSED : "live · updated " + new Date().toLocaleTimeString();
      } catch (error) {
        status.textContent = "not updating: " + error.message;
      }
      polling = false;
      schedule();
    }

    function hidden() { return document.visibilityState !== "visible"; }

    function schedule() {
      if (timer === null && !hidden()) timer = setTimeout(poll, Number(select.value));
    }

    document.addEventListener("visibilitychange", () => {
      if (!hidden()) {
        previous = null; // a gap while hidden is not a rate
        if (timer === null && !polling) poll();
      } else {
        clearTimeout(timer);
        timer = null;
        status.textContent = PAUSED;
      }
    });
    select.addEventListener("change", () => { clearTimeout(timer); timer = null; schedule(); });
    window.addEventListener("resize", () => draw(chart, samples));
    draw(chart, samples);
    root.dataset.live = "on";
    poll();
  }

  document.addEventListener("DOMContentLoaded", () => {
    const root = document.querySelector("[data-poll]");
    if (root) live(root);
  });
})();
