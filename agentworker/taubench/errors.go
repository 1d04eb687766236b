package taubench

import "errors"

// Sentinel errors of the package. Tool failures are *ToolError values that
// match ErrTool (and ErrUnknownTool for names the domain does not offer).
var (
	// ErrTool marks a failed tool call; the error text is the exact
	// τ-bench observation string (e.g. "Error: user not found").
	ErrTool = errors.New("tool error")
	// ErrUnknownTool marks a call to a tool the domain does not have.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUnknownDomain is returned for a domain name other than airline or retail.
	ErrUnknownDomain = errors.New("unknown domain")
	// ErrBadData is returned when a data, task, oracle or overlay file cannot be parsed.
	ErrBadData = errors.New("bad domain data")
	// ErrBaseMismatch is returned when an overlay is restored onto a different base database.
	ErrBaseMismatch = errors.New("overlay does not belong to this database")
	// ErrNoData is returned by Check when the directory holds no domain data.
	ErrNoData = errors.New("no τ-bench data found")
	// ErrNoSplit is returned when a task split does not exist.
	ErrNoSplit = errors.New("no such task split")
)

// ToolError is the error a tool call returns when the tool fails. Its
// message is exactly the observation τ-bench would show the agent.
type ToolError struct {
	Msg     string
	unknown bool
}

func (e *ToolError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrTool) true for every tool error and
// errors.Is(err, ErrUnknownTool) true for calls to a missing tool.
func (e *ToolError) Is(target error) bool {
	return target == ErrTool || (e.unknown && target == ErrUnknownTool)
}

func toolErr(msg string) error { return &ToolError{Msg: "Error: " + msg} }
