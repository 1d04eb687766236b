package detector

import (
	"context"
	"fmt"

	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// armOf is the conversation's experiment arm for this turn (Deps.Assign;
// none without it, or when killed: treated). A conversation keeps the arm
// of its first detection: every detection records the arm in force, so
// the conversation's last stored one, read once when its context is
// rebuilt, carries it (experiment.Sticky).
func (s *Stage) armOf(ctx context.Context, c *conversation, meta schemas.Meta) (experiment.Assignment, error) {
	if s.deps.Assign == nil {
		return experiment.Assignment{}, nil
	}
	drawn := s.deps.Assign(meta.Tenant, meta.Conversation)
	if drawn.Experiment == "" {
		return experiment.Assignment{}, nil // no experiment, or killed: treated
	}
	if !c.armRead {
		if meta.Turn > 1 {
			dets, err := s.stream(ctx, bus.StreamDetections)
			if err != nil {
				return experiment.Assignment{}, err
			}
			last, found, err := streams.LastEvent(ctx, dets, bus.DetectionSubject(meta.Tenant, meta.Conversation))
			if err != nil {
				return experiment.Assignment{}, fmt.Errorf("detector: read the conversation's arm: %w", err)
			}
			var prev schemas.Detection
			if found && last.Payload(&prev) == nil {
				c.arm = experiment.Assignment{Experiment: prev.Experiment, Arm: prev.Arm}
			}
		}
		c.armRead = true
	}
	c.arm = experiment.Sticky(c.arm, drawn)
	return c.arm, nil
}

// assign records the arm on det and counts the decision per arm.
func (s *Stage) assign(meta schemas.Meta, arm experiment.Assignment, det *schemas.Detection) {
	if arm.Experiment == "" {
		return
	}
	det.Experiment, det.Arm = arm.Experiment, arm.Arm
	s.m.arms.WithLabelValues(s.m.tenant(meta.Tenant), arm.Arm, decisionOutcome(*det)).Inc()
}

// decisionOutcome is the outcome label of a detection.
func decisionOutcome(det schemas.Detection) string {
	switch {
	case det.Failed:
		return "failed"
	case det.Rein:
		return "activated"
	}
	return "clear"
}
