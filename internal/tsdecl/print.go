package tsdecl

import (
	"fmt"
	"strings"
)

// Precedence of a printed type, to decide where parentheses are needed.
const (
	precAtom  = 0
	precInter = 1
	precUnion = 2
)

// printer renders tsType trees. It stops with ErrTooLarge once any piece
// of output passes max bytes.
type printer struct {
	max int
	err error
	// compact writes every doc comment on one line.
	compact bool
}

// over records ErrTooLarge when n passes the limit and reports whether
// printing has failed.
func (p *printer) over(n int) bool {
	if p.err == nil && n > p.max {
		p.err = fmt.Errorf("%w: more than %d bytes; offer fewer tools or smaller schemas", ErrTooLarge, p.max)
	}
	return p.err != nil
}

// check passes s through, or returns "unknown" once printing has failed.
func (p *printer) check(s string) string {
	if p.over(len(s)) {
		return "unknown"
	}
	return s
}

// typ renders t for a position at the given indentation level.
func (p *printer) typ(t *tsType, indent int) (string, int) {
	if p.err != nil {
		return "unknown", precAtom
	}
	switch t.kind {
	case kindPrim, kindLit:
		return t.text, precAtom
	case kindRef:
		if t.broken {
			return "unknown", precAtom
		}
		return t.ref.name, precAtom
	case kindArray:
		return p.check(p.paren(t.elem, indent, precAtom) + "[]"), precAtom
	case kindTuple:
		return p.tuple(t, indent), precAtom
	case kindObject:
		return p.object(t, indent), precAtom
	case kindUnion:
		return p.union(t, indent)
	case kindInter:
		return p.inter(t, indent)
	}
	return "unknown", precAtom
}

// paren renders t, parenthesised when its precedence is above max.
func (p *printer) paren(t *tsType, indent, max int) string {
	s, prec := p.typ(t, indent)
	if prec > max {
		return "(" + s + ")"
	}
	return s
}

func (p *printer) tuple(t *tsType, indent int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range t.elems {
		if i > 0 {
			b.WriteString(", ")
		}
		if i >= t.optFrom {
			b.WriteString(p.paren(e, indent, precAtom))
			b.WriteByte('?')
		} else {
			s, _ := p.typ(e, indent)
			b.WriteString(s)
		}
	}
	if t.rest != nil {
		if len(t.elems) > 0 {
			b.WriteString(", ")
		}
		b.WriteString("...")
		b.WriteString(p.paren(t.rest, indent, precAtom))
		b.WriteString("[]")
	}
	b.WriteByte(']')
	return p.check(b.String())
}

func (p *printer) object(t *tsType, indent int) string {
	if len(t.props) == 0 && t.index == nil {
		return "{}"
	}
	pad := strings.Repeat("  ", indent+1)
	var b strings.Builder
	b.WriteString("{\n")
	for _, pr := range t.props {
		writeDoc(&b, pad, pr.doc, p.compact)
		b.WriteString(pad)
		b.WriteString(propName(pr.name))
		if pr.optional {
			b.WriteByte('?')
		}
		b.WriteString(": ")
		s, _ := p.typ(pr.typ, indent+1)
		b.WriteString(s)
		b.WriteString(";\n")
		if p.over(b.Len()) {
			return "unknown"
		}
	}
	if t.index != nil {
		writeDoc(&b, pad, t.indexDoc, p.compact)
		b.WriteString(pad)
		b.WriteString("[key: string]: ")
		s, _ := p.typ(t.index, indent+1)
		b.WriteString(s)
		b.WriteString(";\n")
	}
	b.WriteString(strings.Repeat("  ", indent))
	b.WriteByte('}')
	return p.check(b.String())
}

// union renders a union, dropping never and duplicates; unknown absorbs it.
func (p *printer) union(t *tsType, indent int) (string, int) {
	parts := make([]string, 0, len(t.members))
	precs := make([]int, 0, len(t.members))
	seen := map[string]bool{}
	for _, m := range t.members {
		s, prec := p.typ(m, indent)
		switch {
		case s == "unknown":
			return "unknown", precAtom
		case s == "never" || seen[s]:
			continue
		}
		seen[s] = true
		parts = append(parts, s)
		precs = append(precs, prec)
	}
	switch len(parts) {
	case 0:
		return "never", precAtom
	case 1:
		return parts[0], precs[0]
	}
	return p.check(strings.Join(parts, " | ")), precUnion
}

// inter renders an intersection, dropping unknown and duplicates; never
// absorbs it.
func (p *printer) inter(t *tsType, indent int) (string, int) {
	parts := make([]string, 0, len(t.members))
	precs := make([]int, 0, len(t.members))
	seen := map[string]bool{}
	for _, m := range t.members {
		s, prec := p.typ(m, indent)
		switch {
		case s == "never":
			return "never", precAtom
		case s == "unknown" || seen[s]:
			continue
		}
		seen[s] = true
		parts = append(parts, s)
		precs = append(precs, prec)
	}
	switch len(parts) {
	case 0:
		return "unknown", precAtom
	case 1:
		return parts[0], precs[0]
	}
	for i := range parts {
		if precs[i] > precInter {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return p.check(strings.Join(parts, " & ")), precInter
}

// propName renders a property or method name, quoted unless it is an
// identifier.
func propName(name string) string {
	if isIdentifier(name) {
		return name
	}
	return quote(name)
}

// writeDoc writes a JSDoc comment at indentation pad; compact puts it on
// one line.
func writeDoc(b *strings.Builder, pad string, lines []string, compact bool) {
	switch {
	case len(lines) == 0:
		return
	case len(lines) == 1 || compact:
		b.WriteString(pad)
		b.WriteString("/** ")
		for i, l := range lines {
			if l == "" {
				continue
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(l)
		}
		b.WriteString(" */\n")
		return
	}
	b.WriteString(pad)
	b.WriteString("/**\n")
	for _, l := range lines {
		b.WriteString(pad)
		if l == "" {
			b.WriteString(" *\n")
			continue
		}
		b.WriteString(" * ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(pad)
	b.WriteString(" */\n")
}
