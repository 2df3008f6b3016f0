// The trade analyser's chart: for one symbol, the newest five minutes of its series as the
// job's store holds them (/api/series): avg-1s and avg-1m prices as lines on the left scale,
// vol-1s (traded quantity a second) as bars on the right one. The panel shows once a job's
// store has trade series; after an upgrade to v2 its two new series start where it began.
"use strict";
(() => {
  const EVERY_MS = 2000;
  const STYLE = {
    "avg-1s": { color: "#1f6fd1", label: "avg price 1 s" },
    "avg-1m": { color: "#d9730d", label: "avg price 1 min" },
    "vol-1s": { color: "rgba(46, 140, 80, 0.45)", label: "volume 1 s" },
  };
  const PAD = { left: 64, right: 64, top: 22, bottom: 22 };
  const panel = document.getElementById("trades-panel");
  const chart = document.getElementById("trades");
  const picker = document.getElementById("trade-symbol");
  const g = chart.getContext("2d");
  let chosen = null;
  let last = null;

  function time(ms) {
    return new Date(ms).toISOString().slice(11, 19);
  }

  function range(values) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
    return hi > lo ? [lo, hi] : [lo - 1, hi + 1];
  }

  function draw() {
    if (!last || panel.hidden) return;
    const ratio = window.devicePixelRatio || 1;
    const w = chart.clientWidth, h = chart.clientHeight;
    chart.width = Math.round(w * ratio);
    chart.height = Math.round(h * ratio);
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, h);
    const series = last.series;
    const points = Object.values(series).flat();
    chart.dataset.series = Object.keys(series).join(",");
    chart.dataset.points = String(points.length);
    if (!points.length) return;
    const [t0, t1] = range(points.map((p) => p[0]));
    const prices = ["avg-1s", "avg-1m"].flatMap((s) => (series[s] || []).map((p) => p[1]));
    const [p0, p1] = prices.length ? range(prices) : [0, 1];
    const vMax = Math.max(1, ...(series["vol-1s"] || []).map((p) => p[1]));
    const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * (w - PAD.left - PAD.right);
    const plotH = h - PAD.top - PAD.bottom;
    const y = (p) => PAD.top + (1 - (p - p0) / (p1 - p0)) * plotH;
    g.fillStyle = STYLE["vol-1s"].color;
    for (const [t, v] of series["vol-1s"] || []) {
      const barH = (v / vMax) * plotH * 0.4;
      g.fillRect(x(t) - 1, h - PAD.bottom - barH, 2, barH);
    }
    for (const name of ["avg-1m", "avg-1s"]) {
      const line = series[name] || [];
      if (!line.length) continue;
      g.strokeStyle = STYLE[name].color;
      g.lineWidth = name === "avg-1s" ? 1 : 2;
      g.beginPath();
      line.forEach(([t, p], i) => (i ? g.lineTo(x(t), y(p)) : g.moveTo(x(t), y(p))));
      g.stroke();
    }
    g.fillStyle = "#56607a";
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "right";
    g.fillText(p1.toFixed(2), PAD.left - 6, PAD.top + 4);
    g.fillText(p0.toFixed(2), PAD.left - 6, h - PAD.bottom);
    g.textAlign = "left";
    g.fillText(`${Math.round(vMax)} / s`, w - PAD.right + 6, h - PAD.bottom - plotH * 0.4);
    g.fillText(`${time(t0)} UTC`, PAD.left, h - 6);
    g.textAlign = "right";
    g.fillText(`${time(t1)} UTC`, w - PAD.right, h - 6);
    g.textAlign = "left";
    let at = PAD.left;
    for (const name of Object.keys(STYLE)) {
      if (!series[name]) continue;
      g.fillStyle = STYLE[name].color;
      g.fillRect(at, 6, 10, 10);
      g.fillStyle = "#1d2330";
      g.fillText(STYLE[name].label, at + 14, 15);
      at += g.measureText(STYLE[name].label).width + 30;
    }
  }

  function offer(symbols) {
    const have = Array.from(picker.options, (o) => o.value);
    if (have.join() === symbols.join()) return;
    picker.replaceChildren(...symbols.map((s) => new Option(s, s)));
  }

  async function refresh() {
    const query = chosen ? `?symbol=${encodeURIComponent(chosen)}` : "";
    const response = await fetch(`/api/series${query}`, { cache: "no-store" });
    if (!response.ok) return;
    last = await response.json();
    const away = Object.entries(last.unreachable || {}).map(([job, why]) => `${job}: ${why}`);
    panel.hidden = !last.symbols.length && !away.length;  // a silent store is said, not hidden
    if (panel.hidden) return;
    offer(last.symbols);
    chosen = last.symbol;
    picker.value = chosen;
    document.getElementById("trade-job").textContent = (last.job ? `job ${last.job}` : "") +
      (away.length ? ` · store not answering: ${away.join("; ")}` : "");
    draw();
  }

  function loop() {
    refresh().catch(() => {}).finally(() => setTimeout(loop, EVERY_MS));
  }

  picker.addEventListener("change", () => { chosen = picker.value; refresh().catch(() => {}); });
  window.addEventListener("resize", draw);
  loop();
})();
