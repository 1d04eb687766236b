package taubench

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// Step is one executed ground-truth action and its observation.
type Step struct {
	Name        string
	Observation string
	Skipped     bool // transfer_to_human_agents is not replayed
}

// ReplayGroundTruth runs a task's ground-truth actions on a fresh session
// (SPEC §8 step 2): failing actions just yield their error observation;
// transfer_to_human_agents is skipped.
func (d *Domain) ReplayGroundTruth(ctx context.Context, t Task) (*Session, []Step, error) {
	s := d.NewSession()
	steps := make([]Step, 0, len(t.Actions))
	for _, a := range t.Actions {
		if a.Name == "respond" {
			continue
		}
		if Terminal(a.Name) {
			steps = append(steps, Step{Name: a.Name, Skipped: true})
			continue
		}
		obs, err := Observe(ctx, s, a.Name, a.Kwargs)
		if err != nil {
			return nil, nil, fmt.Errorf("replay %s: %w", a.Name, err)
		}
		steps = append(steps, Step{Name: a.Name, Observation: obs})
	}
	return s, steps, nil
}

// RewardResult is the outcome of scoring one episode (SPEC §8).
type RewardResult struct {
	Reward     float64         `json:"reward"`
	RActions   float64         `json:"r_actions"`
	ROutputs   float64         `json:"r_outputs"`
	GTDataHash string          `json:"gt_data_hash"`
	DataHash   string          `json:"data_hash"`
	Outputs    map[string]bool `json:"outputs,omitempty"`
}

// Reward scores an episode: the agent's final state against the state of
// the ground-truth replay, and the task's outputs against the agent's
// texts to the user (respond texts only).
func (d *Domain) Reward(ctx context.Context, t Task, agent *Session, responses []string) (RewardResult, error) {
	expected, _, err := d.ReplayGroundTruth(ctx, t)
	if err != nil {
		return RewardResult{}, err
	}
	res := RewardResult{GTDataHash: expected.Fingerprint(), DataHash: agent.Fingerprint(), RActions: 1, ROutputs: 1}
	if res.GTDataHash != res.DataHash {
		res.RActions = 0
	}
	if len(t.Outputs) > 0 {
		res.Outputs = OutputsFound(t.Outputs, responses)
		for _, ok := range res.Outputs {
			if !ok {
				res.ROutputs = 0
			}
		}
	}
	res.Reward = res.RActions * res.ROutputs
	return res, nil
}

// OutputsFound applies τ-bench's outputs test: an output counts as said when
// its lower-cased text occurs in some response lower-cased with every comma
// removed.
func OutputsFound(outputs, responses []string) map[string]bool {
	norm := make([]string, len(responses))
	for i, r := range responses {
		norm[i] = strings.ReplaceAll(strings.ToLower(r), ",", "")
	}
	found := make(map[string]bool, len(outputs))
	for _, o := range outputs {
		lo := strings.ToLower(o)
		found[o] = false
		for _, r := range norm {
			if strings.Contains(r, lo) {
				found[o] = true
				break
			}
		}
	}
	return found
}

// PassHatK computes τ-bench's pass^k for k = 1..n from per-task success
// counts out of n trials each: the mean over tasks of C(c,k)/C(n,k).
// Element k-1 of the result is pass^k.
func PassHatK(successes []int, n int) []float64 {
	out := make([]float64, n)
	if len(successes) == 0 || n <= 0 {
		return out
	}
	for k := 1; k <= n; k++ {
		sum := 0.0
		for _, c := range successes {
			sum += binom(c, k) / binom(n, k)
		}
		out[k-1] = sum / float64(len(successes))
	}
	return out
}

// Success is τ-bench's success test for one run's reward.
func Success(reward float64) bool { return math.Abs(reward-1) < 1e-6 }

func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
