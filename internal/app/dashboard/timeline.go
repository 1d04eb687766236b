package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Conversation is one conversation's timeline, as the conversation view
// shows it and /api/conversations/{tenant}/{conv} returns it.
type Conversation struct {
	Tenant       string  `json:"tenant"`
	Conversation string  `json:"conversation"`
	Turns        int     `json:"turns"`       // user turns seen
	Activations  int     `json:"activations"` // detections with rein=true
	Planted      int     `json:"planted"`     // tasks carrying an inception
	Escalated    bool    `json:"escalated"`
	Events       []Event `json:"events"` // in time order
	// Truncated names the streams whose events were cut at the limit.
	Truncated []string `json:"truncated,omitempty"`
	// Redacted says the free text was redacted (see Deps.Reveal).
	Redacted bool `json:"redacted,omitempty"`
}

// Event is one entry of the timeline.
type Event struct {
	Kind     string    `json:"kind"` // user-turn, agent-turn, detection, planted-thought, task, step, escalation, report
	Label    string    `json:"label"`
	Class    string    `json:"class"` // CSS classes beyond "event <kind>"
	ID       string    `json:"id"`
	Stream   string    `json:"stream"`
	Sequence uint64    `json:"sequence"`
	Time     time.Time `json:"time"`
	TimeText string    `json:"time_text"`
	Turn     int       `json:"turn"`
	Step     int       `json:"step,omitempty"`
	Text     string    `json:"text,omitempty"`
	Fields   []Field   `json:"fields,omitempty"`
	Injected bool      `json:"injected,omitempty"`
}

// Field is one labelled detail of an event.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Phase ranks break ties between events of one turn stored at the same
// instant: the pipeline order.
var phaseRank = map[string]int{
	"user-turn": 0, "detection": 1, "planted-thought": 2, "task": 2, "step": 3,
	"report": 4, "escalation": 4, "agent-turn": 5, "label": 6,
}

// conversationStreams are read for the timeline.
var conversationStreams = []string{bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps, bus.StreamOutcomes,
	bus.StreamLabels}

var errLimit = errors.New("limit reached")

// readConversation reads every event of one conversation from the five
// streams concurrently and orders them.
func readConversation(ctx context.Context, js jetstream.JetStream, tenant, conv string, limit int) (Conversation, error) {
	c := Conversation{Tenant: tenant, Conversation: conv}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, name := range conversationStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var evs []Event
			n := 0
			err := streams.ReadStream(ctx, js, name, streams.ReadOptions{Filters: bus.SubjectsFor(name, tenant, conv)}, func(r streams.Raw) error {
				if n >= limit {
					return errLimit
				}
				n++
				if r.Decoded != nil {
					evs = appendEvents(evs, r.Decoded)
				}
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errLimit):
				c.Truncated = append(c.Truncated, name)
			case err != nil:
				errs = append(errs, err)
			}
			c.Events = append(c.Events, evs...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("conversation %s/%s: %w", tenant, conv, err)
	}
	if len(c.Events) == 0 {
		return c, fmt.Errorf("%w: %s/%s", ErrNotFound, tenant, conv)
	}
	slices.Sort(c.Truncated)
	sortEvents(c.Events)
	for _, e := range c.Events {
		switch e.Kind {
		case "user-turn":
			c.Turns++
		case "planted-thought":
			c.Planted++
		case "escalation":
			c.Escalated = true
		case "detection":
			if e.Class == "activated" {
				c.Activations++
			}
		}
	}
	return c, nil
}

// sortEvents orders a timeline: by turn, then by time, then by pipeline
// phase, step number and stream sequence.
func sortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.Turn, b.Turn), a.Time.Compare(b.Time), cmp.Compare(phaseRank[a.Kind], phaseRank[b.Kind]),
			cmp.Compare(a.Step, b.Step), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Sequence, b.Sequence))
	})
}

// appendEvents appends d's timeline entry: one, or for a dev.rein.steps.v1
// the entries of the single steps it stands for (their ids, its stream
// sequence and time).
func appendEvents(evs []Event, d *streams.Decoded) []Event {
	if d.Event.Type() != schemas.TypeSteps {
		if e, ok := eventOf(d); ok {
			evs = append(evs, e)
		}
		return evs
	}
	var x schemas.Steps
	if schemas.Decode(d.Event, &x) != nil {
		return evs
	}
	for _, s := range x.Steps {
		e := Event{ID: schemas.StepEventID(d.Meta.Tenant, d.Meta.Conversation, s.Turn, s.Step), Time: d.Time(), Turn: d.Meta.Turn, Sequence: d.Sequence}
		e.TimeText = timeText(e.Time)
		stepEvent(&e, s)
		evs = append(evs, e)
	}
	return evs
}

// eventOf turns a decoded event into a timeline entry.
func eventOf(d *streams.Decoded) (Event, bool) {
	e := Event{ID: d.Event.ID(), Time: d.Time(), Turn: d.Meta.Turn, Sequence: d.Sequence}
	e.TimeText = timeText(e.Time)
	add := func(name, value string) {
		if value != "" {
			e.Fields = append(e.Fields, Field{Name: name, Value: value})
		}
	}
	switch d.Event.Type() {
	case schemas.TypeTurn:
		var t schemas.Turn
		if schemas.Decode(d.Event, &t) != nil {
			return e, false
		}
		e.Stream, e.Turn, e.Text = bus.StreamTurns, t.Turn, t.Text
		if t.Role == schemas.RoleUser {
			e.Kind, e.Label = "user-turn", "user"
		} else {
			e.Kind, e.Label = "agent-turn", "agent"
		}
	case schemas.TypeDetection:
		var x schemas.Detection
		if schemas.Decode(d.Event, &x) != nil {
			return e, false
		}
		e.Stream, e.Turn, e.Kind = bus.StreamDetections, x.Turn, "detection"
		switch {
		case x.Failed:
			e.Class, e.Label = "failed", "detection failed"
			e.Text = x.FailReason
		case x.Rein:
			e.Class, e.Label = "activated", "detection: "+x.ErrorType
			e.Text = x.Reasoning
		default:
			e.Class, e.Label = "clear", "detection: clear"
		}
		add("error type", x.ErrorType)
		add("category", x.Category)
		add("recovery tool", x.RecoveryTool)
		add("evidence", x.Evidence)
		add("module", x.Module)
		add("model", x.Model)
		add("model version", x.ModelVersion)
		add("latency", strconv.FormatFloat(x.LatencyMS, 'f', 0, 64)+" ms")
		if x.Tokens > 0 {
			add("tokens", strconv.Itoa(x.Tokens))
		}
		add("taxonomy", x.TaxonomyVersion)
	case schemas.TypeTask:
		var x schemas.Task
		if schemas.Decode(d.Event, &x) != nil {
			return e, false
		}
		e.Stream, e.Turn = bus.StreamTasks, x.Turn
		if x.Inception != nil {
			e.Kind, e.Label, e.Text = "planted-thought", "planted thought", x.Inception.Thought
			add("error type", x.Inception.ErrorType)
			add("recovery tool", x.Inception.RecoveryTool)
		} else {
			e.Kind, e.Label = "task", "task (no inception)"
		}
		add("detection", x.DetectionID)
	case schemas.TypeStep:
		var x schemas.Step
		if schemas.Decode(d.Event, &x) != nil {
			return e, false
		}
		stepEvent(&e, x)
	case schemas.TypeEscalation:
		var x schemas.Escalation
		if schemas.Decode(d.Event, &x) != nil {
			return e, false
		}
		e.Stream, e.Turn, e.Kind, e.Label, e.Text = bus.StreamOutcomes, x.Turn, "escalation", "escalation", x.Summary
		add("reason", x.Reason)
		add("error type", x.ErrorType)
		add("detection", x.DetectionID)
		add("thought", x.Thought)
	case schemas.TypeReport:
		var x schemas.Report
		if schemas.Decode(d.Event, &x) != nil {
			return e, false
		}
		e.Stream, e.Turn, e.Kind, e.Label, e.Text = bus.StreamOutcomes, x.Turn, "report", "ambiguity report", x.Report
		add("error type", x.ErrorType)
		add("detection", x.DetectionID)
	case schemas.TypeLabel:
		var x schemas.Label
		if schemas.Decode(d.Event, &x) != nil {
			return e, false
		}
		e.Stream = bus.StreamLabels
		labelEvent(&e, x)
	default:
		return e, false
	}
	return e, true
}

// stepEvent fills e from one step (a dev.rein.step.v1, or one of a
// dev.rein.steps.v1).
func stepEvent(e *Event, x schemas.Step) {
	e.Stream, e.Turn, e.Step, e.Kind, e.Injected = bus.StreamSteps, x.Turn, x.Step, "step", x.Injected
	e.Class = "step-" + x.Kind
	e.Label = "step " + strconv.Itoa(x.Step) + ": " + x.Kind
	if x.Name != "" && x.Name != x.Kind {
		e.Label += " " + x.Name
	}
	if x.Injected {
		e.Class += " injected"
		e.Label += " (injected)"
	}
	e.Text = x.Output
	if len(x.Arguments) > 0 && string(x.Arguments) != "null" {
		e.Fields = append(e.Fields, Field{Name: "arguments", Value: string(x.Arguments)})
	}
	if x.CallID != "" {
		e.Fields = append(e.Fields, Field{Name: "call id", Value: x.CallID})
	}
}
