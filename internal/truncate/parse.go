package truncate

import (
	"errors"
	"fmt"

	"github.com/ptcrun/ptc/internal/jsonval"
)

// parse builds the node tree of JSON text (json.Compact's output in
// practice). It refuses text of more than MaxValues values before
// building anything: the tree costs 100 to 170 bytes a value, so the cap
// bounds the memory truncation takes.
func parse(data []byte) (*node, error) {
	if n := countValues(data, MaxValues); n > MaxValues {
		return nil, &TooManyValuesError{Max: MaxValues}
	}
	s := jsonval.NewScanner(data, MaxDepth)
	t, err := s.Next()
	if err != nil {
		return nil, invalid(err)
	}
	n, err := build(s, t)
	if err != nil {
		return nil, invalid(err)
	}
	if _, err := s.Next(); err != nil {
		return nil, invalid(err)
	}
	return n, nil
}

// invalid wraps a scanner's error in ErrInvalid.
func invalid(err error) error {
	if errors.Is(err, jsonval.ErrTooDeep) {
		return fmt.Errorf("%w: nested deeper than %d", ErrInvalid, MaxDepth)
	}
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}

// build makes the node of the value that starts with token t; a node's raw
// text is its span of data, as written.
func build(s *jsonval.Scanner, t jsonval.Token) (*node, error) {
	data := s.Data()
	switch t.Kind {
	case jsonval.BeginArray, jsonval.BeginObject:
		n := &node{kind: kindArray}
		if t.Kind == jsonval.BeginObject {
			n.kind = kindObject
		}
		for {
			k, err := s.Next()
			if err != nil {
				return nil, err
			}
			if k.Kind == jsonval.EndArray || k.Kind == jsonval.EndObject {
				n.raw = data[t.Start:k.End]
				return n, nil
			}
			if k.Kind == jsonval.Key {
				n.keys = append(n.keys, data[k.Start:k.End])
				if k, err = s.Next(); err != nil {
					return nil, err
				}
			}
			kid, err := build(s, k)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kid)
		}
	case jsonval.String:
		return &node{kind: kindString, raw: data[t.Start:t.End]}, nil
	}
	return &node{kind: kindAtom, raw: data[t.Start:t.End]}, nil
}

// countValues counts the values of JSON text (numbers, strings, literals,
// arrays and objects; property names are not values), stopping once the
// count is over limit, without allocating (for text nested up to 64
// levels). Text that is not JSON counts
// the values before the fault (parse then refuses it).
func countValues(data []byte, limit int) int {
	s := jsonval.NewScanner(data, MaxDepth)
	n := 0
	for n <= limit {
		t, err := s.Next()
		if err != nil || t.Kind == jsonval.End {
			break
		}
		switch t.Kind {
		case jsonval.EndArray, jsonval.EndObject, jsonval.Key:
		default:
			n++
		}
	}
	return n
}
