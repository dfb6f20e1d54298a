// Raw JSON-RPC lines to an MCP server over stdio, for what no SDK sends
// (batches, an id of null, a request before initialize, a second initialize):
//   node raw_client.mjs PLAN.json
//   {"command": "...", "args": [...], "cwd": "...", "lines": ["...", ...],
//    "answers": N (wait for N lines that are not notifications), "timeout_ms": M}
// Writes every line, waits for N answers (or M ms), then closes the server's
// stdin and waits for it to exit. Prints one JSON object:
//   {"lines": [each line the server wrote, parsed (null if not JSON)], "stderr": "...",
//    "status": exit code, "signal": null, "timed_out": bool}
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const server = spawn(plan.command, plan.args ?? [], { cwd: plan.cwd, env: process.env });
const lines = [];
let stderr = "";
let pending = "";
let answers = 0;
let closed = false;
let timedOut = false;

function closeInput() {
  if (closed) return;
  closed = true;
  server.stdin.end();
}

server.stdout.on("data", (chunk) => {
  pending += chunk.toString("utf8");
  for (let nl; (nl = pending.indexOf("\n")) >= 0; ) {
    const text = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    let value = null;
    try {
      value = JSON.parse(text);
    } catch {
      value = null;
    }
    lines.push(value);
    const notification = value && !Array.isArray(value) && value.method !== undefined && value.id === undefined;
    if (!notification) answers++;
    if (answers >= (plan.answers ?? 0)) closeInput();
  }
});
server.stderr.on("data", (chunk) => (stderr += chunk.toString("utf8")));
const timer = setTimeout(() => {
  timedOut = true;
  closeInput();
}, plan.timeout_ms ?? 60000);
server.on("exit", (status, signal) => {
  clearTimeout(timer);
  process.stdout.write(JSON.stringify({ lines, stderr, status, signal, timed_out: timedOut }) + "\n");
});
server.stdin.on("error", () => {});
for (const line of plan.lines) server.stdin.write(line + "\n");
if ((plan.answers ?? 0) === 0) closeInput();
