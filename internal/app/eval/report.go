package eval

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// Condition names.
const (
	ConditionNone       = "none"
	ConditionRein       = "rein"
	ConditionNPI        = "npi"
	ConditionSelfRefine = "self-refine"
)

// Conditions lists the conditions in report order.
var Conditions = []string{ConditionNone, ConditionRein, ConditionNPI, ConditionSelfRefine}

// Result is one played scenario of one condition in one trial: what the
// runner records and the report is built from.
type Result struct {
	Condition  string `json:"condition"`
	ScenarioID string `json:"scenario_id"`
	Domain     string `json:"domain"`
	ErrorType  string `json:"error_type"`
	Seen       bool   `json:"seen"`
	// Trial numbers a scenario's plays in a condition, 1..k.
	Trial   int  `json:"trial"`
	Success bool `json:"success"`
	// Activated: the inception module activated at the error turn (error
	// scenarios); DetectedType is the type it named.
	Activated    bool   `json:"activated"`
	DetectedType string `json:"detected_type,omitempty"`
	// UserTurns is the number of user turns of the conversation.
	UserTurns int `json:"user_turns"`
	// FalseActivations counts the user turns of a clean scenario on which
	// the module activated.
	FalseActivations int `json:"false_activations"`
	// Transferred: transfer_to_human_agents was called (on a clean
	// scenario, an over-deferral).
	Transferred bool `json:"transferred"`
	// Tokens spent by the agent's, the inception module's and the user
	// simulator's model calls (a call whose response reports no usage is
	// counted with the runner's estimate, see run.EstimateUsage).
	AgentTokens     int `json:"agent_tokens"`
	InceptionTokens int `json:"inception_tokens"`
	UserTokens      int `json:"user_tokens"`
	// Latencies in milliseconds: the agent's model time per agent turn,
	// the inception module's per judged user turn, and rein's own added
	// time per user turn (detection to task, excluding model time).
	AgentLatencyMs     []float64 `json:"agent_latency_ms,omitempty"`
	InceptionLatencyMs []float64 `json:"inception_latency_ms,omitempty"`
	ReinLatencyMs      []float64 `json:"rein_latency_ms,omitempty"`
}

// NewResult starts the result of playing s under condition in trial from
// its verdict; the runner adds activation, turns, tokens and latencies.
func NewResult(condition string, s Scenario, trial int, v Verdict) Result {
	return Result{
		Condition: condition, ScenarioID: s.ID, Domain: s.Domain, ErrorType: s.ErrorType,
		Seen: s.IsSeen(), Trial: trial, Success: v.Success, Transferred: v.Transferred,
	}
}

func (r Result) clean() bool { return r.ErrorType == TypeNone }

func (r Result) seenKey() string {
	switch {
	case r.clean():
		return CategoryClean
	case r.Seen:
		return "seen"
	}
	return "unseen"
}

// Metrics are the figures of one condition over one slice of scenarios.
// Rates are null when the slice has nothing to measure them on.
type Metrics struct {
	Scenarios int `json:"scenarios"`
	Results   int `json:"results"`
	// PassAt1 is the mean over scenarios of their success fraction, with
	// its bootstrap interval over scenarios.
	PassAt1 Interval `json:"pass_at_1"`
	// PassHatK is τ-bench's pass^k for k = 1..trials, keyed by k.
	PassHatK map[string]float64 `json:"pass_hat_k"`
	// ActivationRate: error-scenario plays with an activation at the error
	// turn; ExactTypeRate: those where the detected type was the planted one.
	ActivationRate *float64 `json:"activation_rate"`
	ExactTypeRate  *float64 `json:"exact_type_rate"`
	// FalseActivationRate: activations per user turn of clean scenarios.
	FalseActivationRate *float64 `json:"false_activation_rate"`
	// OverDeferralRate: clean-scenario plays that transferred to a human.
	OverDeferralRate *float64       `json:"over_deferral_rate"`
	TokensPerTurn    TokensPerTurn  `json:"tokens_per_turn"`
	LatencyMsP50     LatencyFigures `json:"latency_ms_p50"`
	// McNemarP is McNemar's p against rein on the plays both conditions
	// made of the same scenario and trial (absent for rein itself);
	// McNemar has the counts and the method behind it.
	McNemarP *float64     `json:"mcnemar_p,omitempty"`
	McNemar  *McNemarJSON `json:"mcnemar,omitempty"`
	// Kappa is Cohen's κ between trials (mean over pairs of trials), null
	// when undefined.
	Kappa *float64 `json:"kappa"`
}

// TokensPerTurn is model tokens per user turn.
type TokensPerTurn struct {
	Agent     float64 `json:"agent"`
	Inception float64 `json:"inception"`
	// User is the user simulator's, the cost of the harness itself.
	User float64 `json:"user"`
}

// LatencyFigures are median latencies in milliseconds.
type LatencyFigures struct {
	Agent     float64 `json:"agent"`
	Inception float64 `json:"inception"`
	Rein      float64 `json:"rein"`
}

// McNemarJSON is McNemar's test as reported: Only is the count of pairs
// where only this condition succeeded, OnlyRein where only rein did.
type McNemarJSON struct {
	Only     int     `json:"only_this"`
	OnlyRein int     `json:"only_rein"`
	Method   string  `json:"method"`
	Chi2     float64 `json:"chi2,omitempty"`
}

// ConditionReport is one condition's figures overall and broken down by
// error type (clean scenarios under "none"), domain and seen status
// ("seen", "unseen", and "clean").
type ConditionReport struct {
	Metrics
	ByErrorType map[string]*Metrics `json:"by_error_type"`
	ByDomain    map[string]*Metrics `json:"by_domain"`
	BySeen      map[string]*Metrics `json:"by_seen"`
}

// BootstrapInfo documents how the intervals were drawn.
type BootstrapInfo struct {
	Resamples int     `json:"resamples"`
	Seed      uint64  `json:"seed"`
	Level     float64 `json:"level"`
	Method    string  `json:"method"`
}

// RunReport is report.json.
type RunReport struct {
	Trials     int                         `json:"trials"`
	Scenarios  int                         `json:"scenarios"`
	Bootstrap  BootstrapInfo               `json:"bootstrap"`
	Note       string                      `json:"note,omitempty"`
	Conditions map[string]*ConditionReport `json:"conditions"`
}

// ReportOptions tune Report.
type ReportOptions struct {
	// Resamples and Seed of the bootstrap (BootstrapResamples and
	// BootstrapSeed when zero).
	Resamples int
	Seed      uint64
	// Note is printed in report.md and stored in report.json (e.g. that
	// scripted figures measure the harness, not a model).
	Note string
}

// ConditionNames returns the report's conditions: the known ones in
// Conditions order, then any others sorted.
func (r *RunReport) ConditionNames() []string {
	var out []string
	for _, c := range Conditions {
		if r.Conditions[c] != nil {
			out = append(out, c)
		}
	}
	var rest []string
	for c := range r.Conditions {
		if !slices.Contains(Conditions, c) {
			rest = append(rest, c)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

type playKey struct {
	scenario string
	trial    int
}

// Report computes report.json's figures from a run's results. Every
// condition must have played every scenario it played the same number of
// times k (trials 1..k, each once), and a scenario's domain, type and seen
// flag must agree across its results.
func Report(results []Result, opts ReportOptions) (*RunReport, error) {
	if opts.Resamples == 0 {
		opts.Resamples = BootstrapResamples
	}
	if opts.Seed == 0 {
		opts.Seed = BootstrapSeed
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: no results", ErrInvalidResults)
	}
	byCond := map[string][]Result{}
	meta := map[string]Result{}
	for i, r := range results {
		if r.Condition == "" || r.ScenarioID == "" || r.Trial < 1 || Category(r.ErrorType) == "" {
			return nil, fmt.Errorf("%w: result %d: needs a condition, a scenario id, a trial from 1 and a known error type", ErrInvalidResults, i+1)
		}
		if m, ok := meta[r.ScenarioID]; ok && (m.Domain != r.Domain || m.ErrorType != r.ErrorType || m.Seen != r.Seen) {
			return nil, fmt.Errorf("%w: scenario %s: results disagree on its domain, type or seen flag", ErrInvalidResults, r.ScenarioID)
		}
		meta[r.ScenarioID] = r
		byCond[r.Condition] = append(byCond[r.Condition], r)
	}
	trials := 0
	for cond, rs := range byCond {
		k, err := checkTrials(cond, rs)
		if err != nil {
			return nil, err
		}
		if trials != 0 && k != trials {
			return nil, fmt.Errorf("%w: condition %s played %d trials, another %d", ErrInvalidResults, cond, k, trials)
		}
		trials = k
	}
	rep := &RunReport{
		Trials: trials, Scenarios: len(meta), Note: opts.Note,
		Bootstrap:  BootstrapInfo{Resamples: opts.Resamples, Seed: opts.Seed, Level: BootstrapLevel, Method: "percentile bootstrap over scenarios"},
		Conditions: map[string]*ConditionReport{},
	}
	rein := byCond[ConditionRein]
	slices_ := []struct {
		key func(Result) string
		set func(*ConditionReport) *map[string]*Metrics
	}{
		{func(r Result) string { return r.ErrorType }, func(c *ConditionReport) *map[string]*Metrics { return &c.ByErrorType }},
		{func(r Result) string { return r.Domain }, func(c *ConditionReport) *map[string]*Metrics { return &c.ByDomain }},
		{Result.seenKey, func(c *ConditionReport) *map[string]*Metrics { return &c.BySeen }},
	}
	for cond, rs := range byCond {
		var against []Result
		if cond != ConditionRein {
			against = rein
		}
		cr := &ConditionReport{Metrics: metrics(rs, against, trials, opts)}
		for _, sl := range slices_ {
			groups := map[string][]Result{}
			for _, r := range rs {
				groups[sl.key(r)] = append(groups[sl.key(r)], r)
			}
			out := map[string]*Metrics{}
			for g, grs := range groups {
				var ag []Result
				for _, r := range against {
					if sl.key(r) == g {
						ag = append(ag, r)
					}
				}
				m := metrics(grs, ag, trials, opts)
				out[g] = &m
			}
			*sl.set(cr) = out
		}
		rep.Conditions[cond] = cr
	}
	return rep, nil
}

// checkTrials returns k when every scenario of rs was played in trials
// 1..k exactly once.
func checkTrials(cond string, rs []Result) (int, error) {
	plays := map[string][]int{}
	for _, r := range rs {
		plays[r.ScenarioID] = append(plays[r.ScenarioID], r.Trial)
	}
	k := 0
	for id, ts := range plays {
		slices.Sort(ts)
		for i, t := range ts {
			if t != i+1 {
				return 0, fmt.Errorf("%w: condition %s, scenario %s: trials %v, want 1..%d once each", ErrInvalidResults, cond, id, ts, len(ts))
			}
		}
		if k != 0 && len(ts) != k {
			return 0, fmt.Errorf("%w: condition %s: scenario %s played %d times, others %d", ErrInvalidResults, cond, id, len(ts), k)
		}
		k = len(ts)
	}
	return k, nil
}

func metrics(rs, rein []Result, trials int, opts ReportOptions) Metrics {
	// Per-scenario outcomes, in trial order; scenarios sorted by id.
	outcomes := map[string][]bool{}
	for _, r := range rs {
		o := outcomes[r.ScenarioID]
		if o == nil {
			o = make([]bool, trials)
		}
		o[r.Trial-1] = r.Success
		outcomes[r.ScenarioID] = o
	}
	ids := make([]string, 0, len(outcomes))
	for id := range outcomes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	m := Metrics{Scenarios: len(ids), Results: len(rs), PassHatK: map[string]float64{}}
	fractions := make([]float64, len(ids))
	counts := make([]int, len(ids))
	byTrial := make([][]bool, trials)
	for i, id := range ids {
		for t, ok := range outcomes[id] {
			if ok {
				counts[i]++
			}
			byTrial[t] = append(byTrial[t], ok)
		}
		fractions[i] = float64(counts[i]) / float64(trials)
	}
	m.PassAt1 = BootstrapMean(fractions, opts.Resamples, opts.Seed)
	for k := 1; k <= trials; k++ {
		if v, err := PassHatK(counts, trials, k); err == nil {
			m.PassHatK[strconv.Itoa(k)] = v
		}
	}
	if k, ok := TrialKappa(byTrial); ok {
		m.Kappa = &k
	}

	var errPlays, activated, exact, cleanPlays, cleanTurns, falseAct, transfers, turns, agentTok, incTok, userTok int
	var agentLat, incLat, reinLat []float64
	for _, r := range rs {
		turns += r.UserTurns
		agentTok += r.AgentTokens
		incTok += r.InceptionTokens
		userTok += r.UserTokens
		agentLat = append(agentLat, r.AgentLatencyMs...)
		incLat = append(incLat, r.InceptionLatencyMs...)
		reinLat = append(reinLat, r.ReinLatencyMs...)
		if r.clean() {
			cleanPlays++
			cleanTurns += r.UserTurns
			falseAct += r.FalseActivations
			if r.Transferred {
				transfers++
			}
			continue
		}
		errPlays++
		if r.Activated {
			activated++
			if r.DetectedType == r.ErrorType {
				exact++
			}
		}
	}
	m.ActivationRate = ratio(activated, errPlays)
	m.ExactTypeRate = ratio(exact, errPlays)
	m.FalseActivationRate = ratio(falseAct, cleanTurns)
	m.OverDeferralRate = ratio(transfers, cleanPlays)
	if turns > 0 {
		m.TokensPerTurn = TokensPerTurn{Agent: float64(agentTok) / float64(turns), Inception: float64(incTok) / float64(turns),
			User: float64(userTok) / float64(turns)}
	}
	m.LatencyMsP50 = LatencyFigures{Agent: median(agentLat), Inception: median(incLat), Rein: median(reinLat)}

	if rein != nil {
		reinOut := map[playKey]bool{}
		for _, r := range rein {
			reinOut[playKey{r.ScenarioID, r.Trial}] = r.Success
		}
		var mine, theirs []bool
		for _, r := range slices.SortedFunc(slices.Values(rs), func(a, b Result) int {
			return cmp.Or(cmp.Compare(a.ScenarioID, b.ScenarioID), cmp.Compare(a.Trial, b.Trial))
		}) {
			if ok, paired := reinOut[playKey{r.ScenarioID, r.Trial}]; paired {
				mine, theirs = append(mine, r.Success), append(theirs, ok)
			}
		}
		if len(mine) > 0 {
			t, _ := McNemarPaired(mine, theirs) // equal lengths by construction
			m.McNemarP = &t.P
			m.McNemar = &McNemarJSON{Only: t.B, OnlyRein: t.C, Method: t.Method, Chi2: t.Statistic}
		}
	}
	return m
}

func ratio(num, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := float64(num) / float64(den)
	return &v
}

// median of xs (interpolated between the middle two of an even count);
// 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantile(s, 0.5)
}
