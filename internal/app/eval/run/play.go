package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/schemas"
)

// TurnRecord is what happened at one user turn of a play.
type TurnRecord struct {
	Turn      int       `json:"turn"`
	User      string    `json:"user"`
	Detection Detection `json:"detection"`
	Injected  bool      `json:"injected"`
	Calls     []Call    `json:"calls,omitempty"`
	Reply     string    `json:"reply,omitempty"`
	// Escalation is the reason the turn handed the conversation to a
	// human, if it did.
	Escalation string  `json:"escalation,omitempty"`
	ReinMs     float64 `json:"rein_ms"`
	AgentMs    float64 `json:"agent_ms"`
}

// Play is the full record of one played scenario: plays/<condition>/<scenario>.t<trial>.json.
type Play struct {
	Condition    string          `json:"condition"`
	ScenarioID   string          `json:"scenario_id"`
	Trial        int             `json:"trial"`
	Conversation string          `json:"conversation"`
	Turns        []TurnRecord    `json:"turns"`
	Ended        string          `json:"ended"`
	Trajectory   eval.Trajectory `json:"trajectory"`
	Verdict      eval.Verdict    `json:"verdict"`
	Result       eval.Result     `json:"result"`
}

// Ways a conversation ends.
const (
	EndedUser     = "user_stopped"
	EndedHuman    = "handed_to_human"
	EndedMaxTurns = "max_turns"
	EndedNoReply  = "no_reply"
)

// conversationID names a play's conversation: the scenario id and the
// trial, NATS-token safe ([A-Za-z0-9_-], at most 128). An id with a '.'
// or too long for that gets a short hash of itself, so that two scenario
// ids never share a conversation.
func conversationID(scenario string, trial int) string {
	id := strings.ReplaceAll(scenario, ".", "_")
	if id != scenario || len(id) > 100 {
		sum := sha256.Sum256([]byte(scenario))
		id = id[:min(len(id), 100)] + "-" + hex.EncodeToString(sum[:4])
	}
	return id + "-t" + strconv.Itoa(trial)
}

// player plays scenarios on one pipeline.
type player struct {
	pipe     Pipeline
	tap      *tap
	user     userSim
	domain   *taubench.Domain
	maxTurns int
	// atErrorTurn: the planting point is the error turn (PlantErrorTurn).
	atErrorTurn bool
}

// play plays scenario s once: the opening's recorded turns (error turn,
// mishandling reply, follow-up), then the user simulator until it stops,
// the conversation goes to a human, or maxTurns user turns; then scores it.
func (p *player) play(ctx context.Context, condition string, s eval.Scenario, task taubench.Task, trial int, turnTimeout time.Duration) (*Play, error) {
	pl := &Play{Condition: condition, ScenarioID: s.ID, Trial: trial, Conversation: conversationID(s.ID, trial)}
	var lines []Line
	userTokens := 0
	next := func(turn int) (string, bool, error) {
		if s.Opening != nil {
			switch turn {
			case 1:
				return s.Opening.ErrorTurn, false, nil
			case 2:
				return s.Opening.FollowUp, false, nil
			}
		}
		text, stop, u, err := p.user.next(ctx, task.Instruction, lines)
		userTokens += u.Total()
		return text, stop, err
	}
	first, stop, err := next(1)
	if err != nil {
		return nil, err
	}
	if stop {
		return nil, fmt.Errorf("%w: %s: the user simulator ended the conversation before its first turn", ErrPlay, s.ID)
	}
	cv, end, err := p.tap.begin(ctx, first, s, task)
	if err != nil {
		return nil, err
	}
	defer end()
	text := first
	pl.Ended = EndedMaxTurns
	var replies []string
	for turn := 1; turn <= p.maxTurns; turn++ {
		if turn > 1 {
			if text, stop, err = next(turn); err != nil {
				return nil, err
			}
			if stop {
				pl.Ended = EndedUser
				break
			}
		}
		tctx, cancel := context.WithTimeout(ctx, turnTimeout)
		out, err := p.pipe.Turn(tctx, pl.Conversation, turn, text)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: %s trial %d turn %d: %w", ErrPlay, s.ID, trial, turn, err)
		}
		tr := TurnRecord{Turn: turn, User: text, Detection: out.Detection, Injected: out.Injected, Calls: out.Calls,
			Reply: out.Reply, ReinMs: eval.Ms(out.ReinLatency)}
		if out.Escalated {
			tr.Escalation = out.EscalationReason
		}
		pl.Turns = append(pl.Turns, tr)
		lines = append(lines, Line{Role: "user", Text: text})
		for _, c := range out.Calls {
			pl.Trajectory.Calls = append(pl.Trajectory.Calls, eval.ToolCall{Turn: turn, Name: c.Name, Arguments: c.Arguments,
				StateChanging: eval.StateChanging(s.Domain, c.Name)})
		}
		if out.Replied {
			replies = append(replies, out.Reply)
			lines = append(lines, Line{Role: "agent", Text: out.Reply})
		}
		if out.Escalated {
			pl.Ended = EndedHuman
			break
		}
		if !out.Replied {
			pl.Ended = EndedNoReply
			break
		}
	}
	if err := p.score(ctx, pl, s, task, replies); err != nil {
		return nil, err
	}
	p.measure(pl, cv)
	pl.Result.UserTokens = userTokens
	return pl, nil
}

// score rebuilds the conversation's final database by running its tool
// calls, in order, on a fresh session of the domain (the tools are
// deterministic, so this is the state the agent worker left), and applies
// the success criterion.
func (p *player) score(ctx context.Context, pl *Play, s eval.Scenario, task taubench.Task, replies []string) error {
	sess := p.domain.NewSession()
	for _, c := range pl.Trajectory.Calls {
		if c.Name == schemas.ToolAmbiguityReport || taubench.Terminal(c.Name) {
			continue
		}
		if _, err := taubench.Observe(ctx, sess, c.Name, c.Arguments); err != nil {
			return fmt.Errorf("%w: %s: replaying %s: %w", ErrPlay, s.ID, c.Name, err)
		}
	}
	if err := pl.Trajectory.Finish(ctx, p.domain, task, sess, replies); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPlay, s.ID, err)
	}
	pl.Verdict = eval.Score(s, pl.Trajectory)
	return nil
}

// measure fills the play's Result: activation at the planting point, the
// turns of every activation (credited when an error scenario's planted type
// was named, false otherwise), judged and fallback turns, tokens and
// latencies.
func (p *player) measure(pl *Play, cv *conv) {
	s := cv.scenario
	r := eval.NewResult(pl.Condition, s, pl.Trial, pl.Verdict)
	r.UserTurns = len(pl.Turns)
	r.PlantTurn = s.PlantTurn(p.atErrorTurn)
	r.ActivationTurns = []int{}
	cv.mu.Lock()
	r.AgentTokens = cv.agentTokens
	for i := range pl.Turns {
		t := &pl.Turns[i]
		if d, ok := cv.agentTime[t.Turn]; ok {
			t.AgentMs = eval.Ms(d)
			r.AgentLatencyMs = append(r.AgentLatencyMs, t.AgentMs)
		}
	}
	cv.mu.Unlock()
	for _, t := range pl.Turns {
		d := t.Detection
		r.InceptionTokens += d.Tokens
		if d.Module != (silentModule{}).Name() && d.Model != notJudged {
			r.InceptionLatencyMs = append(r.InceptionLatencyMs, d.LatencyMs)
			r.JudgedTurns++
		}
		if d.Model == inception.FallbackModel {
			r.FallbackTurns++
		}
		r.ReinLatencyMs = append(r.ReinLatencyMs, t.ReinMs)
		if !d.Rein {
			continue
		}
		r.ActivationTurns = append(r.ActivationTurns, t.Turn)
		r.ActivationTypes = append(r.ActivationTypes, d.ErrorType)
		if s.Clean() || d.ErrorType != s.ErrorType {
			r.FalseActivations++
		} else {
			r.CreditedActivations++
		}
		if !s.Clean() && t.Turn == r.PlantTurn {
			r.Activated, r.DetectedType = true, d.ErrorType
		}
	}
	pl.Result = r
}
