package run

import "errors"

// Sentinel errors of the runner.
var (
	// ErrInvalidConfig marks a Config that cannot run.
	ErrInvalidConfig = errors.New("invalid eval run config")
	// ErrRunDir marks a run directory that cannot be used or resumed.
	ErrRunDir = errors.New("run directory")
	// ErrEmptyUserTurn: the user simulator answered nothing.
	ErrEmptyUserTurn = errors.New("empty user turn")
	// ErrPlay marks a scenario that could not be played to its end.
	ErrPlay = errors.New("play failed")
)
