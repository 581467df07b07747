package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"

	"go.yaml.in/yaml/v3"
)

// update writes result as the case's expected result: into the
// expect.result_file, or as expect.result in the case file (added when
// missing), keeping the rest of the file and its comments.
func (c *Case) update(result json.RawMessage) error {
	if f := c.spec.Expect.ResultFile; f != "" {
		var buf bytes.Buffer
		if err := json.Indent(&buf, result, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		return writeFile(c.path(f), buf.Bytes())
	}
	n, err := jsonNode(result)
	if err != nil {
		return err
	}
	if c.doc.Kind != yaml.DocumentNode || len(c.doc.Content) != 1 || c.doc.Content[0].Kind != yaml.MappingNode {
		return errors.New("the case file has no YAML mapping to update")
	}
	expect := mapValue(c.doc.Content[0], "expect")
	if expect == nil || expect.Kind != yaml.MappingNode {
		expect = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setKey(c.doc.Content[0], "expect", expect)
	}
	setKey(expect, "result", n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&c.doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return writeFile(c.File, buf.Bytes())
}

// mapValue returns the value of key in a mapping node, nil if absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey sets key in a mapping node, replacing its value or appending it.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			// Keep a comment written after the key's old value.
			v.LineComment = m.Content[i+1].LineComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// writeFile replaces a file, keeping its permissions.
func writeFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	return os.WriteFile(path, data, mode)
}
