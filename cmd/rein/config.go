package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinception/rein/internal/llm"
)

// fileConfig is rein.yaml: top-level keys named like flags (data-dir,
// nats-url, http, stages, …) plus sections for what flags cannot express.
// Every key keeps its line, so that an error names where it is.
type fileConfig struct {
	path string
	// raw holds the flag keys' values, lines every top-level key's line.
	raw   map[string]any
	lines map[string]int
	// sections are decoded by the parts that own them (decodeSection),
	// from the parsed nodes, so their errors carry the file's own lines.
	sections map[string]ast.Node
}

// sectionNames are the keys of rein.yaml that are not flags. Only
// sections something reads are accepted: detector:, agent: and tenants:
// were accepted and silently ignored, so a user believed a setting was in
// force that was not; they are now unknown keys, refused with the key.
var sectionNames = map[string]bool{"streams": true, "sinks": true}

// errUnknownKey is what a rein.yaml key that nothing reads wraps;
// errBadValue a value of the wrong shape.
var (
	errUnknownKey = errors.New("unknown key")
	errBadValue   = errors.New("bad value")
)

func loadFileConfig(path string) (*fileConfig, error) {
	c := &fileConfig{path: path, raw: map[string]any{}, lines: map[string]int{}, sections: map[string]ast.Node{}}
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parseFileConfig(path, b)
}

// parseFileConfig parses rein.yaml's text; path names it in errors.
func parseFileConfig(path string, b []byte) (*fileConfig, error) {
	c := &fileConfig{path: path, raw: map[string]any{}, lines: map[string]int{}, sections: map[string]ast.Node{}}
	f, err := parser.ParseBytes(b, 0)
	if err != nil {
		return nil, fmt.Errorf("config %s: %s", path, yaml.FormatError(err, false, true))
	}
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if err := c.addMapping(doc.Body); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// addMapping records the top-level keys of one YAML document.
func (c *fileConfig) addMapping(body ast.Node) error {
	var pairs []*ast.MappingValueNode
	switch n := body.(type) {
	case *ast.MappingNode:
		pairs = n.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{n}
	case *ast.CommentNode:
		return nil
	default:
		return fmt.Errorf("config %s:%d: %w: the file must be a mapping of keys (data-dir: …, streams: …), not a %s",
			c.path, body.GetToken().Position.Line, errBadValue, body.Type())
	}
	for _, mv := range pairs {
		key := strings.TrimSpace(mv.Key.String())
		line := mv.Key.GetToken().Position.Line
		if first, ok := c.lines[key]; ok {
			return fmt.Errorf("config %s:%d: %w: %q given twice (first on line %d)", c.path, line, errBadValue, key, first)
		}
		c.lines[key] = line
		if sectionNames[key] {
			c.sections[key] = mv.Value
			continue
		}
		var v any
		if err := yaml.NodeToValue(mv.Value, &v); err != nil {
			return fmt.Errorf("config %s:%d: key %s: %s", c.path, line, key, yaml.FormatError(err, false, true))
		}
		c.raw[key] = v
	}
	return nil
}

// hasSection reports whether rein.yaml has the section.
func (c *fileConfig) hasSection(name string) bool {
	return c != nil && c.sections[name] != nil
}

// decodeSection decodes a section strictly into out: an unknown or
// ill-typed field is an error with its line in the file. A missing section
// leaves out as it is.
func (c *fileConfig) decodeSection(name string, out any) error {
	if !c.hasSection(name) {
		return nil
	}
	if err := yaml.NodeToValue(c.sections[name], out, yaml.Strict()); err != nil {
		return fmt.Errorf("config %s:%d: section %s: %s", c.path, c.lines[name], name, yaml.FormatError(err, false, true))
	}
	return nil
}

// where names a key's place in the file ("rein.yaml:3").
func (c *fileConfig) where(key string) string {
	return fmt.Sprintf("%s:%d", c.path, c.lines[key])
}

// envName is the environment variable that sets a flag: REIN_<FLAG>.
func envName(flag string) string {
	return "REIN_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envAliases are further variables that set a flag, after REIN_<FLAG>: the
// model settings are documented as REIN_LLM_*, and they must obey the same
// precedence as every other setting (flag > environment > file).
var envAliases = map[string][]string{
	"provider": {llm.EnvProvider},
	"model":    {llm.EnvModel},
	"base-url": {llm.EnvBaseURL},
}

// flagEnv returns the variable that sets the flag, and its value, if any.
func flagEnv(flag string) (string, string, bool) {
	for _, name := range append([]string{envName(flag)}, envAliases[flag]...) {
		if v, ok := os.LookupEnv(name); ok {
			return name, v, true
		}
	}
	return "", "", false
}

// sourceAnnotation is the pflag annotation recording where a flag's value
// came from (see flagSource).
const sourceAnnotation = "rein-source"

// Sources of a setting, as flagSource reports them.
const (
	sourceFlag    = "flag"
	sourceDefault = "default"
)

func setSource(f *pflag.Flag, src string) {
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[sourceAnnotation] = []string{src}
}

// flagSource says where a flag's value came from: "flag", "env
// REIN_NATS_URL", "file rein.yaml:3" or "default".
func flagSource(f *pflag.Flag) string {
	if f == nil {
		return sourceDefault
	}
	if src := f.Annotations[sourceAnnotation]; len(src) == 1 {
		return src[0]
	}
	if f.Changed {
		return sourceFlag
	}
	return sourceDefault
}

// applySources fills every flag the user did not set on the command line,
// first from the environment (REIN_<FLAG>, then the flag's aliases), then
// from the config file, and records each value's source. An unknown
// config key is an error naming its line.
func applySources(cmd *cobra.Command, cfg *fileConfig) error {
	if cfg != nil {
		if err := cfg.checkKeys(cmd); err != nil {
			return err
		}
	}
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		if f.Changed {
			setSource(f, sourceFlag)
			return
		}
		if name, v, ok := flagEnv(f.Name); ok {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, e)
			}
			setSource(f, "env "+name)
			return
		}
		if cfg == nil {
			return
		}
		if v, ok := cfg.raw[f.Name]; ok {
			if e := setFromYAML(f, v); e != nil {
				err = fmt.Errorf("config %s: key %s: %w", cfg.where(f.Name), f.Name, e)
			}
			setSource(f, "file "+cfg.where(f.Name))
		}
	})
	return err
}

// checkKeys refuses a key that is neither a flag of cmd nor a section,
// naming its line and the closest flag.
func (c *fileConfig) checkKeys(cmd *cobra.Command) error {
	keys := slices.SortedFunc(maps.Keys(c.raw), func(a, b string) int { return c.lines[a] - c.lines[b] })
	for _, k := range keys {
		if cmd.Flags().Lookup(k) != nil {
			continue
		}
		hint := ""
		if s := closestFlag(cmd.Flags(), k); s != "" {
			hint = fmt.Sprintf("; did you mean %s?", s)
		}
		return fmt.Errorf("config %s: %w %q: not a flag of %q nor a section (%s)%s", c.where(k), errUnknownKey, k, cmd.Name(),
			strings.Join(slices.Sorted(maps.Keys(sectionNames)), ", "), hint)
	}
	return nil
}

// closestFlag is the flag name nearest to key (at most two edits away).
func closestFlag(fs *pflag.FlagSet, key string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if d := editDistance(key, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func setFromYAML(f *pflag.Flag, v any) error {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = fmt.Sprint(p)
		}
		return f.Value.Set(strings.Join(parts, ","))
	case map[string]any:
		return fmt.Errorf("%w: a flag takes a single value or a list, not a mapping", errBadValue)
	default:
		return f.Value.Set(fmt.Sprint(x))
	}
}
