// Strict JSON serialisation: JSON.stringify silently turns NaN into null,
// drops functions and turns a Map into {}; a tool result or an input that
// loses data that way is a bug the caller should hear about.

/** NotJSONError explains why a value cannot be sent as JSON; `path` is where. */
export class NotJSONError extends Error {
  override name = "NotJSONError";
  /** path is a JSON-pointer-like location of the offending value ("" is the value itself). */
  readonly path: string;

  constructor(path: string, message: string) {
    super(path === "" ? message : `${message} at ${path}`);
    this.path = path;
  }
}

/**
 * toJSONStrict serialises value like JSON.stringify, but throws a
 * NotJSONError for what JSON cannot represent faithfully: undefined at the
 * top level, BigInt, functions, symbols, NaN and ±Infinity, Map, Set,
 * WeakMap, WeakSet and cyclic structures. Object properties whose value is
 * undefined are omitted, as JSON.stringify does. Values with toJSON (Date)
 * serialise through it.
 */
export function toJSONStrict(value: unknown): string {
  // JSON.stringify calls the replacer with `this` bound to the object that
  // holds each key, parents before children. `holders` is the chain of
  // objects from the value down to the current holder and `keys` the key
  // of each below the top: cycle detection and a path for messages.
  const holders: unknown[] = [];
  const keys: string[] = [];
  function replacer(this: unknown, key: string, v: unknown): unknown {
    const top = holders.length === 0;
    if (!top) {
      while (holders.length > 0 && holders[holders.length - 1] !== this) {
        holders.pop();
        keys.pop();
      }
    }
    const path = () => (top ? "" : "/" + [...keys, key].join("/"));
    switch (typeof v) {
      case "bigint":
        throw new NotJSONError(path(), "a BigInt cannot be represented in JSON (convert it to a number or string)");
      case "function":
        throw new NotJSONError(path(), "a function cannot be represented in JSON");
      case "symbol":
        throw new NotJSONError(path(), "a symbol cannot be represented in JSON");
      case "undefined":
        if (top) throw new NotJSONError("", "undefined cannot be represented in JSON (use null)");
        return v;
      case "number":
        if (!Number.isFinite(v)) throw new NotJSONError(path(), `${v} cannot be represented in JSON`);
        return v;
      case "object":
        if (v === null) return v;
        if (v instanceof Map || v instanceof Set || v instanceof WeakMap || v instanceof WeakSet) {
          throw new NotJSONError(path(), `a ${v.constructor.name} cannot be represented in JSON (convert it to an object or array)`);
        }
        if (holders.includes(v)) throw new NotJSONError(path(), "a cyclic structure cannot be represented in JSON");
        if (!top) keys.push(key);
        holders.push(v);
        return v;
      default:
        return v;
    }
  }
  const out = JSON.stringify(value, replacer);
  if (out === undefined) throw new NotJSONError("", "the value has no JSON representation");
  return out;
}
