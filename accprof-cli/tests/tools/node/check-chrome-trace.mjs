// Loads a Chrome Trace Event JSON file with @paulirish/trace_engine (the engine of the Chrome
// DevTools Performance panel) and prints, as JSON, what it made of it: per process, per thread,
// the thread's name, how many slices it kept and how many are at the top of its tree.
// Usage: node check-chrome-trace.mjs FILE.json
import {analyzeTrace} from '@paulirish/trace_engine/analyze-trace.mjs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node check-chrome-trace.mjs FILE.json');
  process.exit(2);
}
const {parsedTrace} = await analyzeTrace(file);
const processes = [];
for (const [pid, p] of parsedTrace.data.Renderer.processes) {
  const threads = [];
  for (const [tid, t] of p.threads) {
    threads.push({tid, name: t.name ?? null, entries: t.entries?.length ?? 0, roots: t.tree?.roots?.size ?? 0});
  }
  threads.sort((a, b) => a.tid - b.tid);
  processes.push({pid, threads});
}
processes.sort((a, b) => a.pid - b.pid);
console.log(JSON.stringify({processes}));
