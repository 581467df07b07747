package jsonschema

// ptc: tests of the metaschemas compiled on first use (draft.go).

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestMetaschemasOnFirstUse: schemas of every draft, compiled at once
// from many goroutines (run it with -race), are checked against their
// draft's metaschema, which each draft compiles once: a schema its
// metaschema refuses is refused.
func TestMetaschemasOnFirstUse(t *testing.T) {
	drafts := []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(drafts))
	for i := 0; i < 4; i++ {
		for _, d := range drafts {
			wg.Add(2)
			go func() {
				defer wg.Done()
				errs <- compileDoc(`{"$schema": "` + d + `", "type": "object", "properties": {"a": {"type": "integer"}}}`)
			}()
			go func() {
				defer wg.Done()
				err := compileDoc(`{"$schema": "` + d + `", "type": 5}`)
				var sv *SchemaValidationError
				if !errors.As(err, &sv) {
					t.Errorf("%s: a schema of type 5 compiled (%v); its metaschema refuses it", d, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for _, d := range []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020} {
		if sch, _ := d.metaschemas(); sch == nil {
			t.Errorf("%s: no metaschema", d)
		}
	}
}

func compileDoc(schema string) error {
	doc, err := UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return err
	}
	c := NewCompiler()
	if err := c.AddResource("mem:///s.json", doc); err != nil {
		return err
	}
	_, err = c.Compile("mem:///s.json")
	return err
}
