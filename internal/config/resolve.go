package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/ptcrun/ptc/tools"
)

// ResolveEnv returns the environment of the mcp_stdio source at key
// (e.g. "tool_sources[0]"): its literal env with env_from_env's variables
// read through lookupEnv. A variable that is not set is an error naming
// the key.
func (s *ToolSource) ResolveEnv(key string, lookupEnv func(string) (string, bool)) (map[string]string, error) {
	env := maps.Clone(s.Env)
	for k, name := range s.EnvFromEnv {
		v, ok := lookupEnv(name)
		if !ok {
			return nil, keyError(key+".env_from_env."+k, "names the environment variable %s, which is not set: set it before starting ptcd", name)
		}
		if env == nil {
			env = map[string]string{}
		}
		env[k] = v
	}
	return env, nil
}

// ResolveHeaders returns the headers_from_env of the source at key, read
// through lookupEnv; a variable that is not set is an error naming the
// key.
func (s *ToolSource) ResolveHeaders(key string, lookupEnv func(string) (string, bool)) (map[string]string, error) {
	return resolveHeaders(key+".headers_from_env", s.HeadersFromEnv, lookupEnv)
}

// resolveHeaders reads the headers whose variables the mapping at key
// names.
func resolveHeaders(key string, m map[string]string, lookupEnv func(string) (string, bool)) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for h, name := range m {
		v, ok := lookupEnv(name)
		if !ok {
			return nil, keyError(key+"."+h, "names the environment variable %s, which is not set: set it before starting ptcd", name)
		}
		out[h] = v
	}
	return out, nil
}

// Schemas returns the tool's input and output schemas as JSON (nil when
// not given).
func (t HTTPTool) Schemas() (in, out json.RawMessage, err error) {
	if in, err = schemaJSON(t.InputSchema); err != nil {
		return nil, nil, fmt.Errorf("tool %s: input_schema: %w", t.Name, err)
	}
	if out, err = schemaJSON(t.OutputSchema); err != nil {
		return nil, nil, fmt.Errorf("tool %s: output_schema: %w", t.Name, err)
	}
	return in, out, nil
}

var errSchemaType = errors.New("must be a mapping (a JSON Schema object) or a boolean")

// schemaJSON converts a schema written in YAML to JSON; nil stays empty.
func schemaJSON(v any) (json.RawMessage, error) {
	switch v.(type) {
	case nil:
		return nil, nil
	case map[string]any, bool:
	default:
		return nil, errSchemaType
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot be written as JSON: %v", err)
	}
	if _, err := tools.CompileSchema(b); err != nil {
		return nil, err
	}
	return b, nil
}
