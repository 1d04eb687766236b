package injector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Tasks builds the signed task of each detection's user turn. The
// detector calls it and stores the task in one batch with the detection.
type Tasks struct {
	tools map[string]string
	key   *schemas.TaskKey
	m     *metrics
}

// NewTasks builds tasks with tools added to DefaultRecoveryTools, signed
// with key (schemas.TaskKey; nil: unsigned), counting injections in reg.
func NewTasks(tools map[string]string, key *schemas.TaskKey, reg prometheus.Registerer) (*Tasks, error) {
	all, err := RecoveryTools(tools)
	if err != nil {
		return nil, err
	}
	return &Tasks{tools: all, key: key, m: newMetrics(reg)}, nil
}

// Task builds the task of one detection's user turn: the event to publish
// (deterministic id task.<tenant>.<conv>.<turn>, signed) and a func to call
// once it is stored, which counts the injection. meta is the detection's.
func (t *Tasks) Task(meta schemas.Meta, det schemas.Detection, detectionID string) (streams.Out, func(), error) {
	task := TaskFor(det, detectionID, meta.Turn, t.tools)
	if task.Turn < 1 {
		return streams.Out{}, nil, fmt.Errorf("injector: a detection without a turn number (data.turn or the turn extension, from 1)")
	}
	meta.Turn = task.Turn
	ev, err := schemas.BuildEvent(schemas.TypeTask, schemas.EventID("task", meta.Tenant, meta.Conversation, task.Turn), "", meta, task)
	if err != nil {
		return streams.Out{}, nil, fmt.Errorf("injector: build task: %w", err)
	}
	if t.key != nil {
		if err := t.key.Sign(&ev); err != nil {
			return streams.Out{}, nil, fmt.Errorf("injector: sign task: %w", err)
		}
	}
	stored := func() {}
	if task.Inception != nil {
		stored = func() { t.m.injected(task.Inception.ErrorType) }
	}
	return streams.Out{Stream: bus.StreamTasks, Subject: bus.TaskSubject(meta.Tenant, meta.Conversation), Event: &ev}, stored, nil
}
