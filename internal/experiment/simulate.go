package experiment

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/reinception/rein/schemas"
)

// The simulation is a statistical stand-in for live traffic, not a model
// of any real agent: each conversation is assigned by the real keyed
// draw, activated with a fixed probability, and its outcomes drawn from
// fixed rates. With an agent that follows planted plans, an activated
// conversation in treatment uses the recovery tool and is resolved more
// often (what rein's scripted agent does with a planted plan); with one
// that ignores plans, treatment behaves exactly as control. It proves the
// statistics: an effect is found, no effect is not claimed, and peeking
// does not inflate false positives.

// SimConfig configures one simulated experiment.
type SimConfig struct {
	Conversations int
	Holdout       float64
	// Activation is the share of conversations where rein would act.
	Activation float64
	// FollowsPlans: the agent acts on planted plans.
	FollowsPlans bool
	Seed         uint64
}

// Rates of the simulated outcomes.
const (
	simResolvedClean    = 0.75 // a conversation with no error
	simResolvedMissed   = 0.35 // an error the agent mishandles
	simResolvedRecover  = 0.55 // an error the agent recovers from, plan in hand
	simToolUnprompted   = 0.05 // recovery tool without a plan
	simToolPlanned      = 0.90 // recovery tool with a plan
	simEscalatedBase    = 0.06 // agent_unavailable or max_steps
	simSatisfactionSeen = 0.30 // conversations with a survey answer
)

// Simulate draws one experiment's conversations.
func Simulate(cfg SimConfig) []Conversation {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	key := []byte(fmt.Sprintf("simulation-key-%016x", cfg.Seed))
	t := Tenant{Name: "sim", Holdout: cfg.Holdout}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Conversation, 0, cfg.Conversations)
	for i := range cfg.Conversations {
		id := fmt.Sprintf("conv-%d", i)
		a := Assign(key, "sim", id, t)
		c := Conversation{ID: id, Arm: a.Arm, Start: start.Add(time.Duration(i) * time.Second), Feedback: map[string]bool{}}
		c.Activated = rng.Float64() < cfg.Activation
		planted := c.Activated && a.Arm == schemas.ArmTreatment && cfg.FollowsPlans
		resolved := simResolvedClean
		tool := 0.0
		switch {
		case planted:
			resolved, tool = simResolvedRecover, simToolPlanned
		case c.Activated:
			resolved, tool = simResolvedMissed, simToolUnprompted
		}
		c.RecoveryTool = rng.Float64() < tool
		if rng.Float64() < resolved {
			c.Feedback[schemas.FeedbackResolved] = true
		} else if rng.Float64() < 0.5 {
			c.Feedback[schemas.FeedbackAbandoned] = true
		}
		if rng.Float64() < simEscalatedBase {
			c.EscalationReason = schemas.ReasonAgentUnavailable
		}
		c.UserTurns = 2 + rng.IntN(5)
		if c.Activated && !planted {
			c.UserTurns += rng.IntN(3) // the user pushes back
		}
		if rng.Float64() < simSatisfactionSeen {
			c.Satisfaction = 2 + rng.IntN(3)
			if c.Feedback[schemas.FeedbackResolved] {
				c.Satisfaction++
			}
		}
		out = append(out, c)
	}
	return out
}

// PrimaryMetric is the outcome the simulation's figures are about: the
// resolution rate among activated conversations.
const PrimaryMetric = schemas.FeedbackResolved

// AA runs n simulated A/A experiments (an agent that ignores plans: no
// effect) and returns the share in which the sequential test on the
// primary metric rejected at some look, with every conversation a look.
func AA(n int, cfg SimConfig, opts Options) float64 {
	opts.defaults(cfg.Holdout)
	rejected := 0
	for i := range n {
		c := cfg
		c.Seed, c.FollowsPlans = cfg.Seed+uint64(i)+1, false
		s := NewSeq(opts.Alpha, opts.MinEffect)
		for _, conv := range Simulate(c) {
			if !conv.Activated {
				continue
			}
			s.Add(conv.Arm == schemas.ArmControl, yes(conv.Feedback[PrimaryMetric]))
			if s.P() <= opts.Alpha {
				rejected++
				break
			}
		}
	}
	return float64(rejected) / float64(n)
}
