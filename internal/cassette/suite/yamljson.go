package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds the nodes one YAML value may expand to (aliases
// included), so that a hostile file cannot blow up memory.
const maxNodes = 1 << 20

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// nodeJSON converts a YAML value to JSON, keeping the key order. A zero
// node (the key was absent) gives nil.
func nodeJSON(n *yaml.Node) (json.RawMessage, error) {
	if n == nil || n.Kind == 0 {
		return nil, nil
	}
	c := converter{budget: maxNodes}
	if err := c.value(n, 0); err != nil {
		return nil, err
	}
	return c.buf.Bytes(), nil
}

type converter struct {
	buf    bytes.Buffer
	budget int
}

func (c *converter) value(n *yaml.Node, depth int) error {
	c.budget--
	if c.budget < 0 {
		return fmt.Errorf("line %d: the value is too large (more than %d nodes)", n.Line, maxNodes)
	}
	if depth > 1000 {
		return fmt.Errorf("line %d: the value is nested too deeply", n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			c.buf.WriteString("null")
			return nil
		}
		return c.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		return c.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		c.buf.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			if err := c.value(e, depth+1); err != nil {
				return err
			}
		}
		c.buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		c.buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a mapping key must be a plain string to convert to JSON", k.Line)
			}
			if i > 0 {
				c.buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k.Value)
			c.buf.Write(kb)
			c.buf.WriteByte(':')
			if err := c.value(v, depth+1); err != nil {
				return err
			}
		}
		c.buf.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return c.scalar(n)
	}
	return fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func (c *converter) scalar(n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		c.buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		c.buf.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		if jsonNumber.MatchString(n.Value) {
			c.buf.WriteString(n.Value)
			return nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		b, _ := json.Marshal(f)
		c.buf.Write(b)
	default: // !!str, !!timestamp, !!binary and custom tags: the text as written
		b, _ := json.Marshal(n.Value)
		c.buf.Write(b)
	}
	return nil
}

// jsonNode converts JSON to a YAML node in block style, keeping the key
// order, for writing expectations back into a case file.
func jsonNode(raw json.RawMessage) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("not one JSON value")
	}
	n := doc.Content[0]
	blockStyle(n)
	return n, nil
}

func blockStyle(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		n.Style = 0
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle
		}
		for _, c := range n.Content {
			blockStyle(c)
		}
	case yaml.ScalarNode:
		n.Style = 0
	}
}
