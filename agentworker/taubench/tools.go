package taubench

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinception/rein/internal/llm"
)

//go:embed toolschemas/*.json
var schemaFS embed.FS

// toolSpec is one tool: its name, the reference's parameter list (every
// parameter is required) and its implementation.
type toolSpec struct {
	name   string
	params []string
	fn     func(s *Session, a *Object) (string, error)
}

// class is the reference's tool class name, used in argument errors.
func (t *toolSpec) class() string {
	var b strings.Builder
	for _, part := range strings.Split(t.name, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// invoke binds keyword arguments like a Python call would, then runs the tool.
func (t *toolSpec) invoke(s *Session, kwargs *Object) (string, error) {
	for _, k := range kwargs.Keys {
		if k == "data" {
			return "", toolErr(fmt.Sprintf("%s.invoke() got multiple values for keyword argument 'data'", t.class()))
		}
		known := false
		for _, p := range t.params {
			known = known || p == k
		}
		if !known {
			return "", toolErr(fmt.Sprintf("%s.invoke() got an unexpected keyword argument '%s'", t.class(), k))
		}
	}
	var missing []string
	for _, p := range t.params {
		if !kwargs.Has(p) {
			missing = append(missing, "'"+p+"'")
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		return "", toolErr(fmt.Sprintf("%s.invoke() missing 1 required positional argument: %s", t.class(), missing[0]))
	default:
		list := strings.Join(missing[:len(missing)-1], ", ") + " and " + missing[len(missing)-1]
		if len(missing) > 2 {
			list = strings.Join(missing[:len(missing)-1], ", ") + ", and " + missing[len(missing)-1]
		}
		return "", toolErr(fmt.Sprintf("%s.invoke() missing %d required positional arguments: %s", t.class(), len(missing), list))
	}
	return t.fn(s, kwargs)
}

// parseArgs decodes a tool call's JSON arguments (empty means none).
func parseArgs(raw json.RawMessage) (*Object, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return &Object{}, nil
	}
	v, err := ParseJSON(trimmed)
	if err != nil {
		return nil, toolErr("invalid tool arguments: " + err.Error())
	}
	o, ok := v.(*Object)
	if !ok {
		return nil, toolErr(fmt.Sprintf("argument after ** must be a mapping, not %s", pyTypeName(v)))
	}
	return o, nil
}

// toolSet returns a domain's tool list and implementations.
func toolSet(domain string) ([]llm.Tool, map[string]*toolSpec, error) {
	var specs []*toolSpec
	switch domain {
	case Airline:
		specs = airlineTools()
	case Retail:
		specs = retailTools()
	default:
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownDomain, domain)
	}
	tools, err := ToolCatalogue(domain)
	if err != nil {
		return nil, nil, err
	}
	impls := make(map[string]*toolSpec, len(specs))
	for _, sp := range specs {
		impls[sp.name] = sp
	}
	for _, t := range tools {
		if impls[t.Name] == nil {
			return nil, nil, fmt.Errorf("%w: schema for unimplemented tool %s", ErrBadData, t.Name)
		}
	}
	return tools, impls, nil
}

// openAITool is the wire shape of tools.json entries.
type openAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ToolCatalogue returns the built-in tool list of "airline" or "retail":
// τ-bench's names, parameters, types and enums, described in rein's words.
func ToolCatalogue(domain string) ([]llm.Tool, error) {
	if _, ok := tableNames[domain]; !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDomain, domain)
	}
	raw, err := schemaFS.ReadFile("toolschemas/" + domain + ".json")
	if err != nil {
		return nil, fmt.Errorf("tool catalogue %s: %w", domain, err)
	}
	return decodeTools(raw)
}

func decodeTools(raw []byte) ([]llm.Tool, error) {
	var list []openAITool
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%w: tool list: %w", ErrBadData, err)
	}
	out := make([]llm.Tool, 0, len(list))
	for _, t := range list {
		out = append(out, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return out, nil
}

// overrideTools applies a tools.json found beside the data: for every tool
// it names, its description replaces ours, and so do its parameter
// descriptions when its parameters declare exactly the same names.
func overrideTools(tools []llm.Tool, raw []byte) ([]llm.Tool, error) {
	over, err := decodeTools(raw)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]llm.Tool, len(over))
	for _, t := range over {
		byName[t.Name] = t
	}
	out := make([]llm.Tool, len(tools))
	for i, t := range tools {
		out[i] = t
		o, ok := byName[t.Name]
		if !ok {
			continue
		}
		if o.Description != "" {
			out[i].Description = o.Description
		}
		if sameParams(t.Parameters, o.Parameters) {
			out[i].Parameters = o.Parameters
		}
	}
	return out, nil
}

func sameParams(a, b json.RawMessage) bool {
	type schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	var x, y schema
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	if len(x.Properties) != len(y.Properties) || strings.Join(x.Required, ",") != strings.Join(y.Required, ",") {
		return false
	}
	for k := range x.Properties {
		if _, ok := y.Properties[k]; !ok {
			return false
		}
	}
	return true
}
