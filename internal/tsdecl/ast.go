package tsdecl

// typeKind says what a tsType node is.
type typeKind int

const (
	kindPrim   typeKind = iota // a primitive or keyword type: string, number, unknown, ...
	kindLit                    // a literal: "a", 1, true, null
	kindRef                    // a reference to a named declaration
	kindArray                  // elem[]
	kindTuple                  // [a, b?, ...rest[]]
	kindObject                 // { props; [k: string]: index }
	kindUnion                  // a | b
	kindInter                  // a & b
)

// tsType is a node of the TypeScript type being generated.
type tsType struct {
	kind typeKind
	// text is the primitive keyword or the literal's source text.
	text string
	// ref is the declaration a kindRef points at; broken marks a reference
	// that would make a type alias circular and is printed as unknown.
	ref    *decl
	broken bool
	// elem is the element type of an array.
	elem *tsType
	// elems and optFrom describe a tuple: elements at index >= optFrom are
	// optional; rest, when set, is the type of the remaining elements.
	elems   []*tsType
	optFrom int
	rest    *tsType
	// props and index describe an object; index is nil for a closed
	// object or one without an index signature.
	props    []prop
	index    *tsType
	indexDoc []string
	// members are the parts of a union or intersection.
	members []*tsType
}

// prop is one property of an object type.
type prop struct {
	name     string
	optional bool
	typ      *tsType
	doc      []string
}

// decl is one named type declaration.
type decl struct {
	name string
	doc  []string
	body *tsType
	// bare are the references in bare positions of body (the body itself
	// or union/intersection members of it), which TypeScript resolves
	// eagerly and which therefore must not form cycles.
	bare []*tsType
	// state is used by the cycle search.
	state int
}

var (
	tUnknown = &tsType{kind: kindPrim, text: "unknown"}
	tNever   = &tsType{kind: kindPrim, text: "never"}
	tString  = &tsType{kind: kindPrim, text: "string"}
	tNumber  = &tsType{kind: kindPrim, text: "number"}
	tBoolean = &tsType{kind: kindPrim, text: "boolean"}
	tNull    = &tsType{kind: kindPrim, text: "null"}
)

func union(ms []*tsType) *tsType {
	switch len(ms) {
	case 0:
		return tNever
	case 1:
		return ms[0]
	}
	return &tsType{kind: kindUnion, members: ms}
}

func intersection(ms []*tsType) *tsType {
	switch len(ms) {
	case 0:
		return tUnknown
	case 1:
		return ms[0]
	}
	return &tsType{kind: kindInter, members: ms}
}
