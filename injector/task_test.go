package injector_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ptest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/injector"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

const tenant = "acme"

// startSidecar runs the sidecar responder and waits until it answers.
func startSidecar(t *testing.T, h *rtest.JS, cfg injector.SidecarConfig) func() {
	t.Helper()
	sc, err := injector.NewSidecar(cfg, streams.StageDeps{JS: h.JS, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	stop := rtest.Run(t, "sidecar", sc.Run)
	rtest.CheckFor(t, 5*time.Second, "sidecar responder up", func() bool {
		_, err := h.Conn.Request(bus.InceptionSubject(tenant, "probe", "x"), nil, time.Second)
		return err == nil
	})
	return stop
}

// publishDetection stores a detection as the detector would, with an
// optional id suffix to store a second copy.
func publishDetection(t *testing.T, h *rtest.JS, conv string, det schemas.Detection, suffix string) {
	t.Helper()
	if det.Module == "" {
		det.Module = "rules"
	}
	if det.TaxonomyVersion == "" {
		det.TaxonomyVersion = "test-1"
	}
	ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", tenant, conv, det.Turn)+suffix, "",
		schemas.Meta{Tenant: tenant, Conversation: conv, Turn: det.Turn}, det)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamDetections, bus.DetectionSubject(tenant, conv), &ev); err != nil {
		t.Fatal(err)
	}
}

// Every detection's task: id task.<tenant>.<conv>.<turn> on the
// conversation's task subject, the detection's user text and id, the
// inception block only for an activation (its recovery tool named, from
// the taxonomy, or from the category), signed with the task key; an
// injection counted once the caller says the task is stored.
func TestTaskPerDetection(t *testing.T) {
	cases := []struct {
		name string
		det  schemas.Detection
		want *schemas.Inception
	}{
		{"activated", schemas.Detection{Turn: 1, UserText: "cancel that one", Rein: true, ErrorType: "anaphora", Category: "ambiguous",
			RecoveryTool: "ambiguity_report", Reasoning: "It is unclear which booking; report it, then ask."},
			&schemas.Inception{Thought: "It is unclear which booking; report it, then ask.", ErrorType: "anaphora", RecoveryTool: "ambiguity_report"}},
		{"tool from taxonomy defaults", schemas.Detection{Turn: 1, UserText: "book me a hotel", Rein: true, ErrorType: "unsupported_domain",
			Category: "unsupported", Reasoning: "Hotels are out of scope; transfer."},
			&schemas.Inception{Thought: "Hotels are out of scope; transfer.", ErrorType: "unsupported_domain", RecoveryTool: "transfer_to_human_agents"}},
		{"tool from category", schemas.Detection{Turn: 1, UserText: "x", Rein: true, ErrorType: "custom_gap", Category: "unsupported", Reasoning: "r"},
			&schemas.Inception{Thought: "r", ErrorType: "custom_gap", RecoveryTool: "transfer_to_human_agents"}},
		{"clear", schemas.Detection{Turn: 1, UserText: "hello"}, nil},
		{"failed", schemas.Detection{Turn: 1, UserText: "hello", Failed: true, FailReason: "inception deadline exceeded"}, nil},
	}
	key, err := schemas.NewTaskKey(bytes.Repeat([]byte("k"), 32))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	tasks, err := injector.NewTasks(nil, key, reg)
	if err != nil {
		t.Fatal(err)
	}
	wantInjections := 0
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv := "c" + string(rune('a'+i))
			detID := schemas.EventID("detection", tenant, conv, 1)
			out, stored, err := tasks.Task(schemas.Meta{Tenant: tenant, Conversation: conv, Turn: 1}, tc.det, detID)
			if err != nil {
				t.Fatal(err)
			}
			stored()
			if out.Stream != bus.StreamTasks || out.Subject != bus.TaskSubject(tenant, conv) || out.Event.ID() != schemas.EventID("task", tenant, conv, 1) {
				t.Errorf("task %s goes to %s %s", out.Event.ID(), out.Stream, out.Subject)
			}
			if err := key.Verify(out.Event); err != nil {
				t.Errorf("task not signed: %v", err)
			}
			var task schemas.Task
			if err := out.Event.DataAs(&task); err != nil {
				t.Fatal(err)
			}
			if task.Turn != 1 || task.UserText != tc.det.UserText || task.DetectionID != detID {
				t.Errorf("task = %+v", task)
			}
			switch {
			case tc.want == nil && task.Inception != nil:
				t.Errorf("want no inception, got %+v", task.Inception)
			case tc.want != nil && (task.Inception == nil || *task.Inception != *tc.want):
				t.Errorf("inception = %+v, want %+v", task.Inception, tc.want)
			}
		})
		if tc.want != nil {
			wantInjections++
		}
	}
	if n := ptest.ToFloat64(sum(t, reg, "rein_injector_injections_total")); n != float64(wantInjections) {
		t.Errorf("injections = %v, want %d", n, wantInjections)
	}
}

// A detection without a turn number names no task: refused.
func TestADetectionWithoutATurnNumberHasNoTask(t *testing.T) {
	tasks, err := injector.NewTasks(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tasks.Task(schemas.Meta{Tenant: tenant, Conversation: "c"}, schemas.Detection{UserText: "x"}, "d"); err == nil {
		t.Error("a task was built for a detection without a turn number")
	}
}

func sum(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}

func TestInceptionOnlyForActivatedDetections(t *testing.T) {
	tools := injector.DefaultRecoveryTools
	cases := []struct {
		name string
		det  schemas.Detection
		want string // recovery tool, "" for no inception
	}{
		{"activated", schemas.Detection{Rein: true, ErrorType: "contradiction", Reasoning: "r"}, "ambiguity_report"},
		{"named tool wins", schemas.Detection{Rein: true, ErrorType: "anaphora", RecoveryTool: "custom_tool", Reasoning: "r"}, "custom_tool"},
		{"unknown type, ambiguous by default", schemas.Detection{Rein: true, ErrorType: "new_type", Reasoning: "r"}, "ambiguity_report"},
		{"no reasoning", schemas.Detection{Rein: true, ErrorType: "anaphora"}, ""},
		{"no error type", schemas.Detection{Rein: true, Reasoning: "r"}, ""},
		{"failed", schemas.Detection{Rein: true, ErrorType: "anaphora", Reasoning: "r", Failed: true}, ""},
		{"clear", schemas.Detection{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := injector.Inception(tc.det, tools)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("want none, got %+v", got)
			case tc.want != "" && (got == nil || got.RecoveryTool != tc.want || got.Thought != tc.det.Reasoning):
				t.Errorf("got %+v, want tool %s", got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  injector.SidecarConfig
		ok   bool
	}{
		{"defaults", injector.SidecarConfig{}, true},
		{"negative wait", injector.SidecarConfig{Wait: -time.Second}, false},
		{"empty tool", injector.SidecarConfig{RecoveryTools: map[string]string{"x": ""}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if _, err := injector.NewTasks(map[string]string{"": "x"}, nil, nil); !errors.Is(err, injector.ErrInvalidConfig) {
		t.Errorf("NewTasks with an empty error type: %v", err)
	}
}
