package eval

import "errors"

// Sentinel errors of the evaluation harness.
var (
	// ErrInvalidScenario marks a scenario line that cannot be used; the
	// message names the line and the field.
	ErrInvalidScenario = errors.New("invalid scenario")
	// ErrUnknownTask marks a scenario naming a τ-bench task the data
	// directory does not hold.
	ErrUnknownTask = errors.New("unknown τ-bench task")
	// ErrInvalidResults marks a result set the report cannot be built from.
	ErrInvalidResults = errors.New("invalid results")
)
