// A client on the official TypeScript SDK (Client + StdioClientTransport),
// driven by a plan: node sdk_client.mjs PLAN.json
//   {"command": "...", "args": [...], "cwd": "...",
//    "elicit": HOW or [HOW...] (declares elicitation and answers each question: the next HOW
//              of the list, "decline" once it is used up; absent: not declared). HOW is
//              "accept" (chooses "yes"), "always" ("always for this session"), "no",
//              "decline" or "cancel" (the protocol's own actions), "never" (no answer),
//    "roots": [{"uri", "name"}...] (declares roots and answers roots/list with these),
//    "steps": [STEP...],
//    "hold": true (after the steps, print the server's pid and wait to be killed),
//    "http_token": TOKEN (the command is `chock mcp --http ...`: the client starts it, reads
//                  the URL it prints, and connects with the SDK's StreamableHTTPClientTransport,
//                  sending this bearer token; at the end it closes the session (DELETE), stops
//                  the server with SIGTERM and prints {"server_exit": {"code", "signal"}})}
// A STEP:
//   {"list": true}                       tools/list
//   {"call": NAME, "arguments": {...},   tools/call; "abort_after_ms": the SDK's AbortSignal
//    "abort_after_ms": N, "progress": true}  fires then; "progress": onprogress counts notifications
//                                        (and the request carries a progressToken); "timeout_ms":
//                                        the SDK's request timeout (default 600000), which
//                                        "reset_timeout_on_progress": true restarts at each progress
//   {"ping": true}                       ping
//   {"concurrent": [STEP...]}            all at once, each after its own "delay_ms"
//   {"processes": MARKER}                how many processes' command lines hold MARKER (/proc)
//   {"sleep_ms": N}
//   {"close_during": STEP, "after_ms": N}  STEP started, the client closed N ms later
//   {"close": true}                      the client closes, as the SDK does (the server's stdin
//                                        ended; SIGTERM 2 s later, SIGKILL 2 s after that), and
//                                        gives the notifications/message that came until the
//                                        server exited (and forgets them); steps after it fail
//   {"set_level": LEVEL}                 logging/setLevel
//   {"logs": true}                       the notifications/message received so far (and forgets them)
//   {"elicitations": true}               the questions asked so far, {message, requestedSchema}
//                                        each (and forgets them)
//   {"schemas": true}                    every tool's inputSchema and outputSchema compiled by Ajv
//                                        in JSON Schema 2020-12 mode, strict: {"schema_errors": [...]}
// A tools/call STEP with "validate": true also checks its structuredContent against the tool's
// outputSchema (from the last list) with that Ajv: "validation": {"valid", "errors", "has_schema",
// "tampered_valid"} (the same content with one key added, which the schema must refuse).
// One JSON line per step on stdout: {"tools": [names]}, {"result": ...}, {"error": {"code", "message"}},
// {"aborted": true}, {"pong": true}, {"concurrent": [...]}, {"processes": n}, {"closed": {...}},
// {"level_set": LEVEL}, {"logs": [params...]}, {"elicitations": [...]},
// {"closed": {"ms", "exit_code", "signal"}, "logs": [params...]} (a "close" step);
// steps of a concurrent group carry "ms" (their own time) and "done_ms" (since the group began),
// a call with "progress" carries "progress" (notifications seen). At the end (unless "hold"):
// {"unknown_responses": n} (answers for requests the client no longer waits for).
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

// The SDK's own Ajv (8), in its JSON Schema 2020-12 mode: MCP's default dialect.
const sdkRequire = createRequire(fileURLToPath(import.meta.resolve("@modelcontextprotocol/sdk/client/index.js")));
const Ajv2020 = sdkRequire("ajv/dist/2020").default;
const ajv = new Ajv2020({ strict: true, allErrors: true });

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const capabilities = {};
if (plan.elicit) capabilities.elicitation = {};
if (plan.roots) capabilities.roots = { listChanged: false };
const client = new Client({ name: "chock-test-sdk-client", version: "1.0.0" }, { capabilities });
if (plan.roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: plan.roots }));
let logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
let definitions = [];
let elicitations = [];
if (plan.elicit) {
  const answers = Array.isArray(plan.elicit) ? [...plan.elicit] : null;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const { message, requestedSchema } = request.params;
    elicitations.push({ message, requestedSchema });
    console.error(`elicitation: ${message}`);
    const how = answers ? (answers.shift() ?? "decline") : plan.elicit;
    if (how === "decline" || how === "cancel") return { action: how };
    if (how === "never") return new Promise(() => {});
    const answer = { accept: "yes", always: "always for this session", no: "no" }[how];
    return { action: "accept", content: { answer } };
  });
}
let unknownResponses = 0;
client.onerror = (e) => {
  if (String(e?.message ?? e).includes("unknown message ID")) unknownResponses++;
};
let httpServer = null;
let transport;
if (plan.http_token) {
  httpServer = spawn(plan.command, plan.args, { cwd: plan.cwd, env: process.env, stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    httpServer.stdout.on("data", (d) => {
      seen += d;
      if (seen.includes("\n")) resolve(seen.slice(0, seen.indexOf("\n")));
    });
    httpServer.on("exit", (code) => reject(new Error(`chock mcp --http exited (${code}) before it served`)));
  });
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${plan.http_token}` } },
  });
} else {
  transport = new StdioClientTransport({
    command: plan.command,
    args: plan.args,
    cwd: plan.cwd,
    env: process.env,
    stderr: "inherit",
  });
}
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

function validate(name, result) {
  const schema = definitions.find((t) => t.name === name)?.outputSchema;
  if (!schema) return { has_schema: false };
  const check = ajv.compile(schema);
  const valid = check(result.structuredContent);
  const errors = check.errors ?? [];
  const tampered = check({ ...result.structuredContent, chock_tampered: 1 });
  return { has_schema: true, valid, errors, tampered_valid: tampered };
}

async function run(step) {
  try {
    if (step.list) {
      const { tools } = await client.listTools();
      definitions = tools;
      return { tools: tools.map((t) => t.name), definitions: tools };
    }
    if (step.ping) {
      await client.ping();
      return { pong: true };
    }
    if (step.processes !== undefined) return { processes: processesWith(step.processes) };
    if (step.set_level !== undefined) {
      await client.setLoggingLevel(step.set_level);
      return { level_set: step.set_level };
    }
    if (step.logs) {
      const seen = logs;
      logs = [];
      return { logs: seen };
    }
    if (step.elicitations) {
      const seen = elicitations;
      elicitations = [];
      return { elicitations: seen };
    }
    if (step.schemas) {
      const errors = [];
      for (const t of definitions)
        for (const key of ["inputSchema", "outputSchema"])
          if (t[key])
            try {
              ajv.compile(t[key]);
            } catch (e) {
              errors.push(`${t.name}.${key}: ${e.message}`);
            }
      return { schema_errors: errors, tools: definitions.length };
    }
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
    if (step.close) {
      const proc = transport._process;
      const t = Date.now();
      // Resolves once the server's process has closed (its output all read) or the SDK gave up on it.
      await client.close();
      const closed = { ms: Date.now() - t, exit_code: proc?.exitCode ?? null, signal: proc?.signalCode ?? null };
      const seen = logs;
      logs = [];
      return { closed, logs: seen };
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
    const options = { timeout: step.timeout_ms ?? 600000, resetTimeoutOnProgress: !!step.reset_timeout_on_progress };
    let progress = 0;
    if (step.progress) options.onprogress = () => progress++;
    if (step.abort_after_ms !== undefined) {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), step.abort_after_ms);
      options.signal = controller.signal;
    }
    const result = await client.callTool({ name: step.call, arguments: step.arguments ?? {} }, undefined, options);
    const answer = step.progress ? { result, progress } : { result };
    if (step.validate) answer.validation = validate(step.call, result);
    return answer;
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
  if (httpServer) {
    await transport.terminateSession();
    await client.close();
    const exited = new Promise((resolve) => httpServer.on("exit", (code, signal) => resolve({ code, signal })));
    httpServer.kill("SIGTERM");
    print({ server_exit: await exited });
  } else {
    await client.close();
  }
}
