package pipeline

import "errors"

// ErrUnknownStage is returned by Run for a stage this binary does not have.
var ErrUnknownStage = errors.New("unknown stage")
