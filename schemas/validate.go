package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed jsonschema/*.json
var schemaFS embed.FS

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	// fast holds the schemas fastValid can check, by name.
	fast       map[string]*fnode
	compileErr error
	printer    = message.NewPrinter(language.English)
)

// SchemaJSON returns the JSON Schema document of an event type or of one of
// AllDocuments.
func SchemaJSON(eventType string) ([]byte, error) {
	b, err := schemaFS.ReadFile("jsonschema/" + eventType + ".json")
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, eventType)
	}
	return b, nil
}

func compileAll() {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	compiled = make(map[string]*jsonschema.Schema, len(AllTypes)+len(AllDocuments))
	fast = make(map[string]*fnode, len(AllTypes)+len(AllDocuments))
	for _, t := range append(slices.Clone(AllTypes), AllDocuments...) {
		raw, err := SchemaJSON(t)
		if err != nil {
			compileErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			compileErr = fmt.Errorf("schema %s: %w", t, err)
			return
		}
		url := "mem://rein/" + t + ".json"
		if err := c.AddResource(url, doc); err != nil {
			compileErr = fmt.Errorf("schema %s: %w", t, err)
			return
		}
		s, err := c.Compile(url)
		if err != nil {
			compileErr = fmt.Errorf("schema %s: %w", t, err)
			return
		}
		compiled[t] = s
		if f := compileFast(s); f != nil {
			fast[t] = f
		}
	}
}

// Known reports whether eventType is one of rein's event types (the plain
// documents of AllDocuments are not).
func Known(eventType string) bool {
	if !slices.Contains(AllTypes, eventType) {
		return false
	}
	compileOnce.Do(compileAll)
	_, ok := compiled[eventType]
	return ok
}

// Validate checks a JSON payload against the schema of its event type (or a
// plain document against its schema, by its name in AllDocuments). The
// returned error is a *ValidationError naming the offending field, or wraps
// ErrUnknownType or ErrMalformedJSON.
func Validate(eventType string, data []byte) error {
	compileOnce.Do(compileAll)
	if compileErr != nil {
		return compileErr
	}
	s, ok := compiled[eventType]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownType, eventType)
	}
	// The fast path answers for what conforms; the library reads anything
	// else and names what is wrong.
	if f := fast[eventType]; f != nil && fastValid(f, data) {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedJSON, err)
	}
	if err := s.Validate(inst); err != nil {
		return toValidationError(eventType, err)
	}
	return nil
}

// AttrError says which CloudEvents attribute or rein extension (tenant,
// conversation, turn) of an event is missing or malformed, so that a
// caller can name it without reading the message.
type AttrError struct {
	Attr string // the attribute's name
	Err  error  // wraps ErrMissingAttr or ErrBadID, with the detail
}

func (e *AttrError) Error() string { return e.Err.Error() }

// Unwrap lets errors.Is(err, ErrBadID) and ErrMissingAttr match.
func (e *AttrError) Unwrap() error { return e.Err }

// ValidationError says which field of a payload broke its schema and how.
type ValidationError struct {
	Type    string // event type
	Field   string // JSON pointer of the offending value ("" for the root)
	Message string
}

func (e *ValidationError) Error() string {
	field := e.Field
	if field == "" {
		field = "/"
	}
	return fmt.Sprintf("%s: field %s: %s", e.Type, field, e.Message)
}

// Unwrap lets errors.Is(err, ErrInvalidPayload) match.
func (e *ValidationError) Unwrap() error { return ErrInvalidPayload }

func toValidationError(eventType string, err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	field := ""
	if len(leaf.InstanceLocation) > 0 {
		field = "/" + strings.Join(leaf.InstanceLocation, "/")
	}
	return &ValidationError{Type: eventType, Field: field, Message: leaf.ErrorKind.LocalizedString(printer)}
}
