package inception

import "errors"

// Sentinel errors of the inception package. Callers test them with errors.Is.
var (
	// ErrInvalidTaxonomy wraps every problem found while loading a taxonomy
	// file; the message names the field and the line.
	ErrInvalidTaxonomy = errors.New("invalid taxonomy")
	// ErrInvalidConfig is returned by constructors given an unusable config.
	ErrInvalidConfig = errors.New("invalid inception module config")
	// ErrInvalidInput is returned by Detect when the input has no user turn
	// to judge.
	ErrInvalidInput = errors.New("invalid detector input")
	// ErrModel wraps a model call that failed (transport error, timeout,
	// provider error). The stage fails open on it.
	ErrModel = errors.New("inception model call failed")
)
