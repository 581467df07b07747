package jsonval

import (
	"fmt"
	"unicode/utf8"
)

// Kind is the kind of a Token.
type Kind uint8

// The kinds of token a Scanner returns.
const (
	// End follows the top-level value: the text is over.
	End Kind = iota
	BeginObject
	EndObject
	BeginArray
	EndArray
	// Key is a property name: a string followed by ':'.
	Key
	String
	Number
	True
	False
	Null
)

// Token is one token of JSON text: its kind and where it lies in the
// text. A Key or String token spans the string with its quotes (decode it
// with ReadString); a Number token spans its literal.
type Token struct {
	Kind       Kind
	Start, End int
	// IsInt: a Number with no fraction and no exponent.
	IsInt bool
}

type scanState uint8

const (
	stValue      scanState = iota // a value must come
	stFirstItem                   // after '[': a value or ']'
	stFirstKey                    // after '{': a property name or '}'
	stKey                         // after ',' in an object: a property name
	stColon                       // after a property name: ':' then a value
	stAfterValue                  // after a value in a container: ',' or the close
	stDone                        // after the top-level value
)

// Scanner reads the tokens of one JSON value from a byte slice, checking
// its grammar: nesting, commas, colons, literals, numbers and where
// strings end. It is the one reader of JSON's grammar in ptc; each
// decoder (Decode here, the JavaScript engine's JSON.parse and tool
// results, truncation's tree) builds its own values from the tokens.
//
// Strings are checked only for an end and for raw control characters;
// their escapes are read (and checked) by ReadString.
type Scanner struct {
	data     []byte
	pos      int
	maxDepth int
	state    scanState
	// depth containers are open; bit i of the stack is set when the
	// container at depth i is an object (the first 64 levels in objs, the
	// rest in deeper, which most text never needs).
	depth  int
	objs   uint64
	deeper []uint64
}

// push records a container opened at the current depth.
func (s *Scanner) push(object bool) {
	d := s.depth
	s.depth++
	w := &s.objs
	if d >= 64 {
		i := d/64 - 1
		for len(s.deeper) <= i {
			s.deeper = append(s.deeper, 0)
		}
		w = &s.deeper[i]
	}
	if object {
		*w |= 1 << (d % 64)
	} else {
		*w &^= 1 << (d % 64)
	}
}

// inObject reports whether the innermost open container is an object.
func (s *Scanner) inObject() bool {
	d := s.depth - 1
	w := s.objs
	if d >= 64 {
		w = s.deeper[d/64-1]
	}
	return w&(1<<(d%64)) != 0
}

// NewScanner returns a scanner of data that refuses nesting deeper than
// maxDepth with an error wrapping ErrTooDeep.
func NewScanner(data []byte, maxDepth int) *Scanner {
	return &Scanner{data: data, maxDepth: maxDepth}
}

// Data is the text being scanned.
func (s *Scanner) Data() []byte { return s.data }

// Offset is the offset of the next byte the scanner reads.
func (s *Scanner) Offset() int { return s.pos }

// Depth is the number of containers open.
func (s *Scanner) Depth() int { return s.depth }

// Errorf returns an error wrapping ErrSyntax at the scanner's offset: for
// decoders that refuse a token they were given.
func (s *Scanner) Errorf(format string, args ...any) error {
	return syntaxAt(s.pos, fmt.Sprintf(format, args...))
}

// Next returns the next token, End once the value is over, or an error
// wrapping ErrSyntax (and ErrTooDeep for too deep a nesting).
func (s *Scanner) Next() (Token, error) {
	s.space()
	switch s.state {
	case stDone:
		if s.pos != len(s.data) {
			return Token{}, s.Errorf("unexpected data after the value")
		}
		return Token{Kind: End, Start: s.pos, End: s.pos}, nil
	case stFirstItem:
		if s.peek() == ']' {
			return s.close(EndArray), nil
		}
	case stFirstKey, stKey:
		if s.state == stFirstKey && s.peek() == '}' {
			return s.close(EndObject), nil
		}
		if s.peek() != '"' {
			return Token{}, s.Errorf("expected a property name")
		}
		t, err := s.str(Key)
		s.state = stColon
		return t, err
	case stColon:
		if s.peek() != ':' {
			return Token{}, s.Errorf("expected ':'")
		}
		s.pos++
		s.space()
	case stAfterValue:
		obj := s.inObject()
		switch c := s.peek(); {
		case s.pos >= len(s.data):
			if obj {
				return Token{}, s.Errorf("unexpected end in object")
			}
			return Token{}, s.Errorf("unexpected end in array")
		case c == ',':
			s.pos++
			if obj {
				s.state = stKey
				return s.Next()
			}
			s.space()
		case c == '}' && obj:
			return s.close(EndObject), nil
		case c == ']' && !obj:
			return s.close(EndArray), nil
		case obj:
			return Token{}, s.Errorf("expected ',' or '}'")
		default:
			return Token{}, s.Errorf("expected ',' or ']'")
		}
	}
	return s.value()
}

// value reads the value that must start at s.pos.
func (s *Scanner) value() (Token, error) {
	if s.pos >= len(s.data) {
		return Token{}, s.Errorf("unexpected end")
	}
	switch c := s.data[s.pos]; {
	case c == '{' || c == '[':
		if s.depth >= s.maxDepth {
			return Token{}, fmt.Errorf("%w at offset %d: %w", ErrSyntax, s.pos, ErrTooDeep)
		}
		s.push(c == '{')
		t := Token{Kind: BeginObject, Start: s.pos, End: s.pos + 1}
		s.state = stFirstKey
		if c == '[' {
			t.Kind, s.state = BeginArray, stFirstItem
		}
		s.pos++
		return t, nil
	case c == '"':
		t, err := s.str(String)
		s.valueDone()
		return t, err
	case c == 't':
		return s.literal("true", True)
	case c == 'f':
		return s.literal("false", False)
	case c == 'n':
		return s.literal("null", Null)
	case c == '-' || (c >= '0' && c <= '9'):
		end, isInt, err := ScanNumber(s.data, s.pos)
		if err != nil {
			return Token{}, err
		}
		t := Token{Kind: Number, Start: s.pos, End: end, IsInt: isInt}
		s.pos = end
		s.valueDone()
		return t, nil
	default:
		return Token{}, s.Errorf("unexpected character %s", s.charAt())
	}
}

// charAt names the character at the scanner's offset for an error: as Go
// quotes it, or as a \u escape for a surrogate encoded as UTF-8 encodes
// code points (WTF-8, the text of a JavaScript string holding one); a
// byte of other invalid UTF-8 is U+FFFD.
func (s *Scanner) charAt() string {
	b := s.data[s.pos:]
	if len(b) >= 3 && b[0] == 0xed && b[1]&0xe0 == 0xa0 {
		return fmt.Sprintf("'\\u%04x'", 0xd000|rune(b[1]&0x3f)<<6|rune(b[2]&0x3f))
	}
	r, _ := utf8.DecodeRune(b)
	return fmt.Sprintf("%q", r)
}

func (s *Scanner) literal(word string, k Kind) (Token, error) {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return Token{}, s.Errorf("invalid literal")
	}
	t := Token{Kind: k, Start: s.pos, End: s.pos + len(word)}
	s.pos += len(word)
	s.valueDone()
	return t, nil
}

// str finds the end of the string at s.pos.
func (s *Scanner) str(k Kind) (Token, error) {
	start := s.pos
	for i := start + 1; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return Token{Kind: k, Start: start, End: i + 1}, nil
		case c == '\\':
			i++
		case c < 0x20:
			s.pos = i
			return Token{}, s.Errorf("control character in string")
		}
	}
	s.pos = len(s.data)
	return Token{}, s.Errorf("unterminated string")
}

func (s *Scanner) close(k Kind) Token {
	t := Token{Kind: k, Start: s.pos, End: s.pos + 1}
	s.pos++
	s.depth--
	s.valueDone()
	return t
}

// valueDone moves past a complete value.
func (s *Scanner) valueDone() {
	if s.depth == 0 {
		s.state = stDone
	} else {
		s.state = stAfterValue
	}
}

func (s *Scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *Scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}
