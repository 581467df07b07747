package tools

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Compiled is a tool whose schemas have been compiled. Output is nil when
// the tool has no output schema.
type Compiled struct {
	Tool
	Input  *Schema
	Output *Schema
}

// Compile checks a tool's name and handler and compiles its schemas. An
// empty input schema accepts any JSON object.
func Compile(t Tool) (*Compiled, error) { return CompileWith(t, CompileSchema) }

// CompileWith is Compile with the tool's schemas compiled by schema
// instead of CompileSchema: a cache of compiled schemas in front of
// CompileSchema, for a caller that compiles the same tools for every
// request. The schemas schema returns are shared by every tool given
// them; a compiled Schema is safe for concurrent use.
func CompileWith(t Tool, schema func(json.RawMessage) (*Schema, error)) (*Compiled, error) {
	if err := ValidateName(t.Name); err != nil {
		return nil, err
	}
	if t.Handler == nil {
		return nil, fmt.Errorf("tool %q has no handler", t.Name)
	}
	c, err := compileDefinition(t.Definition, t.Handler, schema)
	if err != nil {
		return nil, err
	}
	c.TrustOutput = t.TrustOutput
	c.Inline = t.Inline
	return c, nil
}

// Check reports whether d can define a tool: its name is valid and its
// schemas compile. Sources check the definitions they receive with it.
func (d Definition) Check() error {
	_, err := compileDefinition(d, nil, CompileSchema)
	return err
}

// compileDefinition compiles a definition's schemas with schema and binds
// handler.
func compileDefinition(d Definition, handler Handler, schema func(json.RawMessage) (*Schema, error)) (*Compiled, error) {
	if err := ValidateName(d.Name); err != nil {
		return nil, err
	}
	in := d.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	c := &Compiled{Tool: Tool{Definition: d, Handler: handler}}
	var err error
	if c.Input, err = schema(in); err != nil {
		return nil, fmt.Errorf("tool %q: input schema: %w", d.Name, err)
	}
	if len(d.OutputSchema) > 0 {
		if c.Output, err = schema(d.OutputSchema); err != nil {
			return nil, fmt.Errorf("tool %q: output schema: %w", d.Name, err)
		}
	}
	return c, nil
}

// Registry holds server tools by name. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	tools  map[string]*Compiled
	groups map[string][]string // group → names, for SetGroup
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]*Compiled{}, groups: map[string][]string{}}
}

// SetGroup replaces, atomically, every tool registered under group with ts
// (a tool source whose tool list changed). Executions that already started
// keep the tools they were given. The new tools must not collide with
// tools outside the group; on error nothing changes.
func (r *Registry) SetGroup(group string, ts []Tool) error {
	compiled := make([]*Compiled, 0, len(ts))
	seen := map[string]bool{}
	for _, t := range ts {
		c, err := Compile(t)
		if err != nil {
			return err
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %q appears twice in group %q", t.Name, group)
		}
		seen[t.Name] = true
		compiled = append(compiled, c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	mine := map[string]bool{}
	for _, n := range r.groups[group] {
		mine[n] = true
	}
	for _, c := range compiled {
		for name := range r.tools {
			if mine[name] {
				continue
			}
			if name == c.Name {
				return fmt.Errorf("tool %q is already registered", c.Name)
			}
			if namespaceClash(name, c.Name) {
				return fmt.Errorf("tool %q clashes with tool %q: a name cannot also be a namespace", c.Name, name)
			}
		}
	}
	for n := range mine {
		delete(r.tools, n)
	}
	names := make([]string, 0, len(compiled))
	for _, c := range compiled {
		r.tools[c.Name] = c
		names = append(names, c.Name)
	}
	r.groups[group] = names
	return nil
}

// Register compiles tools and adds them, in order. A second tool with the
// same name, or a name that is a namespace of another ("a" beside "a.b"),
// is an error (the tools before it are added).
func (r *Registry) Register(ts ...Tool) error {
	for _, t := range ts {
		if err := r.register(t); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) register(t Tool) error {
	c, err := Compile(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("tool %q is already registered", t.Name)
	}
	for name := range r.tools {
		if namespaceClash(name, t.Name) {
			return fmt.Errorf("tool %q clashes with tool %q: a name cannot also be a namespace", t.Name, name)
		}
	}
	r.tools[t.Name] = c
	return nil
}

// NamespaceClash reports whether d's name and name cannot both live in one
// tools object: one is a dotted prefix of the other ("a" beside "a.b").
func (d Definition) NamespaceClash(name string) bool { return namespaceClash(d.Name, name) }

func namespaceClash(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(b) > len(a) && b[:len(a)] == a && b[len(a)] == '.'
}

// Lookup returns the named tool.
func (r *Registry) Lookup(name string) (*Compiled, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.tools[name]
	return c, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// All returns every tool, sorted by name, in a new slice.
func (r *Registry) All() []*Compiled {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Compiled, 0, len(r.tools))
	for _, c := range r.tools {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Definitions returns the definitions of all tools, sorted by name.
func (r *Registry) Definitions() []Definition {
	all := r.All()
	out := make([]Definition, 0, len(all))
	for _, c := range all {
		out = append(out, c.Definition)
	}
	return out
}
