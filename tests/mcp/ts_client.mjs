// The TypeScript MCP SDK's client against `rea serve`: it validates every structuredContent against the tool's
// advertised output schema (callTool throws when one does not match). Argv: python, target, calls.json.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [python, target, callsFile] = process.argv.slice(2);
const calls = JSON.parse(readFileSync(callsFile, "utf8"));
const transport = new StdioClientTransport({ command: python, args: ["-m", "rea", "serve"], env: process.env, stderr: "ignore" });
const client = new Client({ name: "rea-ts-check", version: "1" });
await client.connect(transport);
const tools = (await client.listTools()).tools;
const out = { tools: tools.length, typed: tools.filter((t) => { const r = t.outputSchema?.properties?.normalized_result; return Boolean(r?.$ref || r?.properties); }).length, results: [] };
await client.callTool({ name: "open_binary", arguments: { path: target, provider_id: "native" } });
for (const [name, args] of calls) {
  try {
    const reply = await client.callTool({ name, arguments: args });
    out.results.push({ name, ok: !reply.isError, validated: reply.structuredContent !== undefined });
  } catch (err) {
    out.results.push({ name, ok: false, error: String(err?.message ?? err).slice(0, 400) });
  }
}
await client.close();
console.log(JSON.stringify(out));
