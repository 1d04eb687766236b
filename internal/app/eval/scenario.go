package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Error types of the default taxonomy (inception/default_taxonomy.yaml) and the clean type.
// The names match the detector's taxonomy entries.
const (
	TypeAnaphora               = "anaphora"
	TypeMultipleInterpretation = "multiple_interpretation"
	TypeContradiction          = "contradiction"
	TypeUnsupportedAction      = "unsupported_action"
	TypeUnsupportedParameter   = "unsupported_parameter"
	TypeUnsupportedDomain      = "unsupported_domain"
	// TypeNone marks a clean scenario: the unmodified task, no opening.
	TypeNone = "none"
)

// Error categories.
const (
	CategoryAmbiguous   = "ambiguous"
	CategoryUnsupported = "unsupported"
	CategoryClean       = "clean"
)

// Follow-up styles of an opening's third utterance.
const (
	// StyleLazyFeedback: a vague complaint ("that's not what I meant").
	StyleLazyFeedback = "lazy_feedback"
	// StyleDoubleCheck: the user asks the agent to check again.
	StyleDoubleCheck = "double_check"
)

// Recovery tools the success criterion looks for.
const (
	ToolAmbiguityReport = "ambiguity_report"
	ToolTransferToHuman = "transfer_to_human_agents"
)

// ErrorTypes lists the six error types in taxonomy order.
var ErrorTypes = []string{
	TypeAnaphora, TypeMultipleInterpretation, TypeContradiction,
	TypeUnsupportedAction, TypeUnsupportedParameter, TypeUnsupportedDomain,
}

// Category returns the category of an error type ("clean" for none), or
// "" for a name that is not an error type.
func Category(errorType string) string {
	switch errorType {
	case TypeAnaphora, TypeMultipleInterpretation, TypeContradiction:
		return CategoryAmbiguous
	case TypeUnsupportedAction, TypeUnsupportedParameter, TypeUnsupportedDomain:
		return CategoryUnsupported
	case TypeNone:
		return CategoryClean
	}
	return ""
}

// PaperHeldOutTypes are the types the paper holds out of the module's
// prompt, the default of `rein eval run --held-out`.
var PaperHeldOutTypes = []string{TypeContradiction, TypeUnsupportedDomain}

// PaperHeldOut reports the held-out types of the paper's setting
// (contradiction and unsupported_domain), for callers without a taxonomy.
func PaperHeldOut(errorType string) bool {
	return errorType == TypeContradiction || errorType == TypeUnsupportedDomain
}

// Scenario is one evaluation case: a τ-bench task, the error planted in
// it and the opening that plants it. The task's instruction is not part of
// the scenario: the runner reads it from the τ-bench data directory.
type Scenario struct {
	// ID is unique within a set ([A-Za-z0-9_.-]).
	ID string `json:"id"`
	// Domain is "airline" or "retail".
	Domain string `json:"domain"`
	// Split is the τ-bench task file (tasks_<split>.json); "test" when empty.
	Split string `json:"split,omitempty"`
	// TaskID is the task's index in that file.
	TaskID int `json:"task_id"`
	// ErrorType is one of ErrorTypes, or "none" for a clean scenario.
	ErrorType string `json:"error_type"`
	// Seen is whether the taxonomy in use shows the type to the inception
	// module. Stored or derived at load time (LoadOptions.HeldOut); always
	// true for clean scenarios.
	Seen *bool `json:"seen,omitempty"`
	// Style is the follow-up style: lazy_feedback or double_check (empty
	// for clean scenarios).
	Style string `json:"style,omitempty"`
	// Opening is the three recorded utterances; absent for clean scenarios.
	Opening *Opening `json:"opening,omitempty"`
	// Note says, for a reader, why the task makes the opening plausible.
	Note string `json:"note,omitempty"`
}

// Opening is the start of an error scenario, published as recorded turns.
type Opening struct {
	// ErrorTurn is the user's turn carrying the error (user turn 1).
	ErrorTurn string `json:"error_turn"`
	// Mishandling is an agent reply that does not recover from it.
	Mishandling string `json:"mishandling"`
	// FollowUp is the user's next turn, in the scenario's style (user turn 2).
	FollowUp string `json:"follow_up"`
	// Evidence and Readings are what the opening was validated with (the
	// generator's checks): the words of the error turn that carry the
	// error, and what an ambiguous turn could mean or what an unsupported
	// one asks for that is out of reach. Optional; never published.
	Evidence []string `json:"evidence,omitempty"`
	Readings []string `json:"readings,omitempty"`
}

// ErrorTurnIndex is the user-turn index (1-based) of the opening's error
// turn: the first user turn of the conversation.
const ErrorTurnIndex = 1

// FollowUpTurnIndex is the user-turn index of the opening's follow-up: the
// paper plants once, here, after the recorded opening (error turn, the
// agent's mishandling, this follow-up) and before the agent's first own
// decision, with the module judging all three messages.
const FollowUpTurnIndex = 2

// PlantTurn is the user turn at which a fixed trigger judges s: the
// follow-up of an opening (the paper's protocol), or its error turn when
// atErrorTurn (the ablation); a clean scenario's first turn either way,
// since it has no recorded opening and the agent decides from turn 1.
func (s Scenario) PlantTurn(atErrorTurn bool) int {
	if s.Opening == nil || atErrorTurn {
		return ErrorTurnIndex
	}
	return FollowUpTurnIndex
}

// Category is the scenario's error category.
func (s Scenario) Category() string { return Category(s.ErrorType) }

// Clean reports whether the scenario is a clean one.
func (s Scenario) Clean() bool { return s.ErrorType == TypeNone }

// IsSeen is the seen flag (true when unset).
func (s Scenario) IsSeen() bool { return s.Seen == nil || *s.Seen }

// SeenKey is "seen", "unseen" or, for a clean scenario, "clean".
func (s Scenario) SeenKey() string {
	switch {
	case s.Clean():
		return CategoryClean
	case s.IsSeen():
		return "seen"
	}
	return "unseen"
}

// TaskSplit is the split, "test" by default.
func (s Scenario) TaskSplit() string {
	if s.Split == "" {
		return "test"
	}
	return s.Split
}

// LoadOptions tune LoadScenarios.
type LoadOptions struct {
	// HeldOut, when set, decides every error scenario's seen flag from the
	// taxonomy in use (seen = not held out), overriding a stored flag.
	// When nil, a stored flag is kept and a missing one means seen.
	HeldOut func(errorType string) bool
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// LoadScenarios reads a JSONL scenario set: one scenario per line; blank
// lines and lines starting with '#' are skipped. Errors wrap
// ErrInvalidScenario and read "line N: field F: problem".
func LoadScenarios(r io.Reader, opts LoadOptions) ([]Scenario, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var out []Scenario
	seenIDs := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 || raw[0] == '#' {
			continue
		}
		s, err := decodeScenario(raw)
		if err == nil {
			err = s.validate()
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrInvalidScenario, line, err)
		}
		if prev, dup := seenIDs[s.ID]; dup {
			return nil, fmt.Errorf("%w: line %d: field id: %q is already used on line %d", ErrInvalidScenario, line, s.ID, prev)
		}
		seenIDs[s.ID] = line
		switch {
		case s.Clean():
			t := true
			s.Seen = &t
		case opts.HeldOut != nil:
			v := !opts.HeldOut(s.ErrorType)
			s.Seen = &v
		case s.Seen == nil:
			t := true
			s.Seen = &t
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: after line %d: %w", ErrInvalidScenario, line, err)
	}
	return out, nil
}

// fieldError is a problem with one named field.
type fieldError struct {
	field, problem string
}

func (e *fieldError) Error() string { return "field " + e.field + ": " + e.problem }

func decodeScenario(raw []byte) (Scenario, error) {
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&s)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value on the line")
	}
	if err == nil {
		return s, nil
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return s, &fieldError{te.Field, fmt.Sprintf("is a JSON %s, want %s", te.Value, plainType(te.Type.Kind().String()))}
	case errors.As(err, &se):
		return s, fmt.Errorf("not valid JSON at byte %d: %w", se.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return s, errors.New("not valid JSON: the line ends before the object does")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return s, &fieldError{name, "is not a scenario field (fields: id, domain, split, task_id, error_type, seen, style, opening, note)"}
	}
	return s, fmt.Errorf("not a scenario object: %w", err)
}

func plainType(kind string) string {
	switch kind {
	case "int", "int64":
		return "a whole number"
	case "string":
		return "a string"
	case "bool", "ptr":
		return "true or false"
	case "struct":
		return "an object"
	}
	return kind
}

func (s Scenario) validate() error {
	if !idPattern.MatchString(s.ID) {
		return &fieldError{"id", fmt.Sprintf("%q must be 1 to 128 letters, digits, '_', '.' or '-'", s.ID)}
	}
	if s.Domain != "airline" && s.Domain != "retail" {
		return &fieldError{"domain", fmt.Sprintf("%q is not a domain (want airline or retail)", s.Domain)}
	}
	if s.Split != "" && !slices.Contains([]string{"test", "dev", "train"}, s.Split) {
		return &fieldError{"split", fmt.Sprintf("%q is not a τ-bench split (want test, dev or train)", s.Split)}
	}
	if s.TaskID < 0 {
		return &fieldError{"task_id", fmt.Sprintf("%d is negative", s.TaskID)}
	}
	if Category(s.ErrorType) == "" {
		return &fieldError{"error_type", fmt.Sprintf("%q is not an error type (want one of %s, or none)", s.ErrorType, strings.Join(ErrorTypes, ", "))}
	}
	if s.Clean() {
		if s.Opening != nil {
			return &fieldError{"opening", "a clean scenario (error_type none) has no opening"}
		}
		if s.Style != "" {
			return &fieldError{"style", "a clean scenario (error_type none) has no follow-up style"}
		}
		if s.Seen != nil && !*s.Seen {
			return &fieldError{"seen", "a clean scenario cannot be unseen"}
		}
		return nil
	}
	if s.Style != StyleLazyFeedback && s.Style != StyleDoubleCheck {
		return &fieldError{"style", fmt.Sprintf("%q is not a follow-up style (want lazy_feedback or double_check)", s.Style)}
	}
	if s.Opening == nil {
		return &fieldError{"opening", "is missing: an error scenario needs its three utterances"}
	}
	for _, f := range []struct{ name, text string }{
		{"opening.error_turn", s.Opening.ErrorTurn},
		{"opening.mishandling", s.Opening.Mishandling},
		{"opening.follow_up", s.Opening.FollowUp},
	} {
		if strings.TrimSpace(f.text) == "" {
			return &fieldError{f.name, "is empty"}
		}
	}
	return nil
}
