package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// Selection picks a range of one stream. Tenant and Conversation narrow by
// subject where the stream's subjects carry them (streams.SubjectsFor) and
// by the ce-tenant / ce-conversation headers elsewhere (dead letters,
// replay namespaces). Since and Until compare with the time the server
// stored each message; FromSeq and ToSeq are inclusive stream sequences.
type Selection struct {
	Stream       string
	Tenant       string
	Conversation string
	Since        time.Time
	Until        time.Time
	FromSeq      uint64
	ToSeq        uint64
	// Filters, when set, replace the subject filters derived from Tenant
	// and Conversation (which then no longer filter).
	Filters []string
}

// Validate checks ids and ranges.
func (s Selection) Validate() error {
	if s.Stream == "" {
		return fmt.Errorf("%w: no stream", ErrBadSelection)
	}
	if s.Tenant != "" && !schemas.ValidID(s.Tenant) {
		return fmt.Errorf("%w: tenant %q must match [A-Za-z0-9_-]{1,128}", ErrBadSelection, s.Tenant)
	}
	if s.Conversation != "" && !schemas.ValidID(s.Conversation) {
		return fmt.Errorf("%w: conversation %q must match [A-Za-z0-9_-]{1,128}", ErrBadSelection, s.Conversation)
	}
	if s.ToSeq > 0 && s.FromSeq > s.ToSeq {
		return fmt.Errorf("%w: --from-seq %d is after --to-seq %d", ErrBadSelection, s.FromSeq, s.ToSeq)
	}
	if !s.Since.IsZero() && !s.Until.IsZero() && s.Until.Before(s.Since) {
		return fmt.Errorf("%w: --until %s is before --since %s", ErrBadSelection, s.Until.Format(time.RFC3339), s.Since.Format(time.RFC3339))
	}
	return nil
}

// filters are the subject filters of the selection (nil: the whole stream,
// narrowed by headers).
func (s Selection) filters() []string {
	if len(s.Filters) > 0 {
		return s.Filters
	}
	if s.Tenant == "" && s.Conversation == "" {
		return nil
	}
	return bus.SubjectsFor(s.Stream, s.Tenant, s.Conversation)
}

// ParseTime reads an RFC3339 time or a duration before now ("24h", "90m",
// "7d" for days). The empty string is the zero time.
func ParseTime(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(v, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == d {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%w: %q is neither an RFC3339 time nor a duration like 24h", ErrBadSelection, v)
	}
	return now.Add(-d), nil
}
