package truncate

import "fmt"

// parse builds the node tree of compact JSON text (json.Compact's output:
// valid, no white space outside strings). It refuses text of more than
// MaxValues values before building anything: the tree costs 100 to 170
// bytes a value, so the cap bounds the memory truncation takes.
func parse(data []byte) (*node, error) {
	if n := countValues(data, MaxValues); n > MaxValues {
		return nil, &TooManyValuesError{Max: MaxValues}
	}
	p := &parser{data: data}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if p.pos != len(data) {
		return nil, fmt.Errorf("%w: data after the value", ErrInvalid)
	}
	return n, nil
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) value(depth int) (*node, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalid, MaxDepth)
	}
	if p.pos >= len(p.data) {
		return nil, ErrInvalid
	}
	start := p.pos
	switch p.data[p.pos] {
	case '"':
		if err := p.skipString(); err != nil {
			return nil, err
		}
		return &node{kind: kindString, raw: p.data[start:p.pos]}, nil
	case '[':
		n := &node{kind: kindArray}
		p.pos++
		if p.peek() == ']' {
			p.pos++
		} else {
			for {
				k, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.kids = append(n.kids, k)
				if c := p.next(); c == ']' {
					break
				} else if c != ',' {
					return nil, ErrInvalid
				}
			}
		}
		n.raw = p.data[start:p.pos]
		return n, nil
	case '{':
		n := &node{kind: kindObject}
		p.pos++
		if p.peek() == '}' {
			p.pos++
		} else {
			for {
				ks := p.pos
				if p.peek() != '"' {
					return nil, ErrInvalid
				}
				if err := p.skipString(); err != nil {
					return nil, err
				}
				n.keys = append(n.keys, p.data[ks:p.pos])
				if p.next() != ':' {
					return nil, ErrInvalid
				}
				k, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.kids = append(n.kids, k)
				if c := p.next(); c == '}' {
					break
				} else if c != ',' {
					return nil, ErrInvalid
				}
			}
		}
		n.raw = p.data[start:p.pos]
		return n, nil
	}
	// A number or a literal runs to the next delimiter.
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ',', ']', '}':
			return &node{kind: kindAtom, raw: p.data[start:p.pos]}, nil
		}
		p.pos++
	}
	return &node{kind: kindAtom, raw: p.data[start:p.pos]}, nil
}

func (p *parser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *parser) next() byte {
	c := p.peek()
	p.pos++
	return c
}

// skipString moves past the string literal at p.pos.
func (p *parser) skipString() error {
	i := p.pos + 1
	for i < len(p.data) {
		switch p.data[i] {
		case '\\':
			i += 2
			continue
		case '"':
			p.pos = i + 1
			return nil
		}
		i++
	}
	return ErrInvalid
}

// countValues counts the values of compact JSON text, stopping once the
// count is over limit. Every value but the first follows a comma or opens a
// non-empty container's first item or entry (an object's commas and first
// entries each stand for one value, its keys are not counted), so the count
// is 1 + commas + non-empty containers, all outside strings.
func countValues(data []byte, limit int) int {
	n := 1
	for i := 0; i < len(data) && n <= limit; i++ {
		switch data[i] {
		case '"':
			// Skip the string; a backslash skips the byte after it.
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case ',':
			n++
		case '[', '{':
			if i+1 < len(data) && data[i+1] != ']' && data[i+1] != '}' {
				n++
			}
		}
	}
	return n
}
