package eval

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/testutil"
)

// played builds a trajectory the way the runner will: the calls as made,
// the session's final state scored with the domain's τ-bench reward.
func played(t *testing.T, d *taubench.Domain, task taubench.Task, calls []ToolCall) Trajectory {
	t.Helper()
	s := d.NewSession()
	for i := range calls {
		calls[i].StateChanging = StateChanging(d.Name(), calls[i].Name)
		if calls[i].Name == ToolAmbiguityReport || calls[i].Name == ToolTransferToHuman {
			continue // recovery tools change no data
		}
		if _, err := taubench.Observe(context.Background(), s, calls[i].Name, calls[i].Arguments); err != nil {
			t.Fatalf("%s: %v", calls[i].Name, err)
		}
	}
	tr := Trajectory{Calls: calls}
	if err := tr.Finish(context.Background(), d, task, s, nil); err != nil {
		t.Fatal(err)
	}
	return tr
}

// groundTruth is the task's own actions as the agent's calls at turn.
func groundTruth(task taubench.Task, turn int) []ToolCall {
	var out []ToolCall
	for _, a := range task.Actions {
		out = append(out, ToolCall{Turn: turn, Name: a.Name, Arguments: a.Kwargs})
	}
	return out
}

func report(turn int) ToolCall {
	return ToolCall{Turn: turn, Name: ToolAmbiguityReport, Arguments: json.RawMessage(`{"report":"which reservation?"}`)}
}

func TestScoreOnHandBuiltTrajectories(t *testing.T) {
	dir := testutil.TauBench(t)
	d, err := taubench.Load(taubench.Airline, filepath.Join(dir, "airline"))
	if err != nil {
		t.Fatal(err)
	}
	set := BundledQuick(LoadOptions{})
	byID := map[string]Scenario{}
	for _, s := range set {
		byID[s.ID] = s
	}
	ts := NewTaskSource(dir)
	ana := byID["air-ana-2"] // task 31: the ground truth cancels 9HBUV8
	task, err := ts.Task(ana)
	if err != nil {
		t.Fatal(err)
	}
	wrongCancel := ToolCall{Turn: 2, Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"D1EW9B"}`)}

	cases := []struct {
		name     string
		s        Scenario
		calls    []ToolCall
		success  bool
		reason   string
		reported bool
	}{
		{"report and goal", ana, append([]ToolCall{report(2)}, groundTruth(task, 2)...), true, "reported the ambiguity and reached", true},
		{"report without goal", ana, []ToolCall{report(2), wrongCancel}, false, "goal was not reached", true},
		{"goal without report", ana, groundTruth(task, 2), false, "ambiguity_report never called", false},
		{"report before the error turn does not count", ana, append([]ToolCall{report(0)}, groundTruth(task, 2)...), false, "never called", false},
		{"transfer", byID["air-ua-1"], []ToolCall{
			{Turn: 1, Name: "get_user_details", Arguments: json.RawMessage(`{"user_id":"mia_li_3668"}`)},
			{Turn: 2, Name: ToolTransferToHuman, Arguments: json.RawMessage(`{"summary":"wants a seat"}`)},
		}, true, "transferred to a human without changing data", false},
		{"transfer after a state change", byID["air-ud-2"], []ToolCall{
			{Turn: 2, Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"9HBUV8"}`)},
			{Turn: 2, Name: ToolTransferToHuman, Arguments: json.RawMessage(`{"summary":"rental car"}`)},
		}, false, "state-changing tool ran after the error turn", false},
		{"no transfer", byID["air-ua-1"], nil, false, "never transferred", false},
		{"clean: goal reached", byID["air-clean-3"], groundTruth(task, 1), true, "reward 1", false},
		{"clean: goal missed", byID["air-clean-3"], []ToolCall{wrongCancel}, false, "reward 0", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := ts.Task(c.s)
			if err != nil {
				t.Fatal(err)
			}
			v := Score(c.s, played(t, d, tk, c.calls))
			if v.Success != c.success || v.Reported != c.reported || !strings.Contains(v.Reason, c.reason) {
				t.Fatalf("verdict %+v, want success %v reported %v reason ~%q", v, c.success, c.reported, c.reason)
			}
		})
	}
}

func TestStateChangingTools(t *testing.T) {
	for _, c := range []struct {
		domain, tool string
		want         bool
	}{
		{"airline", "cancel_reservation", true},
		{"airline", "get_reservation_details", false},
		{"airline", ToolTransferToHuman, false},
		{"retail", "return_delivered_order_items", true},
		{"retail", "calculate", false},
		{"retail", ToolAmbiguityReport, false},
	} {
		if got := StateChanging(c.domain, c.tool); got != c.want {
			t.Errorf("%s/%s: %v", c.domain, c.tool, got)
		}
	}
	// Every write tool named here exists in the domain's catalogue.
	for domain, tools := range stateChanging {
		cat, err := taubench.ToolCatalogue(domain)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, tl := range cat {
			have[tl.Name] = true
		}
		for name := range tools {
			if !have[name] {
				t.Errorf("%s: %s is not a tool of the domain", domain, name)
			}
		}
	}
}
