package detector

import (
	"context"
	"fmt"

	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// assign sets det's experiment and arm (Deps.Assign; none without it).
// A conversation keeps the arm of its first detection: every detection
// records the arm in force, so the conversation's last stored one, read
// once when its context is rebuilt, carries it (experiment.Sticky).
func (s *Stage) assign(ctx context.Context, c *conversation, meta schemas.Meta, det *schemas.Detection) error {
	if s.deps.Assign == nil {
		return nil
	}
	drawn := s.deps.Assign(meta.Tenant, meta.Conversation)
	if drawn.Experiment == "" {
		return nil // no experiment, or killed: treated
	}
	if !c.armRead {
		if meta.Turn > 1 {
			dets, err := s.stream(ctx, streams.StreamDetections)
			if err != nil {
				return err
			}
			last, found, err := streams.LastEvent(ctx, dets, streams.DetectionSubject(meta.Tenant, meta.Conversation))
			if err != nil {
				return fmt.Errorf("detector: read the conversation's arm: %w", err)
			}
			var prev schemas.Detection
			if found && last.Payload(&prev) == nil {
				c.arm = experiment.Assignment{Experiment: prev.Experiment, Arm: prev.Arm}
			}
		}
		c.armRead = true
	}
	c.arm = experiment.Sticky(c.arm, drawn)
	det.Experiment, det.Arm = c.arm.Experiment, c.arm.Arm
	s.m.arms.WithLabelValues(s.m.tenant(meta.Tenant), c.arm.Arm, decisionOutcome(*det)).Inc()
	return nil
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
