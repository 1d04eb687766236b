package labels

import "errors"

// Sentinel errors; every error this package returns for a bad request
// wraps one.
var (
	// ErrBadLabel: the label does not fit the detection (a missed error on
	// a turn rein activated on, a wrong type that is the detected one, a
	// type missing) or names a bad tenant, conversation, turn or labeller.
	ErrBadLabel = errors.New("bad label")
	// ErrNoDetection: REIN_DETECTIONS holds no detection of the turn.
	ErrNoDetection = errors.New("no detection of the turn")
	// ErrDayNotOver: a day's review queue is drawn once the day is over.
	ErrDayNotOver = errors.New("the day is not over")
)
