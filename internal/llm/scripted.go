package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Scripted is a deterministic simulator driven by a Script: it is NOT a
// model. It answers each request with the first rule whose matchers hold
// (or the script's default), renders the rule's templates from the regex
// named groups, and waits the rule's latency. Provider() is "scripted" and
// Model() is the script's name, so metrics and detections never present it
// as a model.
type Scripted struct {
	script *Script
}

// NewScripted wraps a compiled script.
func NewScripted(s *Script) *Scripted { return &Scripted{script: s} }

// Provider returns "scripted".
func (c *Scripted) Provider() string { return ProviderScripted }

// Model returns the script's name.
func (c *Scripted) Model() string { return c.script.Name }

// view is what the matchers look at, computed once per call: the current
// turn is everything after the last user message.
type view struct {
	lastRole   string
	lastUser   string
	hasUser    bool
	turn       int // number of user messages
	thought    string
	hasThought bool
	lastResult string
	lastTool   string // name of the tool whose result is most recent
	hasResult  bool
	called     []string // tools called by the assistant this turn
	assistants int      // assistant messages this turn
}

func (s *Script) view(req Request) view {
	var v view
	msgs := req.Messages
	if n := len(msgs); n > 0 {
		v.lastRole = msgs[n-1].Role
	}
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			v.lastUser, v.hasUser, start = msgs[i].Content, true, i+1
			break
		}
	}
	for i := range msgs {
		if msgs[i].Role == RoleUser {
			v.turn++
		}
	}
	// Tool names of results: map ids to names from this turn's calls.
	for i := start; i < len(msgs); i++ {
		m := &msgs[i]
		switch m.Role {
		case RoleAssistant:
			v.assistants++
			for _, tc := range m.ToolCalls {
				v.called = append(v.called, tc.Name)
				if tc.Name == s.thinkTool {
					var a struct {
						Thought string `json:"thought"`
					}
					if json.Unmarshal(tc.Arguments, &a) == nil {
						v.thought, v.hasThought = a.Thought, true
					}
				}
			}
		case RoleTool:
			v.lastResult, v.hasResult = m.Content, true
			v.lastTool = m.Name
			if v.lastTool == "" {
				v.lastTool = toolNameOf(msgs[start:i], m.ToolCallID)
			}
		}
	}
	return v
}

func toolNameOf(msgs []Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, tc := range msgs[i].ToolCalls {
			if tc.ID == id {
				return tc.Name
			}
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// match reports whether r applies; groups receives the regex captures.
func (r *rule) match(req *Request, v *view, g *captures) bool {
	if r.purpose != "" && r.purpose != req.Purpose {
		return false
	}
	if r.lastRole != "" && r.lastRole != v.lastRole {
		return false
	}
	if r.turn != 0 && r.turn != v.turn {
		return false
	}
	if r.schema != "" && (req.ResponseSchema == nil || req.ResponseSchema.Name != r.schema) {
		return false
	}
	if r.hasTool != "" {
		found := false
		for i := range req.Tools {
			if req.Tools[i].Name == r.hasTool {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, c := range r.called {
		if !contains(v.called, c) {
			return false
		}
	}
	for _, c := range r.notCalled {
		if contains(v.called, c) {
			return false
		}
	}
	if r.lastTool != "" && (!v.hasResult || r.lastTool != v.lastTool) {
		return false
	}
	if r.user != nil && (!v.hasUser || !capture(r.user, v.lastUser, &g.user)) {
		return false
	}
	if r.thought != nil && (!v.hasThought || !capture(r.thought, v.thought, &g.thought)) {
		return false
	}
	if r.toolResult != nil && (!v.hasResult || !capture(r.toolResult, v.lastResult, &g.result)) {
		return false
	}
	if r.system != nil && !capture(r.system, req.System, &g.system) {
		return false
	}
	if r.differ[0].from != "" {
		a, okA := g.lookup(r.differ[0])
		b, okB := g.lookup(r.differ[1])
		if !okA || !okB || a == b {
			return false
		}
	}
	return true
}

// lookup returns a captured group's value and whether it was captured.
func (g *captures) lookup(ref groupRef) (string, bool) {
	m := map[string]map[string]string{"user": g.user, "thought": g.thought, "result": g.result, "system": g.system}[ref.from]
	v, ok := m[ref.name]
	return v, ok
}

type captures struct {
	user, thought, result, system map[string]string
}

// capture matches re against s and stores its named groups in *dst.
func capture(re *regexp.Regexp, s string, dst *map[string]string) bool {
	if re.NumSubexp() == 0 {
		return re.MatchString(s)
	}
	m := re.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	groups := make(map[string]string, len(m))
	for i, name := range re.SubexpNames() {
		if name != "" {
			groups[name] = m[i]
		}
	}
	*dst = groups
	return true
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Chat answers req from the script.
func (c *Scripted) Chat(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	s := c.script
	v := s.view(req)
	var g captures
	var chosen *rule
	for _, r := range s.rules {
		g = captures{}
		if r.match(&req, &v, &g) {
			chosen = r
			break
		}
	}
	if chosen == nil {
		if s.def == nil {
			return Response{}, fmt.Errorf("%w: script %s, purpose %q, last role %q, last user message %q",
				ErrNoRule, s.Name, req.Purpose, v.lastRole, truncate(v.lastUser, 80))
		}
		chosen, g = s.def, captures{}
	}
	if chosen.latency > 0 {
		t := time.NewTimer(chosen.latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, ctx.Err()
		case <-t.C:
		}
	}
	if chosen.err != "" {
		return Response{}, fmt.Errorf("%w: %s (script %s, rule %s)", ErrSimulated, chosen.err, s.Name, chosen.name)
	}
	resp, err := chosen.respond(&req, &v, &g)
	if err != nil {
		return Response{}, fmt.Errorf("%w: script %s, rule %s: %w", ErrScript, s.Name, chosen.name, err)
	}
	resp.Model = s.Name
	return resp, nil
}

func (r *rule) needsData() bool {
	if r.content != nil && r.content.tpl != nil {
		return true
	}
	if r.json != nil && r.jsonStatic == nil {
		return true
	}
	for _, c := range r.calls {
		if c.name.tpl != nil || c.static == nil {
			return true
		}
	}
	return false
}

func (r *rule) respond(req *Request, v *view, g *captures) (Response, error) {
	resp := Response{StopReason: r.stopReason, Usage: r.usage}
	var data map[string]any
	if r.needsData() {
		data = map[string]any{
			"user":         orEmpty(g.user),
			"thought":      orEmpty(g.thought),
			"result":       orEmpty(g.result),
			"system":       orEmpty(g.system),
			"last_user":    v.lastUser,
			"last_thought": v.thought,
			"last_result":  v.lastResult,
			"last_tool":    v.lastTool,
			"purpose":      req.Purpose,
			"turn":         v.turn,
			"rule":         r.name,
		}
	}
	var err error
	switch {
	case r.content != nil:
		if resp.Content, err = r.content.render(data); err != nil {
			return resp, fmt.Errorf("content: %w", err)
		}
	case r.jsonStatic != nil:
		resp.Content = string(r.jsonStatic)
	case r.json != nil:
		val, err := r.json.render(data)
		if err != nil {
			return resp, fmt.Errorf("json: %w", err)
		}
		b, err := marshalJSON(val)
		if err != nil {
			return resp, fmt.Errorf("json: %w", err)
		}
		resp.Content = string(b)
	}
	if len(r.calls) > 0 {
		resp.ToolCalls = make([]ToolCall, len(r.calls))
	}
	for i, ct := range r.calls {
		name, err := ct.name.render(data)
		if err != nil {
			return resp, fmt.Errorf("tool_calls[%d].name: %w", i, err)
		}
		args := json.RawMessage(append([]byte(nil), ct.static...))
		if ct.static == nil {
			val, err := ct.args.render(data)
			if err != nil {
				return resp, fmt.Errorf("tool_calls[%d].arguments: %w", i, err)
			}
			if args, err = marshalJSON(val); err != nil {
				return resp, fmt.Errorf("tool_calls[%d].arguments: %w", i, err)
			}
		}
		// Deterministic ids: user turn, assistant step within the turn, index.
		id := "call_s" + strconv.Itoa(v.turn) + "_" + strconv.Itoa(v.assistants) + "_" + strconv.Itoa(i)
		resp.ToolCalls[i] = ToolCall{ID: id, Name: name, Arguments: args}
	}
	return resp, nil
}
