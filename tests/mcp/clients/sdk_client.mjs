// A client on the official TypeScript SDK (Client + StdioClientTransport),
// driven by a plan: node sdk_client.mjs PLAN.json
//   {"command": "...", "args": [...], "cwd": "...",
//    "elicit": "accept" | "decline" (answers elicitation; absent: not declared),
//    "steps": [{"list": true} | {"call": NAME, "arguments": {...}}],
//    "hold": true (after the steps, print the server's pid and wait to be killed)}
// One JSON line per step on stdout: {"tools": [names]}, {"result": ...} or
// {"error": {"code", "message"}}.
import { readFileSync } from "node:fs";
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
const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args,
  cwd: plan.cwd,
  env: process.env,
  stderr: "inherit",
});
await client.connect(transport);
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");
for (const step of plan.steps) {
  try {
    if (step.list) {
      const { tools } = await client.listTools();
      print({ tools: tools.map((t) => t.name), definitions: tools });
    } else {
      print({ result: await client.callTool({ name: step.call, arguments: step.arguments ?? {} }, undefined, { timeout: 600000 }) });
    }
  } catch (e) {
    print({ error: { code: e.code ?? null, message: String(e.message ?? e) } });
  }
}
if (plan.hold) {
  print({ pid: transport.pid, version: client.getServerVersion(), protocol: transport.protocolVersion ?? null });
  setInterval(() => {}, 1 << 30);
} else {
  await client.close();
}
