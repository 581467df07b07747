// Compact TypeScript declarations of client tools for a model, from their
// JSON Schemas. The server declares its own tools (ListTools typescript);
// client tools are known only here, so the code-mode adapters declare them
// next to the server's.

/** maxDepth bounds how deep a schema is rendered; deeper parts are `unknown`. */
const maxDepth = 6;

const identRE = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** tsType renders a JSON Schema as a TypeScript type expression. */
export function tsType(schema: unknown, depth = 0): string {
  if (schema === true || schema === undefined) return "unknown";
  if (schema === false) return "never";
  if (typeof schema !== "object" || schema === null || depth > maxDepth) return "unknown";
  const s = schema as Record<string, unknown>;
  if ("const" in s) return literal(s.const);
  if (Array.isArray(s.enum)) return s.enum.length ? s.enum.map(literal).join(" | ") : "never";
  for (const k of ["anyOf", "oneOf"]) {
    if (Array.isArray(s[k])) return union((s[k] as unknown[]).map((x) => tsType(x, depth + 1)));
  }
  if (Array.isArray(s.allOf)) return (s.allOf as unknown[]).map((x) => wrap(tsType(x, depth + 1))).join(" & ");
  const types = Array.isArray(s.type) ? (s.type as unknown[]) : typeof s.type === "string" ? [s.type] : [];
  if (types.length === 0) {
    if (s.properties || s.additionalProperties !== undefined) return objectType(s, depth);
    if (s.items || s.prefixItems) return arrayType(s, depth);
    return "unknown";
  }
  return union(types.map((t) => {
    switch (t) {
      case "string": return "string";
      case "number": case "integer": return "number";
      case "boolean": return "boolean";
      case "null": return "null";
      case "array": return arrayType(s, depth);
      case "object": return objectType(s, depth);
      default: return "unknown";
    }
  }));
}

function arrayType(s: Record<string, unknown>, depth: number): string {
  if (Array.isArray(s.prefixItems)) {
    const items = (s.prefixItems as unknown[]).map((x) => tsType(x, depth + 1));
    if (s.items !== false) items.push(`...${wrap(tsType(s.items, depth + 1))}[]`);
    return `[${items.join(", ")}]`;
  }
  return `${wrap(tsType(s.items, depth + 1))}[]`;
}

function objectType(s: Record<string, unknown>, depth: number): string {
  const props = (typeof s.properties === "object" && s.properties !== null ? s.properties : {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const members = Object.entries(props).map(([k, v]) => `${key(k)}${required.has(k) ? "" : "?"}: ${tsType(v, depth + 1)}`);
  const extra = s.additionalProperties;
  if (extra !== undefined && extra !== false) members.push(`[key: string]: ${extra === true ? "unknown" : tsType(extra, depth + 1)}`);
  else if (extra === undefined && members.length === 0) return "Record<string, unknown>";
  return members.length ? `{ ${members.join("; ")} }` : "{}";
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  return unique.length ? unique.join(" | ") : "never";
}

function wrap(t: string): string {
  return /[|&]/.test(t) && !/^\{.*\}$/.test(t) ? `(${t})` : t;
}

function key(k: string): string {
  return identRE.test(k) ? k : JSON.stringify(k);
}

function literal(v: unknown): string {
  return JSON.stringify(v) ?? "unknown";
}

/** DeclaredTool is what tsMembers needs of a tool. */
export interface DeclaredTool {
  name: string;
  description: string;
  inputSchemaJson: string;
  outputSchemaJson: string;
}

/**
 * tsMembers renders tools as members of the `tools` object type, dotted
 * names as nested objects, each with its description as a doc comment.
 */
export function tsMembers(tools: DeclaredTool[], indent = "  "): string {
  interface Node { tool?: DeclaredTool; children: Map<string, Node> }
  const root: Node = { children: new Map() };
  for (const t of tools) {
    let n = root;
    for (const seg of t.name.split(".")) {
      if (!n.children.has(seg)) n.children.set(seg, { children: new Map() });
      n = n.children.get(seg)!;
    }
    n.tool = t;
  }
  const lines: string[] = [];
  const render = (n: Node, pad: string) => {
    for (const [seg, child] of n.children) {
      if (child.tool) {
        const t = child.tool;
        if (t.description) lines.push(`${pad}/** ${t.description.replace(/\*\//g, "* /").replace(/\s*\n\s*/g, " ")} */`);
        const input = t.inputSchemaJson ? tsType(JSON.parse(t.inputSchemaJson)) : "unknown";
        const output = t.outputSchemaJson ? tsType(JSON.parse(t.outputSchemaJson)) : "unknown";
        lines.push(`${pad}${key(seg)}(args: ${input}): Promise<${output}>;`);
      }
      if (child.children.size > 0) {
        lines.push(`${pad}${key(seg)}: {`);
        render(child, pad + indent);
        lines.push(`${pad}};`);
      }
    }
  };
  render(root, indent);
  return lines.join("\n");
}

/**
 * withClientTools adds client tools to the server's declarations (from
 * ListTools): inside its `declare const tools: {...}` when it has one,
 * else as a declaration of their own.
 */
export function withClientTools(serverTS: string, tools: DeclaredTool[]): string {
  if (tools.length === 0) return serverTS;
  const members = tsMembers(tools);
  const marker = /declare const tools: \{(\};)?/;
  const m = marker.exec(serverTS);
  if (!m) return `${serverTS}\n\n// Tools served by the caller, also on \`tools\`:\ndeclare const tools: {\n${members}\n};\n`;
  const at = m.index + m[0].length;
  return m[1] !== undefined
    ? `${serverTS.slice(0, m.index)}declare const tools: {\n${members}\n};${serverTS.slice(at)}`
    : `${serverTS.slice(0, at)}\n${members}${serverTS.slice(at)}`;
}
