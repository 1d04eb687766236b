package inception

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Error categories.
const (
	CategoryAmbiguous   = "ambiguous"
	CategoryUnsupported = "unsupported"
)

// Names of the default error types and recovery tools (default_taxonomy.yaml).
const (
	TypeAnaphora               = "anaphora"
	TypeMultipleInterpretation = "multiple_interpretation"
	TypeContradiction          = "contradiction"
	TypeUnsupportedAction      = "unsupported_action"
	TypeUnsupportedParameter   = "unsupported_parameter"
	TypeUnsupportedDomain      = "unsupported_domain"

	ToolAmbiguityReport = "ambiguity_report"
	ToolTransferToHuman = "transfer_to_human_agents"
)

// EvidenceSlot is the only placeholder a recovery plan may contain.
const EvidenceSlot = "{evidence}"

//go:embed default_taxonomy.yaml
var defaultTaxonomyYAML []byte

// Taxonomy is a versioned error taxonomy: error types, their recovery plans,
// the recovery tools and per-domain notes for the offline module. A loaded
// Taxonomy is immutable and safe for concurrent use.
type Taxonomy struct {
	Version       string                `yaml:"version" json:"version"`
	ErrorTypes    []ErrorType           `yaml:"error_types" json:"error_types"`
	RecoveryTools []RecoveryTool        `yaml:"recovery_tools" json:"recovery_tools"`
	Domains       map[string]DomainNote `yaml:"domains" json:"domains,omitempty"`
	// Contrasts separate confusable error types, each with one contrastive
	// example, for the inception prompt.
	Contrasts []Contrast `yaml:"contrasts" json:"contrasts,omitempty"`
	// Judging are the prompt's rules for hard cases (a pushback, a
	// complaint, a self-correction, two errors in one turn, …).
	Judging []string `yaml:"judging" json:"judging,omitempty"`

	byName map[string]*ErrorType
}

// Contrast tells error types apart, or one type from a turn without
// error (a single type): Text states the difference with one contrastive
// example. A contrast naming a held-out type is left out of the prompt.
type Contrast struct {
	Types []string `yaml:"types" json:"types"`
	Text  string   `yaml:"text" json:"text"`
}

// ErrorType is one entry of the taxonomy.
type ErrorType struct {
	Name         string   `yaml:"name" json:"name"`
	Category     string   `yaml:"category" json:"category"`
	Definition   string   `yaml:"definition" json:"definition"`
	Examples     []string `yaml:"examples" json:"examples,omitempty"`
	HeldOut      bool     `yaml:"held_out" json:"held_out"`
	RecoveryPlan string   `yaml:"recovery_plan" json:"recovery_plan"`
	RecoveryTool string   `yaml:"recovery_tool" json:"recovery_tool"`
	// Cues are RE2 expressions the rules module matches against the
	// lower-cased user turn (optional).
	Cues []string `yaml:"cues" json:"cues,omitempty"`
}

// RecoveryTool is a tool declared next to the agent's own tools.
type RecoveryTool struct {
	Name        string         `yaml:"name" json:"name"`
	Description string         `yaml:"description" json:"description"`
	Parameters  map[string]any `yaml:"parameters" json:"parameters"`
}

// DomainNote holds what the offline module knows about one domain.
type DomainNote struct {
	Service            string          `yaml:"service" json:"service,omitempty"`
	Entities           []EntityNote    `yaml:"entities" json:"entities,omitempty"`
	UnsupportedActions []CueGroup      `yaml:"unsupported_actions" json:"unsupported_actions,omitempty"`
	UnsupportedDomains []CueGroup      `yaml:"unsupported_domains" json:"unsupported_domains,omitempty"`
	Parameters         []ParameterNote `yaml:"parameters" json:"parameters,omitempty"`
	// GateCues are looser RE2 cues of requests the tools may not support
	// (lower-cased turn): the cascade's gate sends a turn matching one to
	// the model, the precise rules never decide on them.
	GateCues []string `yaml:"gate_cues" json:"gate_cues,omitempty"`
}

// EntityNote describes the shape of an entity id (a whole-token RE2 pattern).
type EntityNote struct {
	Name    string `yaml:"name" json:"name"`
	Pattern string `yaml:"pattern" json:"pattern"`
}

// CueGroup is a named list of RE2 cues (matched on the lower-cased turn).
// Objects, for an unsupported action, are the words a tool's name or
// description would use for the operation ("seat", "wishlist"): when a
// tool of the agent's catalogue names one, the tools can do it after all
// and the group is skipped.
type CueGroup struct {
	Name    string   `yaml:"name" json:"name"`
	Cues    []string `yaml:"cues" json:"cues"`
	Objects []string `yaml:"objects" json:"objects,omitempty"`
}

// ParameterNote maps user phrases to values of a tool parameter. A phrase
// whose value is outside the parameter's enum in the agent's tool schemas
// (or outside Allowed when no tool declares an enum) is an unsupported
// parameter. Context, when set, must also match the turn.
type ParameterNote struct {
	Parameter string            `yaml:"parameter" json:"parameter"`
	Context   string            `yaml:"context" json:"context,omitempty"`
	Allowed   []string          `yaml:"allowed" json:"allowed,omitempty"`
	Values    map[string]string `yaml:"values" json:"values"`
}

// DefaultTaxonomy returns the six default error types (the embedded
// default_taxonomy.yaml).
func DefaultTaxonomy() *Taxonomy {
	t, err := ParseTaxonomy("default_taxonomy.yaml", defaultTaxonomyYAML)
	if err != nil {
		panic(fmt.Sprintf("inception: embedded default taxonomy is invalid: %v", err))
	}
	return t
}

// DefaultTaxonomyYAML returns the embedded default taxonomy file, a starting
// point for a provider's own file.
func DefaultTaxonomyYAML() []byte { return append([]byte(nil), defaultTaxonomyYAML...) }

// LoadTaxonomy reads and validates a taxonomy file.
func LoadTaxonomy(path string) (*Taxonomy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTaxonomy, err)
	}
	return ParseTaxonomy(path, data)
}

// ParseTaxonomy decodes and validates a taxonomy document; name is used in
// error messages. Errors wrap ErrInvalidTaxonomy and read
// "<name>:<line>: <field>: <problem>".
func ParseTaxonomy(name string, data []byte) (*Taxonomy, error) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(name, err)
	}
	var t Taxonomy
	if err := yaml.UnmarshalWithOptions(data, &t, yaml.DisallowUnknownField()); err != nil {
		return nil, yamlError(name, err)
	}
	v := &validator{name: name, file: file}
	t.validate(v)
	if v.err != nil {
		return nil, v.err
	}
	t.byName = make(map[string]*ErrorType, len(t.ErrorTypes))
	for i := range t.ErrorTypes {
		t.byName[t.ErrorTypes[i].Name] = &t.ErrorTypes[i]
	}
	return &t, nil
}

// Type returns the error type with the given name.
func (t *Taxonomy) Type(name string) (*ErrorType, bool) {
	et, ok := t.byName[name]
	return et, ok
}

// PromptTypes returns the error types shown to the inception model: all but
// the held-out ones, in file order.
func (t *Taxonomy) PromptTypes() []ErrorType {
	out := make([]ErrorType, 0, len(t.ErrorTypes))
	for _, et := range t.ErrorTypes {
		if !et.HeldOut {
			out = append(out, et)
		}
	}
	return out
}

// WithHeldOut returns a copy of the taxonomy in which the named error types
// are also held out (left out of what the modules are shown), for an
// evaluation of unseen types. An unknown name is an error wrapping
// ErrInvalidTaxonomy; holding out every type is too.
func (t *Taxonomy) WithHeldOut(names ...string) (*Taxonomy, error) {
	c := *t
	c.ErrorTypes = append([]ErrorType(nil), t.ErrorTypes...)
	c.byName = make(map[string]*ErrorType, len(c.ErrorTypes))
	for i := range c.ErrorTypes {
		c.byName[c.ErrorTypes[i].Name] = &c.ErrorTypes[i]
	}
	for _, n := range names {
		et, ok := c.byName[n]
		if !ok {
			return nil, fmt.Errorf("%w: held-out type %q is not in the taxonomy", ErrInvalidTaxonomy, n)
		}
		et.HeldOut = true
	}
	if len(c.PromptTypes()) == 0 {
		return nil, fmt.Errorf("%w: every error type would be held out", ErrInvalidTaxonomy)
	}
	return &c, nil
}

// PromptContrasts returns the contrasts shown to the inception model: those
// whose types are all shown (declared and not held out), in file order.
func (t *Taxonomy) PromptContrasts() []Contrast {
	var out []Contrast
	for _, c := range t.Contrasts {
		if !t.namesHidden(c.Types, c.Text) {
			out = append(out, c)
		}
	}
	return out
}

// PromptJudging returns the judging notes shown to the inception model: all
// but those that name a held-out type, which the model must not learn of,
// or a default type the file does not declare.
func (t *Taxonomy) PromptJudging() []string {
	var out []string
	for _, j := range t.Judging {
		if !t.namesHidden(nil, j) {
			out = append(out, j)
		}
	}
	return out
}

// namesHidden reports, among types or named in text, a type the model is
// not shown: a held-out one, or one not declared (types), or one of the
// default types the file does not declare (text).
func (t *Taxonomy) namesHidden(types []string, text string) bool {
	shown := func(name string) bool {
		et, ok := t.byName[name]
		return ok && !et.HeldOut
	}
	for _, n := range types {
		if !shown(n) {
			return true
		}
	}
	lower := strings.ToLower(text)
	for _, et := range t.ErrorTypes {
		if et.HeldOut && WordIndex(lower, et.Name) >= 0 {
			return true
		}
	}
	for _, n := range defaultTypeNames {
		if !shown(n) && WordIndex(lower, n) >= 0 {
			return true
		}
	}
	return false
}

var defaultTypeNames = []string{TypeAnaphora, TypeMultipleInterpretation, TypeContradiction, TypeUnsupportedAction, TypeUnsupportedParameter, TypeUnsupportedDomain}

// RecoveryToolNames returns the names of the recovery tools.
func (t *Taxonomy) RecoveryToolNames() []string {
	out := make([]string, len(t.RecoveryTools))
	for i, rt := range t.RecoveryTools {
		out[i] = rt.Name
	}
	return out
}

// ParametersJSON returns the tool's parameter JSON Schema as JSON.
func (rt RecoveryTool) ParametersJSON() json.RawMessage {
	b, err := json.Marshal(rt.Parameters)
	if err != nil { // validated at load; cannot happen
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

type validator struct {
	name string
	file *ast.File
	err  error
}

// fail records the first problem, located at the YAML path.
func (v *validator) fail(path, format string, args ...any) {
	if v.err != nil {
		return
	}
	line := v.line(path)
	field := strings.TrimPrefix(path, "$.")
	v.err = fmt.Errorf("%w: %s:%d: %s: %s", ErrInvalidTaxonomy, v.name, line, field, fmt.Sprintf(format, args...))
}

// line finds the line of the node at path, or of its nearest existing parent.
func (v *validator) line(path string) int {
	for p := path; p != "" && p != "$"; {
		if yp, err := yaml.PathString(p); err == nil {
			if n, err := yp.FilterFile(v.file); err == nil && n != nil {
				if tk := n.GetToken(); tk != nil && tk.Position != nil {
					return tk.Position.Line
				}
			}
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return 1
}

var typeNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func (t *Taxonomy) validate(v *validator) {
	if strings.TrimSpace(t.Version) == "" {
		v.fail("$.version", "is required")
	}
	if len(t.RecoveryTools) == 0 {
		v.fail("$.recovery_tools", "at least one recovery tool is required")
	}
	tools := map[string]bool{}
	for i, rt := range t.RecoveryTools {
		p := fmt.Sprintf("$.recovery_tools[%d]", i)
		switch {
		case !typeNameRE.MatchString(rt.Name):
			v.fail(p+".name", "%q is not a tool name ([a-z][a-z0-9_]*)", rt.Name)
		case tools[rt.Name]:
			v.fail(p+".name", "duplicate recovery tool %q", rt.Name)
		case strings.TrimSpace(rt.Description) == "":
			v.fail(p+".description", "is required")
		case rt.Parameters == nil:
			v.fail(p+".parameters", "a JSON Schema object is required")
		default:
			if err := compileSchema(rt.Parameters); err != nil {
				v.fail(p+".parameters", "not a valid JSON Schema: %v", err)
			}
		}
		tools[rt.Name] = true
	}
	if len(t.ErrorTypes) == 0 {
		v.fail("$.error_types", "at least one error type is required")
	}
	seen := map[string]bool{}
	for i, et := range t.ErrorTypes {
		p := fmt.Sprintf("$.error_types[%d]", i)
		switch {
		case !typeNameRE.MatchString(et.Name):
			v.fail(p+".name", "%q is not an error type name ([a-z][a-z0-9_]*)", et.Name)
		case seen[et.Name]:
			v.fail(p+".name", "duplicate error type %q", et.Name)
		case et.Category != CategoryAmbiguous && et.Category != CategoryUnsupported:
			v.fail(p+".category", "%q is not one of ambiguous, unsupported", et.Category)
		case strings.TrimSpace(et.Definition) == "":
			v.fail(p+".definition", "is required")
		case strings.TrimSpace(et.RecoveryPlan) == "":
			v.fail(p+".recovery_plan", "is required")
		case !tools[et.RecoveryTool]:
			v.fail(p+".recovery_tool", "%q is not a declared recovery tool", et.RecoveryTool)
		case !strings.Contains(et.RecoveryPlan, et.RecoveryTool):
			v.fail(p+".recovery_plan", "must name its recovery tool %q", et.RecoveryTool)
		}
		if rest := strings.ReplaceAll(et.RecoveryPlan, EvidenceSlot, ""); strings.ContainsAny(rest, "{}") {
			v.fail(p+".recovery_plan", "the only allowed placeholder is %s", EvidenceSlot)
		}
		for j, c := range et.Cues {
			checkRE(v, fmt.Sprintf("%s.cues[%d]", p, j), c)
		}
		seen[et.Name] = true
	}
	// A contrast or rule may name a type the file does not declare (a
	// provider dropped it from a copy of the default file): it is then left
	// out of the prompt, not refused.
	for i, c := range t.Contrasts {
		p := fmt.Sprintf("$.contrasts[%d]", i)
		if len(c.Types) == 0 {
			v.fail(p+".types", "a contrast needs at least one error type (one: the type against a turn without error)")
		}
		for j, name := range c.Types {
			if !typeNameRE.MatchString(name) {
				v.fail(fmt.Sprintf("%s.types[%d]", p, j), "%q is not an error type name ([a-z][a-z0-9_]*)", name)
			}
		}
		if strings.TrimSpace(c.Text) == "" {
			v.fail(p+".text", "is required")
		}
	}
	for i, j := range t.Judging {
		if strings.TrimSpace(j) == "" {
			v.fail(fmt.Sprintf("$.judging[%d]", i), "is empty")
		}
	}
	for dn, d := range t.Domains {
		p := "$.domains." + dn
		for i, e := range d.Entities {
			ep := fmt.Sprintf("%s.entities[%d]", p, i)
			if e.Name == "" {
				v.fail(ep+".name", "is required")
			}
			checkRE(v, ep+".pattern", e.Pattern)
		}
		for key, groups := range map[string][]CueGroup{"unsupported_actions": d.UnsupportedActions, "unsupported_domains": d.UnsupportedDomains} {
			for i, g := range groups {
				gp := fmt.Sprintf("%s.%s[%d]", p, key, i)
				if g.Name == "" {
					v.fail(gp+".name", "is required")
				}
				if len(g.Cues) == 0 {
					v.fail(gp+".cues", "at least one cue is required")
				}
				for j, c := range g.Cues {
					checkRE(v, fmt.Sprintf("%s.cues[%d]", gp, j), c)
				}
			}
		}
		for i, c := range d.GateCues {
			checkRE(v, fmt.Sprintf("%s.gate_cues[%d]", p, i), c)
		}
		for i, pn := range d.Parameters {
			pp := fmt.Sprintf("%s.parameters[%d]", p, i)
			if pn.Parameter == "" {
				v.fail(pp+".parameter", "is required")
			}
			if len(pn.Values) == 0 {
				v.fail(pp+".values", "at least one phrase is required")
			}
			if pn.Context != "" {
				checkRE(v, pp+".context", pn.Context)
			}
		}
	}
}

func checkRE(v *validator, path, expr string) {
	if strings.TrimSpace(expr) == "" {
		v.fail(path, "empty pattern")
		return
	}
	if _, err := regexp.Compile(expr); err != nil {
		v.fail(path, "bad RE2 pattern: %v", err)
	}
}

func compileSchema(doc any) error {
	// Round-trip through JSON so YAML-decoded numbers and maps are plain
	// JSON values.
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("recovery-tool.json", inst); err != nil {
		return err
	}
	_, err = c.Compile("recovery-tool.json")
	return err
}

// tokenError is implemented by go-yaml's syntax and decode errors.
type tokenError interface {
	GetToken() *token.Token
	GetMessage() string
}

func yamlError(name string, err error) error {
	var te tokenError
	if errors.As(err, &te) {
		line := 0
		if tk := te.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
		field := ""
		if tk := te.GetToken(); tk != nil {
			field = tk.Value + ": "
		}
		return fmt.Errorf("%w: %s:%d: %s%s", ErrInvalidTaxonomy, name, line, field, te.GetMessage())
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalidTaxonomy, name, err)
}

// ToolsByType maps each error type, held-out ones included, to its
// recovery tool: what the injector falls back to when a detection names
// no tool. Derived from the taxonomy, never copied.
func (t *Taxonomy) ToolsByType() map[string]string {
	out := make(map[string]string, len(t.ErrorTypes))
	for _, e := range t.ErrorTypes {
		out[e.Name] = e.RecoveryTool
	}
	return out
}
