// Package rank orders tools by relevance to a natural-language query, so
// that a model with many tools available is shown only the few it needs.
//
// Ranking is BM25 (k1 = 1.2, b = 0.75) over three weighted fields of each
// tool: the words of its name (weight 3), of its description (weight 1) and
// the property names of its input schema (weight 0.5), combined BM25F-style
// into one weighted term frequency and length. Text is split on
// non-alphanumeric characters and camelCase boundaries, lower-cased, cleared
// of a small list of stop words and stemmed by stripping plural suffixes.
// Everything is deterministic: the same tools and query give the same
// result whatever the order of the tools, and equal scores are ordered by
// name.
//
// Package rank imports only the tools package.
package rank

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ptcrun/ptc/tools"
)

// BM25 parameters and field weights.
const (
	k1 = 1.2
	b  = 0.75

	weightName     = 3.0
	weightDesc     = 1.0
	weightProperty = 0.5
)

// MaxQueryBytes bounds the part of a query that is read; the rest is
// ignored.
const MaxQueryBytes = 4096

// Match is one ranked tool.
type Match struct {
	// Name is the tool's name.
	Name string
	// Score is the tool's BM25 relevance; higher is better. It is 0 for
	// every tool when the query has no searchable words.
	Score float64
}

// Index holds the term statistics of a set of tools, for ranking many
// queries against the same tools. It is safe for concurrent use once built.
type Index struct {
	names    []string
	lengths  []float64
	avgLen   float64
	postings map[string][]posting
}

type posting struct {
	doc int
	tf  float64
}

// Rank returns the tools of defs that match query, best first, at most
// limit of them (all when limit <= 0). Tools that share no word with the
// query are left out. A query without searchable words (empty, or only
// stop words) returns every tool in name order with score 0.
func Rank(defs []tools.Definition, query string, limit int) []Match {
	return NewIndex(defs).Rank(query, limit)
}

// NewIndex builds the index of defs.
func NewIndex(defs []tools.Definition) *Index {
	sorted := append([]tools.Definition(nil), defs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	ix := &Index{
		names:    make([]string, len(sorted)),
		lengths:  make([]float64, len(sorted)),
		postings: map[string][]posting{},
	}
	total := 0.0
	tf := map[string]float64{}
	var terms []string
	for i, d := range sorted {
		ix.names[i] = d.Name
		clear(tf)
		length := 0.0
		add := func(text string, w float64) {
			for _, t := range Tokenize(text) {
				tf[t] += w
				length += w
			}
		}
		add(d.Name, weightName)
		add(d.Description, weightDesc)
		for _, p := range propertyNames(d.InputSchema) {
			add(p, weightProperty)
		}
		terms = terms[:0]
		for t := range tf {
			terms = append(terms, t)
		}
		sort.Strings(terms)
		for _, t := range terms {
			ix.postings[t] = append(ix.postings[t], posting{doc: i, tf: tf[t]})
		}
		ix.lengths[i] = length
		total += length
	}
	if len(sorted) > 0 {
		ix.avgLen = total / float64(len(sorted))
	}
	return ix
}

// Rank returns the indexed tools that match query, as the package-level
// Rank does.
func (ix *Index) Rank(query string, limit int) []Match {
	if len(query) > MaxQueryBytes {
		cut := MaxQueryBytes
		for cut > 0 && !utf8.RuneStart(query[cut]) {
			cut--
		}
		query = query[:cut]
	}
	terms := uniqueSorted(Tokenize(query))
	var out []Match
	if len(terms) == 0 {
		out = make([]Match, len(ix.names))
		for i, n := range ix.names {
			out[i] = Match{Name: n}
		}
		return capMatches(out, limit)
	}
	n := float64(len(ix.names))
	scores := make([]float64, len(ix.names))
	var docs []int
	for _, t := range terms {
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			norm := 1.0
			if ix.avgLen > 0 {
				norm = 1 - b + b*ix.lengths[p.doc]/ix.avgLen
			}
			if scores[p.doc] == 0 {
				docs = append(docs, p.doc)
			}
			scores[p.doc] += idf * p.tf * (k1 + 1) / (p.tf + k1*norm)
		}
	}
	// Documents are numbered in name order, so the index breaks ties by name.
	sort.Slice(docs, func(i, j int) bool {
		si, sj := scores[docs[i]], scores[docs[j]]
		if si != sj {
			return si > sj
		}
		return docs[i] < docs[j]
	})
	out = make([]Match, len(docs))
	for i, d := range docs {
		out[i] = Match{Name: ix.names[d], Score: scores[d]}
	}
	return capMatches(out, limit)
}

func capMatches(ms []Match, limit int) []Match {
	if limit > 0 && len(ms) > limit {
		return ms[:limit]
	}
	return ms
}

func uniqueSorted(ts []string) []string {
	sort.Strings(ts)
	out := ts[:0]
	for i, t := range ts {
		if i == 0 || t != ts[i-1] {
			out = append(out, t)
		}
	}
	return out
}

// propertyNames returns the top-level property names of an input schema;
// a schema that is not a JSON object with properties gives none.
func propertyNames(schema json.RawMessage) []string {
	if len(schema) == 0 || len(schema) > tools.MaxSchemaBytes {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// stopWords are words too common in queries and descriptions to rank by.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"do": true, "for": true, "from": true, "how": true, "i": true, "in": true, "into": true, "is": true,
	"it": true, "its": true, "me": true, "my": true, "of": true, "on": true, "or": true, "our": true,
	"please": true, "that": true, "the": true, "their": true, "this": true, "to": true, "was": true,
	"we": true, "what": true, "which": true, "with": true, "you": true, "your": true,
}

// Tokenize splits text into the search terms Rank compares: words split at
// non-alphanumeric characters and camelCase boundaries ("searchIssues",
// "HTTPServer"), lower-cased, without stop words, with plural suffixes
// stripped ("issues" becomes "issue", "policies" becomes "policy").
func Tokenize(text string) []string {
	var out []string
	emit := func(w string) {
		if w == "" {
			return
		}
		w = strings.ToLower(w)
		if stopWords[w] {
			return
		}
		out = append(out, stem(w))
	}
	start := -1
	var prev rune
	for i, r := range text {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				emit(text[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start, prev = i, r
			continue
		}
		camel := unicode.IsLower(prev) && unicode.IsUpper(r)
		if !camel && unicode.IsUpper(prev) && unicode.IsUpper(r) {
			next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):])
			camel = unicode.IsLower(next)
		}
		if camel {
			emit(text[start:i])
			start = i
		}
		prev = r
	}
	if start >= 0 {
		emit(text[start:])
	}
	return out
}

// stem strips English plural suffixes from a lower-case word.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "ches") ||
		strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "xes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}
