// A client on the official TypeScript SDK (Client + StdioClientTransport),
// driven by a plan: node sdk_client.mjs PLAN.json
//   {"command": "...", "args": [...], "cwd": "...",
//    "elicit": "accept" | "decline" (answers elicitation; absent: not declared),
//    "steps": [STEP...],
//    "hold": true (after the steps, print the server's pid and wait to be killed)}
// A STEP:
//   {"list": true}                       tools/list
//   {"call": NAME, "arguments": {...},   tools/call; "abort_after_ms": the SDK's AbortSignal
//    "abort_after_ms": N, "progress": true}  fires then; "progress": onprogress counts notifications
//   {"ping": true}                       ping
//   {"concurrent": [STEP...]}            all at once, each after its own "delay_ms"
//   {"processes": MARKER}                how many processes' command lines hold MARKER (/proc)
//   {"sleep_ms": N}
//   {"close_during": STEP, "after_ms": N}  STEP started, the client closed N ms later
// One JSON line per step on stdout: {"tools": [names]}, {"result": ...}, {"error": {"code", "message"}},
// {"aborted": true}, {"pong": true}, {"concurrent": [...]}, {"processes": n}, {"closed": {...}};
// steps of a concurrent group carry "ms" (their own time) and "done_ms" (since the group began),
// a call with "progress" carries "progress" (notifications seen). At the end (unless "hold"):
// {"unknown_responses": n} (answers for requests the client no longer waits for).
import { readdirSync, readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const capabilities = plan.elicit ? { elicitation: {} } : {};
const client = new Client({ name: "chock-test-sdk-client", version: "1.0.0" }, { capabilities });
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    console.error(`elicitation: ${request.params.message}`);
    return plan.elicit === "accept" ? { action: "accept", content: { apply: true } } : { action: "decline" };
  });
}
let unknownResponses = 0;
client.onerror = (e) => {
  if (String(e?.message ?? e).includes("unknown message ID")) unknownResponses++;
};
const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args,
  cwd: plan.cwd,
  env: process.env,
  stderr: "inherit",
});
await client.connect(transport);
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function processesWith(marker) {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "latin1").includes(marker)) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

async function run(step) {
  try {
    if (step.list) {
      const { tools } = await client.listTools();
      return { tools: tools.map((t) => t.name), definitions: tools };
    }
    if (step.ping) {
      await client.ping();
      return { pong: true };
    }
    if (step.processes !== undefined) return { processes: processesWith(step.processes) };
    if (step.sleep_ms !== undefined) {
      await sleep(step.sleep_ms);
      return { slept: step.sleep_ms };
    }
    if (step.concurrent) {
      const began = Date.now();
      const results = await Promise.all(
        step.concurrent.map(async (s) => {
          await sleep(s.delay_ms ?? 0);
          const t = Date.now();
          const r = await run(s);
          return { ...r, ms: Date.now() - t, done_ms: Date.now() - began };
        }),
      );
      return { concurrent: results };
    }
    if (step.close_during) {
      const proc = transport._process;
      const pending = run(step.close_during);
      await sleep(step.after_ms ?? 0);
      const t = Date.now();
      await client.close();
      const closed = { ms: Date.now() - t, exit_code: proc?.exitCode ?? null, signal: proc?.signalCode ?? null };
      const settled = await Promise.race([pending, sleep(5000).then(() => ({ still_pending: true }))]);
      return { closed, call: settled };
    }
    const options = { timeout: 600000 };
    let progress = 0;
    if (step.progress) options.onprogress = () => progress++;
    if (step.abort_after_ms !== undefined) {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), step.abort_after_ms);
      options.signal = controller.signal;
    }
    const result = await client.callTool({ name: step.call, arguments: step.arguments ?? {} }, undefined, options);
    return step.progress ? { result, progress } : { result };
  } catch (e) {
    if (step.abort_after_ms !== undefined && (e?.name === "AbortError" || String(e).includes("abort")))
      return { aborted: true };
    return { error: { code: e.code ?? null, message: String(e.message ?? e) } };
  }
}

for (const step of plan.steps) print(await run(step));
if (plan.hold) {
  print({ pid: transport.pid, version: client.getServerVersion(), protocol: transport.protocolVersion ?? null });
  setInterval(() => {}, 1 << 30);
} else {
  // A moment for a late answer to a request given up on to arrive, and be counted.
  await sleep(plan.settle_ms ?? 0);
  print({ unknown_responses: unknownResponses });
  await client.close();
}
