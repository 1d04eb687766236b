package injector_test

import (
	"context"
	"encoding/json"
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
)

const tenant = "acme"

func startStage(t *testing.T, h *rtest.JS, cfg injector.Config, reg prometheus.Registerer) func() {
	t.Helper()
	st, err := injector.New(cfg, injector.Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := rtest.Run(t, "stage", st.Run)
	if cfg.Sidecar {
		rtest.CheckFor(t, 5*time.Second, "sidecar responder up", func() bool {
			_, err := h.Conn.Request(streams.InceptionSubject(tenant, "probe", "x"), nil, time.Second)
			return err == nil
		})
	}
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
	if _, err := streams.NewPublisher(h.JS, nil).Publish(context.Background(), streams.StreamDetections, streams.DetectionSubject(tenant, conv), &ev); err != nil {
		t.Fatal(err)
	}
}

// tasks reads REIN_TASKS by event id.
func tasks(t *testing.T, h *rtest.JS) map[string]schemas.Task {
	t.Helper()
	out := map[string]schemas.Task{}
	err := streams.ReadStream(context.Background(), h.JS, streams.StreamTasks, streams.ReadOptions{}, func(r streams.Raw) error {
		if r.Decoded == nil {
			t.Fatalf("undecodable task at %d", r.Sequence)
		}
		var task schemas.Task
		if err := json.Unmarshal(r.Decoded.Event.Data(), &task); err != nil {
			return err
		}
		if _, dup := out[r.Decoded.Event.ID()]; dup {
			t.Errorf("task %s stored twice", r.Decoded.Event.ID())
		}
		out[r.Decoded.Event.ID()] = task
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStagePublishesOneTaskPerDetection(t *testing.T) {
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
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	startStage(t, h, injector.Config{}, reg)
	convOf := func(i int) string { return "c" + string(rune('a'+i)) }
	for i, tc := range cases {
		publishDetection(t, h, convOf(i), tc.det, "")
	}
	rtest.CheckFor(t, 10*time.Second, "one task per detection", func() bool { return len(tasks(t, h)) == len(cases) })
	got := tasks(t, h)
	wantInjections := 0
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := schemas.EventID("task", tenant, convOf(i), 1)
			task, ok := got[id]
			if !ok {
				t.Fatalf("no task %s", id)
			}
			if task.Turn != 1 || task.UserText != tc.det.UserText || task.DetectionID != schemas.EventID("detection", tenant, convOf(i), 1) {
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
	if n := h.StreamMsgs(t, streams.StreamDLQ); n != 0 {
		t.Errorf("DLQ = %d", n)
	}
}

func TestRedeliveredDetectionsProduceNoSecondTask(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	stop := startStage(t, h, injector.Config{}, nil)
	det := schemas.Detection{Turn: 3, UserText: "cancel that one", Rein: true, ErrorType: "anaphora", Reasoning: "ask which"}
	publishDetection(t, h, "r1", det, "")
	rtest.CheckFor(t, 10*time.Second, "first task", func() bool { return len(tasks(t, h)) == 1 })

	// A second copy of the detection (e.g. re-published by a restarted
	// detector after the dedupe window) reaches the injector again.
	publishDetection(t, h, "r1", det, "-again")
	// And the whole stream is redelivered: the durable consumer is lost
	// and a new stage instance reads every detection from the start.
	stop()
	if err := h.JS.DeleteConsumer(context.Background(), streams.StreamDetections, streams.DurableInjector); err != nil {
		t.Fatal(err)
	}
	startStage(t, h, injector.Config{}, nil)
	h.WaitAcked(t, 10*time.Second, streams.StreamDetections, streams.DurableInjector, 2) // both copies
	if n := h.StreamMsgs(t, streams.StreamTasks); n != 1 {
		t.Errorf("tasks stored = %d, want 1", n)
	}
	if task := tasks(t, h)[schemas.EventID("task", tenant, "r1", 3)]; task.Inception == nil || task.Turn != 3 {
		t.Errorf("task = %+v", task)
	}
}

// A detection without a turn number (a foreign publisher's: the detector
// numbers every detection from its user turn) is dead-lettered, not turned
// into a task of turn 0.
func TestADetectionWithoutATurnNumberIsDeadLettered(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	startStage(t, h, injector.Config{}, nil)
	publishDetection(t, h, "unnumbered", schemas.Detection{UserText: "cancel that one"}, "")
	publishDetection(t, h, "unnumbered", schemas.Detection{Turn: 1, UserText: "cancel that one"}, "")
	h.WaitAcked(t, 10*time.Second, streams.StreamDetections, streams.DurableInjector, 2)
	if got := tasks(t, h); len(got) != 1 {
		t.Errorf("tasks %v, want turn 1's only", got)
	}
	if n := h.StreamMsgs(t, streams.StreamDLQ); n != 1 {
		t.Errorf("dead letters = %d, want 1", n)
	}
}

// TestOldDetectionsAreRecheckedAgainstStoredTasks covers a durable that
// reads REIN_DETECTIONS from its start long after the tasks were stored (the
// stages ran fused before, or the durable was recreated): the duplicate
// window no longer holds those tasks' ids, so the stored tasks answer.
func TestOldDetectionsAreRecheckedAgainstStoredTasks(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	pub := streams.NewPublisher(h.JS, nil)
	// Tasks stored long ago: published under other message ids, as if their
	// own had left the duplicate window.
	storeTask := func(conv string, turn int) {
		ev, err := schemas.NewEvent(schemas.TypeTask, schemas.EventID("task", tenant, conv, turn)+"-long-ago", "",
			schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}, schemas.Task{Turn: turn, UserText: "earlier", DetectionID: "d"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, streams.StreamTasks, streams.TaskSubject(tenant, conv), &ev); err != nil {
			t.Fatal(err)
		}
	}
	storeTask("done", 3)   // this turn's task exists
	storeTask("behind", 2) // only an earlier turn's
	publishOld := func(conv string, turn int) {
		det := schemas.Detection{Turn: turn, UserText: "hello", Module: "rules", TaxonomyVersion: "test-1"}
		ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", tenant, conv, turn), "",
			schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}, det)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, streams.StreamDetections, streams.DetectionSubject(tenant, conv), &ev); err != nil {
			t.Fatal(err)
		}
	}
	publishOld("done", 3)
	publishOld("behind", 3)
	publishOld("new", 1)
	// Every detection counts as old: stored over a nanosecond ago.
	startStage(t, h, injector.Config{RecheckAfter: time.Nanosecond}, nil)
	h.WaitAcked(t, 10*time.Second, streams.StreamDetections, streams.DurableInjector, 3) // the three detections
	got := tasks(t, h)
	if len(got) != 4 {
		t.Errorf("tasks stored = %d, want the 2 old ones and 2 new: %v", len(got), got)
	}
	if _, dup := got[schemas.EventID("task", tenant, "done", 3)]; dup {
		t.Error("a second task for a turn whose task was already stored")
	}
	for _, conv := range []string{"behind", "new"} {
		turn := map[string]int{"behind": 3, "new": 1}[conv]
		if _, ok := got[schemas.EventID("task", tenant, conv, turn)]; !ok {
			t.Errorf("no task for %s turn %d", conv, turn)
		}
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
		cfg  injector.Config
		ok   bool
	}{
		{"defaults", injector.Config{}, true},
		{"too many workers", injector.Config{Workers: 5000}, false},
		{"negative wait", injector.Config{SidecarWait: -time.Second}, false},
		{"empty tool", injector.Config{RecoveryTools: map[string]string{"x": ""}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
