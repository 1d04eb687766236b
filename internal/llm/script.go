package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/goccy/go-yaml"
)

// The script file format (see the package doc for the full description).

type scriptFile struct {
	Name        string     `yaml:"name" json:"name"`
	Description string     `yaml:"description" json:"description"`
	ThinkTool   string     `yaml:"think_tool" json:"think_tool"`
	Rules       []ruleFile `yaml:"rules" json:"rules"`
	Default     *ruleFile  `yaml:"default" json:"default"`
}

type ruleFile struct {
	Name    string        `yaml:"name" json:"name"`
	When    *matchFile    `yaml:"when" json:"when"`
	Latency string        `yaml:"latency" json:"latency"`
	Respond *responseFile `yaml:"respond" json:"respond"`
	Error   string        `yaml:"error" json:"error"`
}

type matchFile struct {
	Purpose    string   `yaml:"purpose" json:"purpose"`
	LastRole   string   `yaml:"last_role" json:"last_role"`
	Turn       int      `yaml:"turn" json:"turn"`
	Schema     string   `yaml:"schema" json:"schema"`
	HasTool    string   `yaml:"has_tool" json:"has_tool"`
	Called     []string `yaml:"called" json:"called"`
	NotCalled  []string `yaml:"not_called" json:"not_called"`
	LastTool   string   `yaml:"last_tool" json:"last_tool"`
	User       string   `yaml:"user" json:"user"`
	Thought    string   `yaml:"thought" json:"thought"`
	ToolResult string   `yaml:"tool_result" json:"tool_result"`
	System     string   `yaml:"system" json:"system"`
	// Differ names two captured groups ("user.uid", "result.owner") that
	// must both be captured and differ: a reservation another user owns.
	Differ []string `yaml:"differ" json:"differ"`
}

type responseFile struct {
	Content    string         `yaml:"content" json:"content"`
	JSON       any            `yaml:"json" json:"json"`
	ToolCalls  []toolCallFile `yaml:"tool_calls" json:"tool_calls"`
	StopReason string         `yaml:"stop_reason" json:"stop_reason"`
	Usage      *usageFile     `yaml:"usage" json:"usage"`
}

type toolCallFile struct {
	Name      string `yaml:"name" json:"name"`
	Arguments any    `yaml:"arguments" json:"arguments"`
}

type usageFile struct {
	Input  int `yaml:"input" json:"input"`
	Output int `yaml:"output" json:"output"`
	Cached int `yaml:"cached" json:"cached"`
}

// Script is a compiled simulator script: regexes and templates are built
// once at load, so a scripted call costs microseconds.
type Script struct {
	Name        string
	Description string
	thinkTool   string
	rules       []*rule
	def         *rule
}

// Rules is the number of rules (the default not included).
func (s *Script) Rules() int { return len(s.rules) }

type rule struct {
	name    string
	latency time.Duration
	err     string

	purpose, lastRole, schema, hasTool, lastTool string
	turn                                         int
	called, notCalled                            []string
	user, thought, toolResult, system            *regexp.Regexp
	differ                                       [2]groupRef // zero: no differ matcher

	content    *text     // nil when the rule has no content
	json       node      // structured content, marshalled into Content
	jsonStatic []byte    // json pre-marshalled when it has no template
	calls      []callTpl // tool calls to answer with
	stopReason string
	usage      Usage
}

type callTpl struct {
	name   *text
	args   node
	static json.RawMessage
}

// LoadScript reads and compiles a script file (YAML, or JSON which is YAML).
// The script's name defaults to the file name without extension.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScript, err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return s, nil
}

// ParseScript compiles a script from YAML or JSON text. Unknown fields, bad
// regexes, bad templates and rules without an answer are errors naming the
// rule.
func ParseScript(data []byte) (*Script, error) {
	var f scriptFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrScript, yaml.FormatError(err, false, true))
	}
	s := &Script{Name: f.Name, Description: f.Description, thinkTool: f.ThinkTool}
	if s.thinkTool == "" {
		s.thinkTool = "think"
	}
	if len(f.Rules) == 0 && f.Default == nil {
		return nil, fmt.Errorf("%w: no rules and no default", ErrScript)
	}
	for i := range f.Rules {
		where := fmt.Sprintf("rule %d", i+1)
		if f.Rules[i].Name != "" {
			where += fmt.Sprintf(" (%s)", f.Rules[i].Name)
		}
		r, err := compileRule(&f.Rules[i], where)
		if err != nil {
			return nil, err
		}
		if r.name == "" {
			r.name = fmt.Sprintf("rule-%d", i+1)
		}
		s.rules = append(s.rules, r)
	}
	if f.Default != nil {
		if f.Default.When != nil {
			return nil, fmt.Errorf("%w: default: a default rule has no `when`", ErrScript)
		}
		r, err := compileRule(f.Default, "default")
		if err != nil {
			return nil, err
		}
		if r.name == "" {
			r.name = "default"
		}
		s.def = r
	}
	return s, nil
}

func compileRule(f *ruleFile, where string) (*rule, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrScript, where, fmt.Sprintf(format, a...))
	}
	r := &rule{name: f.Name, err: f.Error}
	if f.Latency != "" {
		d, err := time.ParseDuration(f.Latency)
		if err != nil || d < 0 {
			return nil, bad("latency %q is not a duration like 5ms", f.Latency)
		}
		r.latency = d
	}
	if w := f.When; w != nil {
		switch w.LastRole {
		case "", RoleUser, RoleTool, RoleAssistant:
		default:
			return nil, bad("when.last_role %q must be user, tool or assistant", w.LastRole)
		}
		if w.Turn < 0 {
			return nil, bad("when.turn must be positive")
		}
		r.purpose, r.lastRole, r.schema, r.hasTool, r.lastTool, r.turn = w.Purpose, w.LastRole, w.Schema, w.HasTool, w.LastTool, w.Turn
		r.called, r.notCalled = w.Called, w.NotCalled
		if len(w.Differ) > 0 {
			if len(w.Differ) != 2 {
				return nil, bad("when.differ names two groups, not %d", len(w.Differ))
			}
			for i, ref := range w.Differ {
				g, err := parseGroupRef(ref)
				if err != nil {
					return nil, bad("when.differ: %v", err)
				}
				r.differ[i] = g
			}
		}
		for _, x := range []struct {
			field string
			src   string
			dst   **regexp.Regexp
		}{{"user", w.User, &r.user}, {"thought", w.Thought, &r.thought}, {"tool_result", w.ToolResult, &r.toolResult}, {"system", w.System, &r.system}} {
			if x.src == "" {
				continue
			}
			re, err := regexp.Compile(x.src)
			if err != nil {
				return nil, bad("when.%s: %v", x.field, err)
			}
			*x.dst = re
		}
	}
	if f.Respond == nil && f.Error == "" {
		return nil, bad("needs `respond` or `error`")
	}
	if f.Respond != nil && f.Error != "" {
		return nil, bad("has both `respond` and `error`")
	}
	if resp := f.Respond; resp != nil {
		if resp.Content != "" && resp.JSON != nil {
			return nil, bad("respond has both `content` and `json`")
		}
		if resp.Content == "" && resp.JSON == nil && len(resp.ToolCalls) == 0 {
			return nil, bad("respond needs content, json or tool_calls")
		}
		var err error
		if resp.Content != "" {
			if r.content, err = compileText(resp.Content); err != nil {
				return nil, bad("respond.content: %v", err)
			}
		}
		if resp.JSON != nil {
			if r.json, err = compileNode(resp.JSON); err != nil {
				return nil, bad("respond.json: %v", err)
			}
			if lit, ok := r.json.(literal); ok {
				if r.jsonStatic, err = marshalJSON(lit.v); err != nil {
					return nil, bad("respond.json: %v", err)
				}
			}
		}
		for j, tc := range resp.ToolCalls {
			if tc.Name == "" {
				return nil, bad("respond.tool_calls[%d] needs a name", j)
			}
			var ct callTpl
			if ct.name, err = compileText(tc.Name); err != nil {
				return nil, bad("respond.tool_calls[%d].name: %v", j, err)
			}
			args := tc.Arguments
			if args == nil {
				args = map[string]any{}
			}
			if _, ok := args.(map[string]any); !ok {
				return nil, bad("respond.tool_calls[%d].arguments must be an object", j)
			}
			if ct.args, err = compileNode(args); err != nil {
				return nil, bad("respond.tool_calls[%d].arguments: %v", j, err)
			}
			if lit, ok := ct.args.(literal); ok {
				if ct.static, err = marshalJSON(lit.v); err != nil {
					return nil, bad("respond.tool_calls[%d].arguments: %v", j, err)
				}
			}
			r.calls = append(r.calls, ct)
		}
		r.stopReason = resp.StopReason
		if r.stopReason == "" {
			if len(r.calls) > 0 {
				r.stopReason = "tool_calls"
			} else {
				r.stopReason = "stop"
			}
		}
		if u := resp.Usage; u != nil {
			r.usage = Usage{InputTokens: u.Input, OutputTokens: u.Output, CachedInputTokens: u.Cached}
		}
	}
	return r, nil
}

// text is a string that is either literal or a template.
type text struct {
	lit string
	tpl *template.Template
}

var templateFuncs = template.FuncMap{
	// json renders a value as JSON (a string becomes a quoted, escaped literal).
	"json": func(v any) (string, error) {
		b, err := marshalJSON(v)
		return string(b), err
	},
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"trim":  strings.TrimSpace,
}

func compileText(s string) (*text, error) {
	if !strings.Contains(s, "{{") {
		return &text{lit: s}, nil
	}
	t, err := template.New("").Option("missingkey=error").Funcs(templateFuncs).Parse(s)
	if err != nil {
		return nil, err
	}
	return &text{tpl: t}, nil
}

func (t *text) render(data map[string]any) (string, error) {
	if t.tpl == nil {
		return t.lit, nil
	}
	var b strings.Builder
	if err := t.tpl.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// node is a JSON value whose string leaves may be templates.
type node interface {
	render(data map[string]any) (any, error)
}

type literal struct{ v any }

func (l literal) render(map[string]any) (any, error) { return l.v, nil }

type textNode struct{ t *text }

func (n textNode) render(data map[string]any) (any, error) { return n.t.render(data) }

type mapNode struct {
	keys []string
	vals []node
}

func (n mapNode) render(data map[string]any) (any, error) {
	out := make(map[string]any, len(n.keys))
	for i, k := range n.keys {
		v, err := n.vals[i].render(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

type listNode []node

func (n listNode) render(data map[string]any) (any, error) {
	out := make([]any, len(n))
	for i, e := range n {
		v, err := e.render(data)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// compileNode turns a decoded YAML/JSON value into a node; subtrees without
// templates collapse into literals.
func compileNode(v any) (node, error) {
	switch x := v.(type) {
	case string:
		t, err := compileText(x)
		if err != nil {
			return nil, err
		}
		if t.tpl == nil {
			return literal{x}, nil
		}
		return textNode{t}, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := mapNode{keys: keys}
		static := true
		for _, k := range keys {
			c, err := compileNode(x[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			_, isLit := c.(literal)
			static = static && isLit
			n.vals = append(n.vals, c)
		}
		if static {
			return literal{x}, nil
		}
		return n, nil
	case []any:
		n := make(listNode, 0, len(x))
		static := true
		for i, e := range x {
			c, err := compileNode(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			_, isLit := c.(literal)
			static = static && isLit
			n = append(n, c)
		}
		if static {
			return literal{x}, nil
		}
		return n, nil
	default:
		if _, err := marshalJSON(x); err != nil {
			return nil, fmt.Errorf("value %v (%T) is not JSON: %w", x, x, err)
		}
		return literal{x}, nil
	}
}

// marshalJSON encodes without HTML escaping and without a trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// groupRef names a captured group: the matcher it came from (user,
// thought, result, system) and the group's name.
type groupRef struct{ from, name string }

func parseGroupRef(ref string) (groupRef, error) {
	from, name, ok := strings.Cut(ref, ".")
	switch {
	case !ok || name == "":
		return groupRef{}, fmt.Errorf("%q is not <matcher>.<group>", ref)
	case from != "user" && from != "thought" && from != "result" && from != "system":
		return groupRef{}, fmt.Errorf("%q: the matcher is user, thought, result or system", ref)
	}
	return groupRef{from, name}, nil
}
