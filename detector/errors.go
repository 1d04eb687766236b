package detector

import "errors"

// Sentinel errors of the detector package. Callers test them with errors.Is.
var (
	// ErrInvalidConfig is returned by New given an unusable config.
	ErrInvalidConfig = errors.New("invalid detector config")
)
