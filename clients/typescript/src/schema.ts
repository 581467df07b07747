// Schemas as the client accepts them (a JSON Schema object or boolean, or
// a schema library's value implementing Standard JSON Schema, such as a
// Zod 4 schema) and the checks done before anything is sent. The server
// compiles every schema fully and answers INVALID_ARGUMENT for what these
// structural checks let through.

import { InvalidRequestError } from "./errors.js";
import { NotJSONError, toJSONStrict } from "./json.js";

/** JSONSchema is a JSON Schema (draft 2020-12) document: an object or a boolean. */
export type JSONSchema = boolean | { [keyword: string]: unknown };

/**
 * StandardJSONSchema is a schema from a library that exports JSON Schema
 * through the Standard JSON Schema interface (`~standard.jsonSchema`): Zod
 * 4.2 and later, and others. The client converts it with the library's own
 * export and validates tool arguments with the library's own validator.
 */
export interface StandardJSONSchema<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly jsonSchema: {
      readonly input: (options: { target: string }) => Record<string, unknown>;
      readonly output: (options: { target: string }) => Record<string, unknown>;
    };
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/** StandardResult is the outcome of a Standard Schema validation. */
export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<unknown> }> };

/** SchemaLike is what the client accepts wherever a schema goes. */
export type SchemaLike = JSONSchema | StandardJSONSchema<any, any>;

/** InferOutput is the value a SchemaLike validates to: the library's output type, else unknown. */
export type InferOutput<S> = S extends StandardJSONSchema<any, infer O> ? O : unknown;

/** isStandardJSONSchema reports whether s implements Standard JSON Schema. */
export function isStandardJSONSchema(s: unknown): s is StandardJSONSchema {
  const std = (s as { "~standard"?: { jsonSchema?: unknown; validate?: unknown } } | null)?.["~standard"];
  return typeof std === "object" && std !== null && typeof std.validate === "function" &&
    typeof (std.jsonSchema as { input?: unknown } | undefined)?.input === "function";
}

/**
 * schemaJSON returns a SchemaLike as JSON Schema text, after the
 * structural checks. `io` picks the input or output side of a library
 * schema with transforms. It throws InvalidRequestError naming `path`.
 */
export function schemaJSON(schema: SchemaLike, path: string, io: "input" | "output"): string {
  let doc: unknown = schema;
  if (isStandardJSONSchema(schema)) {
    try {
      doc = schema["~standard"].jsonSchema[io]({ target: "draft-2020-12" });
    } catch (e) {
      throw new InvalidRequestError(path, `the ${schema["~standard"].vendor} schema cannot be converted to JSON Schema: ${(e as Error).message}`, { cause: e });
    }
  } else if (typeof schema === "object" && schema !== null && ("~standard" in schema || "_def" in schema || "_zod" in schema)) {
    throw new InvalidRequestError(path,
      "this schema library value does not export JSON Schema through Standard JSON Schema (`~standard.jsonSchema`); " +
      "use Zod 4.2 or later, or pass a JSON Schema (e.g. z.toJSONSchema(schema))");
  }
  checkSchema(doc, path);
  try {
    return toJSONStrict(doc);
  } catch (e) {
    throw new InvalidRequestError(path + ((e as NotJSONError).path ?? ""), `the schema is not JSON: ${(e as Error).message}`, { cause: e });
  }
}

const typeNames = new Set(["null", "boolean", "object", "array", "number", "string", "integer"]);

// Keywords whose value is one schema.
const schemaKeywords = [
  "additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else",
  "unevaluatedItems", "unevaluatedProperties", "contentSchema",
];
// Keywords whose value is an object of schemas.
const schemaMapKeywords = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
// Keywords whose value is a non-empty array of schemas.
const schemaArrayKeywords = ["allOf", "anyOf", "oneOf", "prefixItems"];
// Keywords whose value is a non-negative integer.
const countKeywords = [
  "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains",
];
// Keywords whose value is a number.
const numberKeywords = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];

/**
 * checkSchema does the structural checks of a JSON Schema (draft 2020-12)
 * that need no validator: the document is an object or boolean; type names
 * are JSON Schema's; keywords that hold schemas hold schemas; required is a
 * list of unique strings; counts are non-negative integers; pattern is a
 * regular expression; $ref is local (the server refuses external ones).
 */
export function checkSchema(s: unknown, path: string): void {
  if (typeof s === "boolean") return;
  const bad = (where: string, msg: string): never => {
    throw new InvalidRequestError(where, `invalid JSON Schema: ${msg}`);
  };
  if (typeof s !== "object" || s === null || Array.isArray(s)) {
    bad(path, `a schema must be an object or a boolean, not ${describe(s)}`);
  }
  const o = s as Record<string, unknown>;
  const at = (k: string) => `${path}.${k}`;
  if ("type" in o) {
    const t = o.type;
    const list = Array.isArray(t) ? t : [t];
    if (Array.isArray(t) && t.length === 0) bad(at("type"), "type must not be an empty list");
    for (const name of list) {
      if (typeof name !== "string" || !typeNames.has(name)) {
        bad(at("type"), `${JSON.stringify(name) ?? describe(name)} is not a JSON Schema type (use one of ${[...typeNames].join(", ")})`);
      }
    }
    if (new Set(list).size !== list.length) bad(at("type"), "type lists a name twice");
  }
  for (const k of schemaKeywords) {
    if (k in o) {
      if (k === "items" && Array.isArray(o[k])) bad(at(k), "items must be one schema in draft 2020-12 (use prefixItems for a tuple)");
      checkSchema(o[k], at(k));
    }
  }
  for (const k of schemaMapKeywords) {
    if (!(k in o)) continue;
    const m = o[k];
    if (typeof m !== "object" || m === null || Array.isArray(m)) bad(at(k), `${k} must be an object of schemas, not ${describe(m)}`);
    for (const [name, sub] of Object.entries(m as object)) checkSchema(sub, `${at(k)}.${name}`);
  }
  for (const k of schemaArrayKeywords) {
    if (!(k in o)) continue;
    const a = o[k];
    if (!Array.isArray(a) || a.length === 0) bad(at(k), `${k} must be a non-empty array of schemas`);
    (a as unknown[]).forEach((sub, i) => checkSchema(sub, `${at(k)}[${i}]`));
  }
  if ("required" in o) {
    const r = o.required;
    if (!Array.isArray(r) || r.some((x) => typeof x !== "string")) bad(at("required"), "required must be an array of property names");
    if (new Set(r as string[]).size !== (r as string[]).length) bad(at("required"), "required lists a property twice");
  }
  if ("enum" in o && !Array.isArray(o.enum)) bad(at("enum"), "enum must be an array");
  for (const k of countKeywords) {
    if (k in o && !(Number.isInteger(o[k]) && (o[k] as number) >= 0)) bad(at(k), `${k} must be a non-negative integer`);
  }
  for (const k of numberKeywords) {
    if (k in o && (typeof o[k] !== "number" || !Number.isFinite(o[k]))) bad(at(k), `${k} must be a number`);
  }
  if ("multipleOf" in o && (o.multipleOf as number) <= 0) bad(at("multipleOf"), "multipleOf must be greater than 0");
  if ("pattern" in o) {
    if (typeof o.pattern !== "string") bad(at("pattern"), "pattern must be a string");
    try {
      new RegExp(o.pattern as string, "u");
    } catch (e) {
      bad(at("pattern"), `pattern is not a regular expression: ${(e as Error).message}`);
    }
  }
  if ("$ref" in o) {
    if (typeof o.$ref !== "string") bad(at("$ref"), "$ref must be a string");
    if (!(o.$ref as string).startsWith("#")) bad(at("$ref"), `external $ref ${JSON.stringify(o.$ref)} is not allowed; inline the schema or use $defs`);
  }
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return `a ${typeof v}`;
}
