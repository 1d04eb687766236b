package generate

import "errors"

// ErrInvalidConfig marks a generation that cannot start.
var ErrInvalidConfig = errors.New("invalid scenario generation config")
