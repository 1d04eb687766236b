package detector

import "errors"

// Sentinel errors of the detector package. Callers test them with errors.Is.
var (
	// ErrInvalidConfig is returned by New given an unusable config.
	ErrInvalidConfig = errors.New("invalid detector config")
	// ErrModulePanic: the inception module panicked on a turn; the turn
	// fails open (its detection says failed, with this reason).
	ErrModulePanic = errors.New("inception module panicked")
)
