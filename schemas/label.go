package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// TypeLabel is an operator's judgement of one detection.
const TypeLabel = "dev.rein.label.v1"

// Verdicts of a label.
const (
	// VerdictCorrect: the detection was right (an activation of the right
	// type, or a clear turn that was clear).
	VerdictCorrect = "correct"
	// VerdictFalseActivation: rein activated on a turn with no error.
	VerdictFalseActivation = "false_activation"
	// VerdictWrongType: rein activated, but the error is of another type
	// (Label.ErrorType).
	VerdictWrongType = "wrong_type"
	// VerdictMissedError: rein did not activate on a turn with an error
	// (of type Label.ErrorType).
	VerdictMissedError = "missed_error"
)

// StratumClean is the review-queue stratum of turns rein did not activate on.
const StratumClean = "clean"

// Label is the data of dev.rein.label.v1, stored on
// rein.labels.<tenant>.<conv>.<turn>.<labeller>: what a labeller says of
// the detection of one user turn. It carries what the detection decided, so
// quality can be measured from the labels alone, and, when the turn came
// from the review queue, the draw that chose it.
type Label struct {
	Turn    int    `json:"turn" jsonschema:"required,minimum=1,maximum=9007199254740991"`
	Verdict string `json:"verdict" jsonschema:"required,enum=correct,enum=false_activation,enum=wrong_type,enum=missed_error"`
	// ErrorType is the right type (wrong_type, missed_error).
	ErrorType string `json:"error_type,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]{0\\,63}$"`
	Labeller  string `json:"labeller" jsonschema:"required,pattern=^[A-Za-z0-9_-]{1\\,128}$"`
	Note      string `json:"note,omitempty" jsonschema:"maxLength=2048"`
	// DetectionID, Detected and DetectedType say what was judged.
	DetectionID  string `json:"detection_id" jsonschema:"required,minLength=1"`
	Detected     bool   `json:"detected" jsonschema:"required"`
	DetectedType string `json:"detected_type,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]{0\\,63}$"`
	Module       string `json:"module,omitempty" jsonschema:"maxLength=128"`
	Model        string `json:"model,omitempty" jsonschema:"maxLength=256"`
	ModelVersion string `json:"model_version,omitempty" jsonschema:"maxLength=256"`
	// Sample is the review queue's draw that chose the turn; absent for a
	// label given outside the queue, which no weighted figure counts.
	Sample *LabelSample `json:"sample,omitempty"`
}

// LabelSample is how the review queue chose a turn: its day's stratum,
// how many turns the stratum held, and the turn's inclusion probability.
type LabelSample struct {
	Day         string  `json:"day" jsonschema:"required,format=date"`
	Stratum     string  `json:"stratum" jsonschema:"required,pattern=^[a-z][a-z0-9_]{0\\,63}$"`
	Population  int     `json:"population" jsonschema:"required,minimum=1"`
	Probability float64 `json:"probability" jsonschema:"required,exclusiveMinimum=0,maximum=1"`
}

// LabelMsgID is a label's Nats-Msg-Id: derived from the turn, the labeller
// and what the label says, so the same label stored twice is one message,
// and a labeller who changes their mind stores a second one (the later
// wins).
func LabelMsgID(tenant, conversation string, turn int, l Label) string {
	h := sha256.New()
	for _, s := range []string{l.Verdict, l.ErrorType, l.Note} {
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
	}
	return EventID("label", tenant, conversation, turn) + "." + l.Labeller + "." + hex.EncodeToString(h.Sum(nil)[:8])
}
