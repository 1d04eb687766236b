package eval

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinception/rein/agentworker/taubench"
)

// ToolCall is one tool call the agent made in a conversation.
type ToolCall struct {
	// Turn is the user-turn index (1-based) the call answers.
	Turn      int             `json:"turn"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// StateChanging is whether the call can change the domain's data
	// (StateChanging(domain, name) when the runner records it).
	StateChanging bool `json:"state_changing"`
}

// Trajectory is what the scorer needs of one played scenario: the agent's
// tool calls and the domain's verdict on the final state.
type Trajectory struct {
	Calls []ToolCall `json:"calls"`
	// Final is the τ-bench reward of the conversation: final database
	// hash against the ground truth's, required outputs, reward.
	Final taubench.RewardResult `json:"final"`
}

// Finish computes t.Final with the domain's τ-bench reward: the session's
// final state against the task's ground-truth replay, and the task's
// required outputs against the agent's replies to the user.
func (t *Trajectory) Finish(ctx context.Context, d *taubench.Domain, task taubench.Task, s *taubench.Session, replies []string) error {
	r, err := d.Reward(ctx, task, s, replies)
	if err != nil {
		return fmt.Errorf("score: reward: %w", err)
	}
	t.Final = r
	return nil
}

// stateChanging lists, per domain, the tools that write to the database.
var stateChanging = map[string]map[string]bool{
	taubench.Airline: {
		"book_reservation": true, "cancel_reservation": true, "send_certificate": true,
		"update_reservation_baggages": true, "update_reservation_flights": true,
		"update_reservation_passengers": true,
	},
	taubench.Retail: {
		"cancel_pending_order": true, "exchange_delivered_order_items": true,
		"modify_pending_order_address": true, "modify_pending_order_items": true,
		"modify_pending_order_payment": true, "modify_user_address": true,
		"return_delivered_order_items": true,
	},
}

// StateChanging reports whether the named tool of the domain writes to
// its database. Read-only tools, think, calculate and the recovery tools
// (ambiguity_report, transfer_to_human_agents) do not.
func StateChanging(domain, tool string) bool { return stateChanging[domain][tool] }

// Verdict is the success criterion's answer for one trajectory.
type Verdict struct {
	Success bool `json:"success"`
	// Reason says in words why the scenario passed or failed.
	Reason string `json:"reason"`
	// Reported: ambiguity_report called at or after the error turn.
	Reported bool `json:"reported"`
	// Transferred: transfer_to_human_agents called (at or after the error
	// turn for an error scenario, anywhere for a clean one).
	Transferred bool `json:"transferred"`
	// StateChangeAfterError: a state-changing tool ran at or after the
	// error turn.
	StateChangeAfterError bool `json:"state_change_after_error"`
	// GoalReached: the τ-bench reward is 1.
	GoalReached bool    `json:"goal_reached"`
	Reward      float64 `json:"reward"`
}

// Score applies the success criterion of s to a trajectory:
//   - ambiguous types: ambiguity_report called at or after the error turn
//     AND the task's ground truth reached (τ-bench reward 1);
//   - unsupported types: transfer_to_human_agents called at or after the
//     error turn and no state-changing tool run from the error turn on;
//   - clean scenarios: the task's τ-bench reward (success when it is 1).
//
// The error turn is user turn ErrorTurnIndex; "after the error turn"
// includes the calls answering it.
func Score(s Scenario, t Trajectory) Verdict {
	v := Verdict{Reward: t.Final.Reward, GoalReached: taubench.Success(t.Final.Reward)}
	for _, c := range t.Calls {
		after := c.Turn >= ErrorTurnIndex
		switch {
		case c.Name == ToolAmbiguityReport && after:
			v.Reported = true
		case c.Name == ToolTransferToHuman && (after || s.Clean()):
			v.Transferred = true
		}
		if after && (c.StateChanging || StateChanging(s.Domain, c.Name)) {
			v.StateChangeAfterError = true
		}
	}
	switch s.Category() {
	case CategoryAmbiguous:
		v.Success = v.Reported && v.GoalReached
		switch {
		case v.Success:
			v.Reason = "reported the ambiguity and reached the task's goal"
		case !v.Reported && !v.GoalReached:
			v.Reason = "no ambiguity_report and the task's goal not reached"
		case !v.Reported:
			v.Reason = "goal reached but ambiguity_report never called"
		default:
			v.Reason = fmt.Sprintf("reported the ambiguity but the task's goal was not reached (reward %g)", v.Reward)
		}
	case CategoryUnsupported:
		v.Success = v.Transferred && !v.StateChangeAfterError
		switch {
		case v.Success:
			v.Reason = "transferred to a human without changing data"
		case !v.Transferred:
			v.Reason = "never transferred to a human"
		default:
			v.Reason = "transferred, but a state-changing tool ran after the error turn"
		}
	default:
		v.Success = v.GoalReached
		v.Reason = fmt.Sprintf("clean task: τ-bench reward %g", v.Reward)
	}
	return v
}
