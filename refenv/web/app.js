// The paste page: Pyodide from ./pyodide/ and refenv's harness from ./refenv-diagnose.pyz, both served from
// this page's own folder; the report is written into Pyodide's in-memory file system and never sent anywhere.
import { loadPyodide } from "./pyodide/pyodide.mjs";

const $ = (id) => document.getElementById(id);
// Milliseconds since the page's navigation started (performance.now()): when Pyodide had started, when the
// harness was imported (ready), and when the first answer was on screen. benchmarks/page_timing.py reads them.
const timings = (window.refenvTimings = { pyodide_ms: null, ready_ms: null, first_answer_ms: null, answers: 0 });

async function start() {
  // The harness is fetched while Pyodide starts: the interpreter's start is most of the wait.
  const files = Promise.all([fetch("refenv-diagnose.pyz"), fetch("answer.py")]);
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", document.baseURI).href });
  timings.pyodide_ms = performance.now();
  const [archive, adapter] = await files;
  if (!archive.ok || !adapter.ok) throw new Error("the page's folder lacks refenv-diagnose.pyz or answer.py");
  pyodide.FS.mkdirTree("/refenv");
  pyodide.FS.writeFile("/refenv/refenv-diagnose.pyz", new Uint8Array(await archive.arrayBuffer()));
  pyodide.runPython(await adapter.text());
  $("version").textContent = pyodide.globals.get("VERSION");
  $("pyodide").textContent = pyodide.version;
  timings.ready_ms = performance.now();
  $("status").textContent = "ready: the diagnosis runs in this tab";
  return { pyodide, answer: pyodide.globals.get("answer") };
}

const ready = start();
ready.catch((err) => { $("status").textContent = `Python did not start: ${err}`; });

function show(result) {
  const verdict = $("verdict");
  verdict.textContent = result.verdict;
  verdict.className = `verdict ${result.verdict}`;
  $("confidence").textContent = result.confidence ? `confidence: ${result.confidence}` : "";
  $("summary").textContent = result.summary || "";
  $("text").textContent = result.text || result.message;
  $("markdown").textContent = result.markdown || "";
  $("comment").hidden = !result.markdown;
  $("result").hidden = false;
  $("result").dataset.verdict = result.verdict;
}

async function diagnose(bytes) {
  $("diagnose").disabled = true;
  $("status").textContent = timings.ready_ms === null ? "loading Python…" : "diagnosing…";
  try {
    const { pyodide, answer } = await ready;
    pyodide.FS.writeFile("/refenv/report.txt", bytes);
    show(JSON.parse(answer("/refenv/report.txt")));
    timings.answers += 1;
    if (timings.first_answer_ms === null) timings.first_answer_ms = performance.now();
    $("status").textContent = "answered here, nothing was sent";
  } catch (err) {
    $("status").textContent = `could not diagnose: ${err}`;
  } finally {
    $("diagnose").disabled = false;
  }
}

$("diagnose").addEventListener("click", () => diagnose(new TextEncoder().encode($("report").value)));
$("file").addEventListener("change", async () => {
  const file = $("file").files[0];
  if (file) diagnose(new Uint8Array(await file.arrayBuffer()));
});
$("copy").addEventListener("click", () => navigator.clipboard.writeText($("markdown").textContent));
