package eval

import (
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
	// ConditionReinNoTool is an ablation, played only when asked for: rein
	// with the agent's recovery tools withheld, so the planted plan has no
	// tool to act on.
	ConditionReinNoTool = "rein-no-tool"
)

// Conditions lists the conditions in report order (the default set).
var Conditions = []string{ConditionNone, ConditionRein, ConditionNPI, ConditionSelfRefine}

// Ablations are the conditions a run plays only when they are named.
var Ablations = []string{ConditionReinNoTool}

// Result is one played scenario of one condition in one trial: what the
// runner records and the report is built from.
type Result struct {
	Condition  string `json:"condition"`
	ScenarioID string `json:"scenario_id"`
	// TaskID is the τ-bench task's index (in the scenario's split): the
	// cluster the bootstrap resamples.
	TaskID int    `json:"task_id"`
	Domain string `json:"domain"`
	// ErrorType is the planted type, "" for a clean scenario (results of
	// older runs say "none", read as clean too).
	ErrorType string `json:"error_type"`
	Seen      bool   `json:"seen"`
	// Trial numbers a scenario's plays in a condition, 1..k.
	Trial   int  `json:"trial"`
	Success bool `json:"success"`
	// Activated: the inception module activated at the planting point
	// (error scenarios; eval.Scenario.PlantTurn); DetectedType is the
	// type it named.
	Activated    bool   `json:"activated"`
	DetectedType string `json:"detected_type,omitempty"`
	// PlantTurn is the user turn the fixed trigger judges (the opening's
	// follow-up, or the error turn under --plant-at error-turn).
	PlantTurn int `json:"plant_turn,omitempty"`
	// ActivationTurns lists the user turns at which the module activated,
	// ActivationTypes the type it named at each.
	ActivationTurns []int    `json:"activation_turns"`
	ActivationTypes []string `json:"activation_types,omitempty"`
	// JudgedTurns counts the user turns the module judged (a fixed
	// trigger judges one; conditions without rein none).
	JudgedTurns int `json:"judged_turns"`
	// UserTurns is the number of user turns of the conversation.
	UserTurns int `json:"user_turns"`
	// FalseActivations counts activations that were wrong: every one on a
	// clean scenario, and on an error scenario those naming another type
	// than the planted one. CreditedActivations counts an error
	// scenario's activations naming the planted type, at any turn.
	FalseActivations    int `json:"false_activations"`
	CreditedActivations int `json:"credited_activations"`
	// FallbackTurns counts decisions the cascade made with its rules
	// fallback because the inception model could not judge.
	FallbackTurns int `json:"fallback_turns"`
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
	et := s.ErrorType
	if s.Clean() {
		et = ""
	}
	return Result{
		Condition: condition, ScenarioID: s.ID, TaskID: s.TaskID, Domain: s.Domain, ErrorType: et,
		Seen: s.IsSeen(), Trial: trial, Success: v.Success, Transferred: v.Transferred,
	}
}

func (r Result) clean() bool { return r.ErrorType == "" || r.ErrorType == TypeNone }

// categorySeen is the headline slice of an error scenario:
// "ambiguous/seen", "unsupported/unseen", ….
func (r Result) categorySeen() string { return Category(r.ErrorType) + "/" + r.seenKey() }

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
	// Tasks counts the τ-bench tasks the scenarios were played on (the
	// clusters of the bootstrap).
	Tasks int `json:"tasks"`
	// PassAt1 is the mean over scenarios of their success fraction, with
	// its interval (Interval.Method says which).
	PassAt1 Interval `json:"pass_at_1"`
	// DeltaVsNone is PassAt1 minus none's on the same scenarios, with its
	// paired cluster-bootstrap interval (absent for none, or without it).
	DeltaVsNone *Interval `json:"delta_vs_none,omitempty"`
	// PassHatK is τ-bench's pass^k for k = 1..trials, keyed by k.
	PassHatK map[string]float64 `json:"pass_hat_k"`
	// ActivationRate: error-scenario plays with an activation at the
	// planting point; ExactTypeRate: those where the detected type was the
	// planted one.
	ActivationRate *float64 `json:"activation_rate"`
	ExactTypeRate  *float64 `json:"exact_type_rate"`
	// ActivationPrecision: activations naming the planted type (credited)
	// over all activations, clean scenarios' included; ActivationRecall:
	// error-scenario plays where the module named the planted type at some
	// turn.
	ActivationPrecision *float64 `json:"activation_precision"`
	ActivationRecall    *float64 `json:"activation_recall"`
	// FalseActivationRate: false activations (on a clean scenario any, on
	// an error scenario one naming another type) per judged user turn.
	FalseActivationRate *float64 `json:"false_activation_rate"`
	// JudgedTurns counts the user turns the module judged.
	JudgedTurns int `json:"judged_turns"`
	// OverDeferralRate: clean-scenario plays that transferred to a human.
	OverDeferralRate *float64 `json:"over_deferral_rate"`
	// Fallbacks counts decisions the cascade took with its rules fallback
	// because the inception model could not judge.
	Fallbacks     int            `json:"fallback_decisions"`
	TokensPerTurn TokensPerTurn  `json:"tokens_per_turn"`
	LatencyMsP50  LatencyFigures `json:"latency_ms_p50"`
	LatencyMsP95  LatencyFigures `json:"latency_ms_p95"`
	// TokensPerSuccess is every model token of the slice (agent,
	// inception, user simulator) over its successful plays: what one
	// recovered conversation costs (null with no success).
	TokensPerSuccess *float64 `json:"tokens_per_success"`
	// McNemarP is McNemar's p against none on one outcome per scenario
	// (ScenarioOutcome), absent for none itself; McNemar has the counts
	// and the method behind it.
	McNemarP *float64     `json:"mcnemar_p,omitempty"`
	McNemar  *McNemarJSON `json:"mcnemar,omitempty"`
	// Kappa is Fleiss' κ over the trials (each trial a rater of every
	// scenario), null when undefined; RunVsRun is McNemar's test between
	// trial 1 and trial 2 (null with one trial).
	Kappa    *float64     `json:"kappa"`
	RunVsRun *McNemarJSON `json:"run_vs_run,omitempty"`
}

// TokensPerTurn is model tokens per user turn.
type TokensPerTurn struct {
	Agent     float64 `json:"agent"`
	Inception float64 `json:"inception"`
	// User is the user simulator's, the cost of the harness itself.
	User float64 `json:"user"`
}

// LatencyFigures are latencies in milliseconds.
type LatencyFigures struct {
	Agent     float64 `json:"agent"`
	Inception float64 `json:"inception"`
	Rein      float64 `json:"rein"`
}

// McNemarJSON is McNemar's test as reported: Only is the count of
// scenarios where only this condition succeeded, Other where only the
// other did (none; for RunVsRun, trial 2).
type McNemarJSON struct {
	Only   int     `json:"only_this"`
	Other  int     `json:"only_other"`
	P      float64 `json:"p"`
	Method string  `json:"method"`
	Chi2   float64 `json:"chi2,omitempty"`
}

// CleanFigures are one condition's figures on the clean scenarios,
// reported apart from the headline.
type CleanFigures struct {
	Scenarios int      `json:"scenarios"`
	PassAt1   Interval `json:"pass_at_1"`
	// Broke counts the conversations rein broke: clean scenarios solved
	// without inception (none's majority outcome) and failed under this
	// condition; BrokeIDs names them.
	Broke    int      `json:"broke"`
	BrokeIDs []string `json:"broke_ids,omitempty"`
	// FalseActivationRate: activations per judged user turn of clean
	// scenarios.
	FalseActivationRate *float64 `json:"false_activation_rate"`
	JudgedTurns         int      `json:"judged_turns"`
	OverDeferralRate    *float64 `json:"over_deferral_rate"`
	// Fallbacks counts the clean plays' decisions the cascade's rules took
	// because the inception model could not judge.
	Fallbacks int `json:"fallback_decisions"`
}

// ConditionReport is one condition's figures. Its Metrics (the headline)
// are over the error scenarios only, broken down by error type, domain,
// seen status and category × seen ("ambiguous/seen", …); the clean
// scenarios are in Clean.
type ConditionReport struct {
	Metrics
	ByErrorType    map[string]*Metrics `json:"by_error_type"`
	ByDomain       map[string]*Metrics `json:"by_domain"`
	BySeen         map[string]*Metrics `json:"by_seen"`
	ByCategorySeen map[string]*Metrics `json:"by_category_seen"`
	Clean          *CleanFigures       `json:"clean,omitempty"`
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
	// Tests counts the McNemar tests in the report; MultipleTests warns
	// that with many of them some small p-values come by chance.
	Tests         int    `json:"mcnemar_tests"`
	MultipleTests string `json:"multiple_tests,omitempty"`
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
		if r.Condition == "" || r.ScenarioID == "" || r.Trial < 1 || !r.clean() && Category(r.ErrorType) == "" {
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
		Bootstrap: BootstrapInfo{Resamples: opts.Resamples, Seed: opts.Seed, Level: BootstrapLevel,
			Method: fmt.Sprintf("cluster bootstrap over τ-bench tasks (percentile); Wilson score interval for Pass@1 when a slice has fewer than %d scenarios or the bootstrap interval is empty", SmallSlice)},
		Conditions: map[string]*ConditionReport{},
	}
	none := byCond[ConditionNone]
	slices_ := []struct {
		key func(Result) string
		set func(*ConditionReport) *map[string]*Metrics
	}{
		{func(r Result) string { return r.ErrorType }, func(c *ConditionReport) *map[string]*Metrics { return &c.ByErrorType }},
		{func(r Result) string { return r.Domain }, func(c *ConditionReport) *map[string]*Metrics { return &c.ByDomain }},
		{Result.seenKey, func(c *ConditionReport) *map[string]*Metrics { return &c.BySeen }},
		{Result.categorySeen, func(c *ConditionReport) *map[string]*Metrics { return &c.ByCategorySeen }},
	}
	for cond, all := range byCond {
		var against []Result
		if cond != ConditionNone {
			against = none
		}
		rs, clean := splitClean(all)
		cr := &ConditionReport{Metrics: metrics(rs, errorsOnly(against), trials, opts)}
		if cr.McNemar != nil {
			rep.Tests++
		}
		for _, sl := range slices_ {
			groups := map[string][]Result{}
			for _, r := range rs {
				groups[sl.key(r)] = append(groups[sl.key(r)], r)
			}
			out := map[string]*Metrics{}
			for g, grs := range groups {
				var ag []Result
				for _, r := range against {
					if !r.clean() && sl.key(r) == g {
						ag = append(ag, r)
					}
				}
				m := metrics(grs, ag, trials, opts)
				if m.McNemar != nil {
					rep.Tests++
				}
				out[g] = &m
			}
			*sl.set(cr) = out
		}
		if len(clean) > 0 {
			cr.Clean = cleanFigures(clean, cleanOnly(against), trials)
		}
		rep.Conditions[cond] = cr
	}
	if rep.Tests > 1 {
		rep.MultipleTests = fmt.Sprintf("%d McNemar tests in this report (each condition against none, overall and per slice): at α = 0.05 about %.1f would come out significant by chance alone; read slice p-values as exploratory, or compare them with the Bonferroni threshold %.2g.",
			rep.Tests, 0.05*float64(rep.Tests), 0.05/float64(rep.Tests))
	}
	return rep, nil
}

// SmallSlice is the number of scenarios under which Pass@1's interval is
// Wilson's rather than the bootstrap's.
const SmallSlice = 30

func splitClean(rs []Result) (errs, clean []Result) {
	for _, r := range rs {
		if r.clean() {
			clean = append(clean, r)
		} else {
			errs = append(errs, r)
		}
	}
	return errs, clean
}

func errorsOnly(rs []Result) []Result { e, _ := splitClean(rs); return e }
func cleanOnly(rs []Result) []Result  { _, c := splitClean(rs); return c }

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

// scenarioOutcomes gathers each scenario's trial outcomes (in trial
// order) and its task cluster; ids sorted.
type scenarioOutcomes struct {
	ids     []string
	byID    map[string][]bool
	cluster map[string]string
}

func outcomesOf(rs []Result, trials int) scenarioOutcomes {
	so := scenarioOutcomes{byID: map[string][]bool{}, cluster: map[string]string{}}
	for _, r := range rs {
		o := so.byID[r.ScenarioID]
		if o == nil {
			o = make([]bool, trials)
			so.ids = append(so.ids, r.ScenarioID)
		}
		o[r.Trial-1] = r.Success
		so.byID[r.ScenarioID] = o
		so.cluster[r.ScenarioID] = r.Domain + "/" + strconv.Itoa(r.TaskID)
	}
	slices.Sort(so.ids)
	return so
}

func (so scenarioOutcomes) successes(id string) int {
	n := 0
	for _, ok := range so.byID[id] {
		if ok {
			n++
		}
	}
	return n
}

func (so scenarioOutcomes) fraction(id string) float64 {
	return float64(so.successes(id)) / float64(len(so.byID[id]))
}

// clusters groups per-scenario values by task, clusters in name order.
func (so scenarioOutcomes) clusters(value func(id string) (float64, bool)) []Cluster {
	byTask := map[string]Cluster{}
	for _, id := range so.ids {
		if v, ok := value(id); ok {
			k := so.cluster[id]
			byTask[k] = append(byTask[k], v)
		}
	}
	keys := make([]string, 0, len(byTask))
	for k := range byTask {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Cluster, len(keys))
	for i, k := range keys {
		out[i] = byTask[k]
	}
	return out
}

// passInterval is Pass@1 over the scenarios with its interval: the
// cluster bootstrap over tasks, or Wilson's over the scenarios when the
// slice is small or the bootstrap interval has no width.
func passInterval(so scenarioOutcomes, opts ReportOptions) Interval {
	cl := so.clusters(func(id string) (float64, bool) { return so.fraction(id), true })
	iv := ClusterBootstrapMean(cl, opts.Resamples, opts.Seed)
	iv.Method = MethodClusterBootstrap
	if len(so.ids) < SmallSlice || iv.High-iv.Low <= 0 {
		iv = Wilson(iv.Value, len(so.ids))
		iv.Method = MethodWilson
	}
	return iv
}

// Interval methods.
const (
	MethodClusterBootstrap = "cluster_bootstrap"
	MethodWilson           = "wilson"
	// MethodDiscordanceBound: ±(Wilson upper bound of the share of
	// scenarios whose outcome differs between the two conditions), since
	// |Δ| can be no larger than that share.
	MethodDiscordanceBound = "discordance_bound"
)

// deltaInterval is the paired cluster bootstrap of the per-scenario
// differences cl; when it has no width (no scenario differs, or all differ
// alike) it is replaced by the discordance bound, so no interval of zero
// width is printed as if the data had pinned Δ down.
func deltaInterval(cl []Cluster, opts ReportOptions) Interval {
	d := ClusterBootstrapMean(cl, opts.Resamples, opts.Seed)
	d.Method = MethodClusterBootstrap
	if d.High-d.Low > 0 {
		return d
	}
	n, differ := 0, 0
	for _, c := range cl {
		for _, v := range c {
			n++
			if v != 0 {
				differ++
			}
		}
	}
	u := Wilson(float64(differ)/float64(max(n, 1)), n).High
	return Interval{Value: d.Value, Low: max(-1, min(d.Value, -u)), High: min(1, max(d.Value, u)), Method: MethodDiscordanceBound}
}

func metrics(rs, base []Result, trials int, opts ReportOptions) Metrics {
	so := outcomesOf(rs, trials)
	m := Metrics{Scenarios: len(so.ids), Results: len(rs), PassHatK: map[string]float64{}}
	tasks := map[string]bool{}
	counts := make([]int, len(so.ids))
	for i, id := range so.ids {
		counts[i] = so.successes(id)
		tasks[so.cluster[id]] = true
	}
	m.Tasks = len(tasks)
	if len(so.ids) > 0 {
		m.PassAt1 = passInterval(so, opts)
	}
	for k := 1; k <= trials; k++ {
		if v, err := PassHatK(counts, trials, k); err == nil {
			m.PassHatK[strconv.Itoa(k)] = v
		}
	}
	if k, ok := FleissKappa(counts, trials); ok {
		m.Kappa = &k
	}
	if trials >= 2 {
		var t1, t2 []bool
		for _, id := range so.ids {
			t1, t2 = append(t1, so.byID[id][0]), append(t2, so.byID[id][1])
		}
		t, _ := McNemarPaired(t1, t2)
		m.RunVsRun = mcnemarJSON(t)
	}

	var errPlays, activated, exact, recalled, credited, falseAct, allAct, judged, cleanPlays, transfers int
	var turns, agentTok, incTok, userTok, wins int
	var agentLat, incLat, reinLat []float64
	for _, r := range rs {
		turns += r.UserTurns
		agentTok += r.AgentTokens
		incTok += r.InceptionTokens
		userTok += r.UserTokens
		agentLat = append(agentLat, r.AgentLatencyMs...)
		incLat = append(incLat, r.InceptionLatencyMs...)
		reinLat = append(reinLat, r.ReinLatencyMs...)
		judged += r.JudgedTurns
		falseAct += r.FalseActivations
		credited += r.CreditedActivations
		allAct += r.FalseActivations + r.CreditedActivations
		m.Fallbacks += r.FallbackTurns
		if r.Success {
			wins++
		}
		if r.clean() {
			cleanPlays++
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
		if slices.Contains(r.ActivationTypes, r.ErrorType) || r.Activated && r.DetectedType == r.ErrorType {
			recalled++
		}
	}
	m.JudgedTurns = judged
	m.ActivationRate = ratio(activated, errPlays)
	m.ExactTypeRate = ratio(exact, errPlays)
	m.ActivationRecall = ratio(recalled, errPlays)
	m.ActivationPrecision = ratio(credited, allAct)
	m.FalseActivationRate = ratio(falseAct, judged)
	m.OverDeferralRate = ratio(transfers, cleanPlays)
	m.TokensPerSuccess = ratioF(float64(agentTok+incTok+userTok), wins)
	if turns > 0 {
		m.TokensPerTurn = TokensPerTurn{Agent: float64(agentTok) / float64(turns), Inception: float64(incTok) / float64(turns),
			User: float64(userTok) / float64(turns)}
	}
	m.LatencyMsP50 = LatencyFigures{Agent: percentile(agentLat, 0.5), Inception: percentile(incLat, 0.5), Rein: percentile(reinLat, 0.5)}
	m.LatencyMsP95 = LatencyFigures{Agent: percentile(agentLat, 0.95), Inception: percentile(incLat, 0.95), Rein: percentile(reinLat, 0.95)}

	if len(base) > 0 {
		bo := outcomesOf(base, trials)
		var mine, theirs []bool
		for _, id := range so.ids {
			if _, ok := bo.byID[id]; ok {
				mine = append(mine, ScenarioOutcome(so.successes(id), trials))
				theirs = append(theirs, ScenarioOutcome(bo.successes(id), trials))
			}
		}
		if len(mine) > 0 {
			t, _ := McNemarPaired(mine, theirs) // equal lengths by construction
			m.McNemarP = &t.P
			m.McNemar = mcnemarJSON(t)
			cl := so.clusters(func(id string) (float64, bool) {
				if _, ok := bo.byID[id]; !ok {
					return 0, false
				}
				return so.fraction(id) - bo.fraction(id), true
			})
			d := deltaInterval(cl, opts)
			m.DeltaVsNone = &d
		}
	}
	return m
}

func mcnemarJSON(t McNemarResult) *McNemarJSON {
	return &McNemarJSON{Only: t.B, Other: t.C, P: t.P, Method: t.Method, Chi2: t.Statistic}
}

// cleanFigures are a condition's figures on its clean plays; base are
// none's clean plays (nil for none itself).
func cleanFigures(rs, base []Result, trials int) *CleanFigures {
	so := outcomesOf(rs, trials)
	f := &CleanFigures{Scenarios: len(so.ids)}
	sum := 0.0
	for _, id := range so.ids {
		sum += so.fraction(id)
	}
	f.PassAt1 = Wilson(sum/float64(len(so.ids)), len(so.ids))
	f.PassAt1.Method = MethodWilson
	if len(base) > 0 {
		bo := outcomesOf(base, trials)
		for _, id := range so.ids {
			if _, ok := bo.byID[id]; ok && ScenarioOutcome(bo.successes(id), trials) && !ScenarioOutcome(so.successes(id), trials) {
				f.Broke++
				f.BrokeIDs = append(f.BrokeIDs, id)
			}
		}
	}
	falseAct, transfers := 0, 0
	for _, r := range rs {
		f.JudgedTurns += r.JudgedTurns
		f.Fallbacks += r.FallbackTurns
		falseAct += r.FalseActivations
		if r.Transferred {
			transfers++
		}
	}
	f.FalseActivationRate = ratio(falseAct, f.JudgedTurns)
	f.OverDeferralRate = ratio(transfers, len(rs))
	return f
}

func ratioF(num float64, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := num / float64(den)
	return &v
}

// percentile of xs at q in [0,1] (interpolated); 0 when empty.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantile(s, q)
}

func ratio(num, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := float64(num) / float64(den)
	return &v
}
