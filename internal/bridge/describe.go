package bridge

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/ptcrun/ptc/internal/rank"
	"github.com/ptcrun/ptc/internal/tsdecl"
	"github.com/ptcrun/ptc/tools"
)

// SearchHit is one result of Caller.Search (tools.$search in a script).
type SearchHit struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
}

// Description is a tool's definition plus its TypeScript declaration: the
// result of Caller.Describe (tools.$describe in a script).
// RequiresApproval is the effective requirement, as ListTools reports it:
// the definition's, or the server's configuration's (Config.Approvals).
type Description struct {
	Name             string `json:"name"`
	Description      string `json:"description"`
	InputSchema      any    `json:"input_schema,omitempty"`
	OutputSchema     any    `json:"output_schema,omitempty"`
	RequiresApproval bool   `json:"requires_approval,omitempty"`
	TypeScript       string `json:"typescript"`

	// encoded is the description's JSON, made once with it (Describe):
	// every engine sends a description on as JSON, and encoding the
	// decoded schemas again for each describe cost milliseconds.
	encoded json.RawMessage
}

// MarshalJSON returns the description's JSON: the one made with it when
// Describe made it.
func (d Description) MarshalJSON() ([]byte, error) {
	if d.encoded != nil {
		return d.encoded, nil
	}
	type plain Description
	return json.Marshal(plain(d))
}

// describer holds what discovery makes once per execution: the search
// index (on the first search) and each tool's Description (on its first
// describe).
type describer struct {
	once  sync.Once
	defs  []tools.Definition
	index *rank.Index

	mu        sync.Mutex
	described map[string]Description
}

func (d *Dispatcher) definitions() []tools.Definition {
	out := make([]tools.Definition, 0, len(d.names))
	for _, n := range d.names {
		out = append(out, d.tools[n].Definition)
	}
	return out
}

// Search implements Caller: it ranks the callable tools by relevance to
// query (tools.$search), at most limit of them.
func (d *Dispatcher) Search(query string, limit int) []SearchHit {
	d.desc.once.Do(func() {
		d.desc.defs = d.definitions()
		d.desc.index = rank.NewIndex(d.desc.defs)
	})
	if limit <= 0 || limit > MaxSearchResults {
		limit = MaxSearchResults
	}
	var out []SearchHit
	for _, m := range d.desc.index.Rank(query, limit) {
		var description string
		if t := d.tools[m.Name]; t != nil {
			description = t.Description
		}
		out = append(out, SearchHit{Name: m.Name, Description: description, Score: m.Score})
	}
	return out
}

// Describe implements Caller (tools.$describe).
func (d *Dispatcher) Describe(name string) (Description, bool) {
	t, ok := d.tools[name]
	if !ok {
		return Description{}, false
	}
	// Made once per tool and execution: a script may describe a tool
	// again and again, and each costs a declaration generated and the
	// schemas decoded (35 ms for a 9,000-value schema).
	d.desc.mu.Lock()
	defer d.desc.mu.Unlock()
	if desc, ok := d.desc.described[name]; ok {
		return desc, true
	}
	desc := d.describe(t)
	if b, err := json.Marshal(desc); err == nil {
		desc.encoded = b
	}
	if d.desc.described == nil {
		d.desc.described = map[string]Description{}
	}
	d.desc.described[name] = desc
	return desc, true
}

// describe makes the Description of t.
func (d *Dispatcher) describe(t *tools.Compiled) Description {
	def := t.Definition
	if _, ok := d.cfg.Approvals[t.Name]; ok {
		def.RequiresApproval = true
	}
	desc := Description{Name: t.Name, Description: t.Description, RequiresApproval: def.RequiresApproval}
	if t.Input != nil {
		desc.InputSchema = decodeSchema(t.Input.Raw())
	}
	if t.Output != nil {
		desc.OutputSchema = decodeSchema(t.Output.Raw())
	}
	if ts, err := tsdecl.Generate([]tools.Definition{def}, tsdecl.Options{}); err == nil {
		desc.TypeScript = ts
	}
	return desc
}

// decodeSchema decodes a compiled schema document for a Description,
// numbers kept exact; nil if it does not decode.
func decodeSchema(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}
