package schemas

import (
	"fmt"
	"strconv"
)

// MaxIDLen is the longest tenant or conversation id rein accepts.
const MaxIDLen = 128

// ValidID reports whether s is a NATS-token-safe identifier: [A-Za-z0-9_-]{1,128}.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// CheckIDs returns an *AttrError wrapping ErrBadID naming the bad
// attribute, or nil.
func CheckIDs(tenant, conversation string) error {
	if !ValidID(tenant) {
		return &AttrError{Attr: ExtTenant, Err: fmt.Errorf("%w: tenant %q must match [A-Za-z0-9_-]{1,128}", ErrBadID, clip(tenant))}
	}
	if !ValidID(conversation) {
		return &AttrError{Attr: ExtConversation, Err: fmt.Errorf("%w: conversation %q must match [A-Za-z0-9_-]{1,128}", ErrBadID, clip(conversation))}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// EventID is the deterministic id of a stage's output for one turn:
// <stage>.<tenant>.<conv>.<turn>. Publishing with it as Nats-Msg-Id makes
// redelivery idempotent. The separator is outside the id alphabet, so two
// tenants' ids never meet: with "-" (the alphabet's own character),
// tenant "a-b" conversation "c" and tenant "a" conversation "b-c" shared
// every id, and one tenant could choose conversation ids that made the
// stream drop another's outputs as duplicates.
func EventID(stage, tenant, conversation string, turn int) string {
	return stage + "." + tenant + "." + conversation + "." + strconv.Itoa(turn)
}

// StepEventID is the deterministic id of one agent step.
func StepEventID(tenant, conversation string, turn, step int) string {
	return EventID("step", tenant, conversation, turn) + "." + strconv.Itoa(step)
}

// StepsEventID is the deterministic id of a turn's steps in one event.
func StepsEventID(tenant, conversation string, turn int) string {
	return EventID("steps", tenant, conversation, turn)
}

// TurnMsgID is the Nats-Msg-Id of a turn published from outside rein
// (HTTP ingress, rein publish): derived from what identifies the turn,
// never the caller's event id, so one caller's id can never suppress
// another's turn. The caller's id stays in the event for correlation.
func TurnMsgID(tenant, conversation string, turn int, role string) string {
	return EventID("turn", tenant, conversation, turn) + "." + role
}
