package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// ExperimentConversations reads one tenant's experiment from the streams:
// each conversation's arm (its first detection's), whether rein would have
// acted, its outcomes and the platform's feedback. name "" takes the
// experiment of the tenant's latest detection (by event time) that has
// one, returned.
func ExperimentConversations(ctx context.Context, js jetstream.JetStream, tenant, name string) (string, []experiment.Conversation, error) {
	byID := map[string]*experiment.Conversation{}
	// activatedAt is each conversation's first activated turn.
	activatedAt := map[string]int{}
	latest, latestAt := "", time.Time{}
	read := func(stream string, fn func(conv string, r *Record) error) error {
		err := Read(ctx, js, Selection{Stream: stream, Tenant: tenant}, nil, func(r *Record) error {
			return fn(r.Attr(schemas.ExtConversation), r)
		})
		if err != nil && !streams.IsNotFound(err) {
			return fmt.Errorf("audit: experiment: read %s: %w", stream, err)
		}
		return nil
	}
	var dets []struct {
		conv string
		at   time.Time
		d    schemas.Detection
	}
	if err := read(bus.StreamDetections, func(conv string, r *Record) error {
		var d schemas.Detection
		if r.Type() != schemas.TypeDetection || json.Unmarshal(r.Data, &d) != nil {
			return nil
		}
		if d.Experiment != "" && !r.Time().Before(latestAt) {
			latest, latestAt = d.Experiment, r.Time()
		}
		d.UserText, d.Reasoning, d.Evidence = "", "", "" // not needed: keep memory small
		dets = append(dets, struct {
			conv string
			at   time.Time
			d    schemas.Detection
		}{conv, r.Time(), d})
		return nil
	}); err != nil {
		return "", nil, err
	}
	if name == "" {
		name = latest
	}
	if name == "" {
		return "", nil, fmt.Errorf("%w: tenant %s has no detection in an experiment", ErrBadSelection, tenant)
	}
	for _, x := range dets {
		c := byID[x.conv]
		if c == nil {
			if x.d.Experiment != name {
				continue // not in this experiment (from its first detection on)
			}
			c = &experiment.Conversation{ID: x.conv, Arm: x.d.Arm, Start: x.at, Feedback: map[string]bool{}}
			byID[x.conv] = c
		}
		c.UserTurns++
		if x.d.Rein && !x.d.Failed && !c.Activated {
			c.Activated, activatedAt[x.conv] = true, x.d.Turn
		}
	}
	if err := read(bus.StreamOutcomes, func(conv string, r *Record) error {
		c := byID[conv]
		if c == nil {
			return nil
		}
		switch r.Type() {
		case schemas.TypeEscalation:
			var e schemas.Escalation
			if json.Unmarshal(r.Data, &e) == nil && c.EscalationReason == "" {
				c.EscalationReason = e.Reason
				c.RecoveryTool = c.RecoveryTool || e.Reason == schemas.ReasonTransfer
			}
		case schemas.TypeReport:
			c.RecoveryTool = true
		case schemas.TypeUnanswered:
			c.Unanswered++
		}
		return nil
	}); err != nil {
		return "", nil, err
	}
	if err := read(bus.StreamSteps, func(conv string, r *Record) error {
		c := byID[conv]
		if c == nil || !c.Activated {
			return nil
		}
		steps := make([]schemas.Step, 1)
		if r.Type() == schemas.TypeSteps {
			if steps, _, _ = batchSteps(r.Data); steps == nil {
				return nil
			}
		} else if json.Unmarshal(r.Data, &steps[0]) != nil {
			return nil
		}
		for _, s := range steps {
			if s.Kind == schemas.StepToolCall && s.Turn >= activatedAt[conv] && changesState(s.Name) {
				c.StateChanges++
			}
		}
		return nil
	}); err != nil {
		return "", nil, err
	}
	if err := read(bus.StreamFeedback, func(conv string, r *Record) error {
		c := byID[conv]
		var f schemas.Feedback
		if c == nil || json.Unmarshal(r.Data, &f) != nil {
			return nil
		}
		if f.Kind == schemas.FeedbackSatisfaction {
			c.Satisfaction = f.Score
		} else {
			c.Feedback[f.Key()] = true
		}
		return nil
	}); err != nil {
		return "", nil, err
	}
	out := make([]experiment.Conversation, 0, len(byID))
	for _, c := range byID {
		out = append(out, *c)
	}
	return name, out, nil
}

// changesState tells a tool call that may change business data: not
// rein's recovery tools, think, or a read (by the τ-bench naming of
// reads: get_, find_, list_, search_, calculate).
func changesState(tool string) bool {
	switch tool {
	case schemas.ToolThink, schemas.ToolAmbiguityReport, schemas.ToolTransfer, "calculate":
		return false
	}
	for _, p := range []string{"get_", "find_", "list_", "search_"} {
		if strings.HasPrefix(tool, p) {
			return false
		}
	}
	return true
}
