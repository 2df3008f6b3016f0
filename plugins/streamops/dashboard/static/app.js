// The dashboard page: a canvas map of the vehicles and the jobs, savepoints and health panels.
// Everything is drawn on one canvas (no DOM node per vehicle, so 10k vehicles stay smooth);
// the trail of each vehicle is kept here between refreshes. Data comes from this origin only.
"use strict";

const VEHICLES_EVERY_MS = 2000;
const PANELS_EVERY_MS = 5000;
const TRAIL_POINTS = 8;
const REGION = { latMin: 35, latMax: 45, lonMin: -105, lonMax: -90 }; // the simulators' box
const PICK_RADIUS_PX = 10;

const canvas = document.getElementById("map");
const ctx = canvas.getContext("2d");
const fleet = { rows: [], trails: new Map(), selected: null, screen: new Float32Array(0) };
window.drawnCount = 0;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function fmt(value) {
  return value === null || value === undefined ? "–" : String(value);
}

function ago(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 120) return `${Math.round(seconds)} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  return `${(seconds / 3600).toFixed(1)} h ago`;
}

function clock(ts) {
  return ts ? new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19) : "–";
}

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

// --- map -----------------------------------------------------------------------------
function extent(rows) {
  // The simulators' region, widened to whole degrees to hold every vehicle: stable between
  // refreshes, so the map does not jump.
  const box = { ...REGION };
  for (const r of rows) {
    box.latMin = Math.min(box.latMin, Math.floor(r[1]));
    box.latMax = Math.max(box.latMax, Math.ceil(r[1]));
    box.lonMin = Math.min(box.lonMin, Math.floor(r[2]));
    box.lonMax = Math.max(box.lonMax, Math.ceil(r[2]));
  }
  return box;
}

function projection(box, width, height) {
  // Equirectangular, x scaled by cos(mid latitude) so that a degree looks like a degree.
  const pad = 36;
  const kx = Math.cos(((box.latMin + box.latMax) / 2) * Math.PI / 180);
  const k = Math.min((width - 2 * pad) / ((box.lonMax - box.lonMin) * kx),
                     (height - 2 * pad) / (box.latMax - box.latMin));
  const x0 = (width - (box.lonMax - box.lonMin) * kx * k) / 2;
  const y0 = (height - (box.latMax - box.latMin) * k) / 2;
  return (lat, lon) => [x0 + (lon - box.lonMin) * kx * k, y0 + (box.latMax - lat) * k];
}

function gridStep(project) {
  // The smallest of 1, 2, 5, 10 degrees whose lines stand 44 px apart (labels do not collide).
  const [x0] = project(0, 0), [x1] = project(0, 1);
  return [1, 2, 5, 10].find((step) => Math.abs(x1 - x0) * step >= 44) || 10;
}

function drawGrid(box, project) {
  const step = gridStep(project);
  ctx.strokeStyle = "#e3e7ee"; ctx.fillStyle = "#8a93a6"; ctx.lineWidth = 1;
  ctx.font = "11px system-ui, sans-serif";
  ctx.beginPath();
  for (let lat = box.latMin; lat <= box.latMax; lat += step) {
    const [xa, y] = project(lat, box.lonMin); const [xb] = project(lat, box.lonMax);
    ctx.moveTo(xa, y); ctx.lineTo(xb, y); ctx.fillText(`${lat}°N`, xa - 32, y + 4);
  }
  for (let lon = box.lonMin; lon <= box.lonMax; lon += step) {
    const [x, ya] = project(box.latMax, lon); const [, yb] = project(box.latMin, lon);
    ctx.moveTo(x, ya); ctx.lineTo(x, yb); ctx.fillText(`${-lon}°W`, x - 14, yb + 14);
  }
  ctx.stroke();
  const [rx0, ry0] = project(REGION.latMax, REGION.lonMin);
  const [rx1, ry1] = project(REGION.latMin, REGION.lonMax);
  ctx.strokeStyle = "#56607a"; ctx.setLineDash([6, 4]);
  ctx.strokeRect(rx0, ry0, rx1 - rx0, ry1 - ry0); ctx.setLineDash([]);
  ctx.fillStyle = "#56607a";
  ctx.fillText("fleetsim region 35–45°N, 90–105°W (central US)", rx0, ry0 - 6);
}

function drawBorders(box, project) {
  // borders.js: simplified state borders and names, clipped to the map's box
  const [bx0, by0] = project(box.latMax, box.lonMin);
  const [bx1, by1] = project(box.latMin, box.lonMax);
  ctx.save();
  ctx.beginPath(); ctx.rect(bx0, by0, bx1 - bx0, by1 - by0); ctx.clip();
  ctx.strokeStyle = "#b4bccb"; ctx.lineWidth = 1.2; ctx.beginPath();
  for (const line of STATE_BORDERS) {
    let [x, y] = project(line[0][1], line[0][0]); ctx.moveTo(x, y);
    for (let i = 1; i < line.length; i++) { [x, y] = project(line[i][1], line[i][0]); ctx.lineTo(x, y); }
  }
  ctx.stroke();
  ctx.fillStyle = "#a3abba"; ctx.font = "600 10px system-ui, sans-serif"; ctx.textAlign = "center";
  for (const [name, lon, lat] of STATE_LABELS) {
    const [x, y] = project(lat, lon); ctx.fillText(name, x, y);
  }
  ctx.restore();
}

function draw() {
  const started = performance.now();
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth, height = canvas.clientHeight;
  if (canvas.width !== width * ratio || canvas.height !== height * ratio) {
    canvas.width = width * ratio; canvas.height = height * ratio;
  }
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.fillStyle = "#fbfcfd"; ctx.fillRect(0, 0, width, height);
  const rows = fleet.rows;
  const box = extent(rows); // one pass over the vehicles a draw
  const project = projection(box, width, height);
  drawGrid(box, project);
  drawBorders(box, project);

  ctx.strokeStyle = "rgba(40, 110, 220, 0.35)"; ctx.lineWidth = 1.2;
  ctx.beginPath(); // every trail in one path: one stroke call
  for (const trail of fleet.trails.values()) {
    if (trail.length < 2) continue;
    let [x, y] = project(trail[0][0], trail[0][1]); ctx.moveTo(x, y);
    for (let i = 1; i < trail.length; i++) { [x, y] = project(trail[i][0], trail[i][1]); ctx.lineTo(x, y); }
  }
  ctx.stroke();

  const screen = new Float32Array(rows.length * 2);
  ctx.fillStyle = "#1f5fc9"; ctx.beginPath(); // every marker in one path: one fill call
  for (let i = 0; i < rows.length; i++) {
    const [x, y] = project(rows[i][1], rows[i][2]);
    screen[2 * i] = x; screen[2 * i + 1] = y;
    ctx.rect(x - 2, y - 2, 4, 4);
  }
  ctx.fill();
  const chosen = rows.findIndex((r) => r[0] === fleet.selected);
  if (chosen >= 0) {
    ctx.strokeStyle = "#d9480f"; ctx.lineWidth = 2; ctx.beginPath();
    ctx.arc(screen[2 * chosen], screen[2 * chosen + 1], 7, 0, 2 * Math.PI); ctx.stroke();
  }
  fleet.screen = screen;
  window.drawnCount = rows.length;
  canvas.dataset.drawn = String(rows.length);
  canvas.dataset.drawMs = (performance.now() - started).toFixed(2);
}

function remember(rows) {
  const seen = new Set();
  for (const [vin, lat, lon] of rows) {
    seen.add(vin);
    const trail = fleet.trails.get(vin) || [];
    const last = trail[trail.length - 1];
    if (!last || last[0] !== lat || last[1] !== lon) trail.push([lat, lon]);
    if (trail.length > TRAIL_POINTS) trail.shift();
    fleet.trails.set(vin, trail);
  }
  for (const vin of fleet.trails.keys()) if (!seen.has(vin)) fleet.trails.delete(vin);
}

async function refreshVehicles() {
  try {
    const started = performance.now();
    const data = await getJson("/api/vehicles");
    const fetched = performance.now() - started;
    fleet.rows = data.rows;
    remember(data.rows);
    draw();
    canvas.dataset.fetchMs = fetched.toFixed(1);
    document.getElementById("fleet-summary").textContent =
      `${data.count} vehicles · updated ${clock(data.at)} UTC · fetch ${fetched.toFixed(0)} ms` +
      ` · draw ${canvas.dataset.drawMs} ms`;
  } catch (err) {
    document.getElementById("fleet-summary").textContent = `vehicles: ${err.message}`;
  } finally {
    setTimeout(refreshVehicles, VEHICLES_EVERY_MS);
  }
}

async function showVehicle(vin) {
  const detail = document.getElementById("vehicle-detail");
  const row = await getJson(`/api/vehicles/${encodeURIComponent(vin)}`);
  const fields = [["VIN", row.vin], ["source", row.source], ["time", `${clock(row.time)} UTC`],
    ["sequence", row.sequence], ["latitude", row.latitude.toFixed(5)],
    ["longitude", row.longitude.toFixed(5)], ["speed", `${row.speed.toFixed(1)} mph`],
    ["heading", `${row.heading.toFixed(0)}°`], ["job version", row.job_version]];
  if ("obd_codes" in row) {
    const codes = Array.isArray(row.obd_codes) ? row.obd_codes : [];
    fields.push(["OBD codes", codes.length ? codes.join(", ") : "none"]);
  }
  detail.replaceChildren(...fields.flatMap(([k, v]) => [el("dt", null, k), el("dd", null, v)]));
  document.getElementById("vehicle-hint").textContent = "";
}

canvas.addEventListener("click", (event) => {
  const box = canvas.getBoundingClientRect();
  const x = event.clientX - box.left, y = event.clientY - box.top;
  let best = -1, bestDist = PICK_RADIUS_PX * PICK_RADIUS_PX;
  for (let i = 0; i < fleet.rows.length; i++) {
    const dx = fleet.screen[2 * i] - x, dy = fleet.screen[2 * i + 1] - y;
    if (dx * dx + dy * dy <= bestDist) { best = i; bestDist = dx * dx + dy * dy; }
  }
  if (best < 0) return;
  fleet.selected = fleet.rows[best][0];
  draw();
  showVehicle(fleet.selected).catch((err) => {
    document.getElementById("vehicle-hint").textContent = err.message;
  });
});
window.addEventListener("resize", draw);

// --- panels ----------------------------------------------------------------------------
function badge(level) {
  return el("span", `badge ${level || "none"}`, level || "not checked");
}

function row(cells, cls) {
  const tr = el("tr", cls);
  for (const cell of cells) {
    const td = el("td");
    if (cell instanceof Node) td.append(cell); else td.textContent = fmt(cell);
    tr.append(td);
  }
  return tr;
}

function sourcesText(stage) {
  return stage.sources.map((s) => `${s.source}: backlog ${fmt(s.backlog)} ${s.unit}, ${s.state}` +
    (s.reason ? ` (${s.reason})` : "")).join("; ");
}

function renderJobs(jobs) {
  const rows = [];
  for (const job of jobs) {
    const health = el("span");
    health.append(badge(job.healthy ? "ok" : (job.is_live ? "warn" : "fail")),
                  el("span", null, job.healthy ? " healthy" : " not healthy"));
    if (job.health) health.append(el("span", null, " · last check "), badge(job.health));
    rows.push(row([job.name, job.version, job.state, job.driver_id, job.input_rows_per_second,
      job.processed_rows_per_second, ago(job.last_batch_age), health], "job"));
    if (job.error) rows.push(row([`error: ${job.error}`, "", "", "", "", "", "", ""], "stage"));
    for (const s of job.stages) {
      rows.push(row([`${s.name} · batch ${fmt(s.batch_id)}`, s.idle ? "idle" : "",
        `late ${s.late_rows} · state ${s.state_rows} rows · failed batches ${s.failed_batches}`,
        `savepoint ${ago(s.savepoint_age)}`, s.input_rows_per_second,
        s.processed_rows_per_second, ago(s.batch_age), sourcesText(s)], "stage"));
    }
  }
  document.querySelector("#jobs tbody").replaceChildren(...rows);
}

function size(bytes) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let n = bytes, i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i === 0 ? `${bytes} B` : `${n.toFixed(1)} ${units[i]}`;
}

function renderSavepoints(items) {
  document.querySelector("#savepoints tbody").replaceChildren(...items.map((s) =>
    row([clock(s.created_at), size(s.bytes), s.job, s.name, s.version, s.stages.join(", ")])));
}

function renderHealth(runs) {
  const items = runs.map((run) => {
    const li = el("li");
    li.append(badge(run.level), el("span", null, ` ${clock(run.at)} UTC — ${run.summary}`));
    return li;
  });
  if (!items.length) items.push(el("li", null, "no health check recorded yet"));
  document.getElementById("health").replaceChildren(...items);
}

function conditionsText(conditions) {
  return conditions.map((c) => `${c.type}=${c.status}` + (c.reason ? ` (${c.reason})` : "") +
    (c.message && c.status !== "False" ? `: ${c.message}` : "")).join("; ");
}

function renderResources(res) {
  document.querySelector("#deployments tbody").replaceChildren(...res.deployments.map((d) =>
    row([d.name, d.deleting ? "Deleting" : d.status.phase, d.status.driver, d.status.version,
      clock(d.status.submission_time), clock(d.status.completion_time),
      `${d.status.observed_generation}/${d.generation}`, conditionsText(d.status.conditions)])));
  document.querySelector("#savepoint-requests tbody").replaceChildren(
    ...res.savepoint_requests.map((r) => row([r.name, r.job, String(r.cancel), r.status.state,
      clock(r.status.creation_time), r.status.message])));
  document.getElementById("notifications").replaceChildren(...res.notifications.map((n) => {
    const li = el("li");
    li.append(badge("fail"), el("span", null, ` ${clock(n.at)} UTC — ${n.message}: ${n.error}`));
    return li;
  }));
}

async function refreshPanels() {
  const [jobs, savepoints, health, resources] = await Promise.allSettled(
    [getJson("/api/jobs"), getJson("/api/savepoints"), getJson("/api/health"),
     getJson("/api/resources")]);
  if (resources.status === "fulfilled") renderResources(resources.value);
  if (jobs.status === "fulfilled") renderJobs(jobs.value);
  if (savepoints.status === "fulfilled") renderSavepoints(savepoints.value);
  if (health.status === "fulfilled") renderHealth(health.value);
  setTimeout(refreshPanels, PANELS_EVERY_MS);
}

refreshVehicles();
refreshPanels();
