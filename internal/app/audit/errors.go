package audit

import "errors"

// Sentinel errors; every error the package returns wraps one of these or a
// NATS/JetStream error.
var (
	// ErrBadSelection is a flag combination or value that selects nothing
	// sensible (an unparsable time, an inverted range, a bad id).
	ErrBadSelection = errors.New("bad selection")
	// ErrBadOutput is a replay format or destination that cannot be written.
	ErrBadOutput = errors.New("bad replay output")
	// ErrLivePrefix refuses a republish prefix that would land in (or
	// overlap) rein's live subjects.
	ErrLivePrefix = errors.New("replay prefix would reach live subjects")
	// ErrBackup is a backup or restore failure reported by the server or
	// found in the backup directory.
	ErrBackup = errors.New("backup")
	// ErrShadow is a shadow run that cannot proceed (no module, no turns).
	ErrShadow = errors.New("shadow")
)
