package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// Labels of a decision in a shadow comparison besides error type names.
const (
	LabelNone   = "none"   // the module judged the turn clear
	LabelFailed = "failed" // the module could not judge (fail-open)
)

// ConvRef names one conversation.
type ConvRef struct{ Tenant, Conversation string }

// TurnSelection selects recorded user turns and says how to rebuild what
// the detector saw of each.
type TurnSelection struct {
	// Tenant limits the run to one tenant (empty: every tenant).
	Tenant string
	// Conversations, when not empty, limits the run to these.
	Conversations []ConvRef
	// Since and Until bound the stored time of the user turns judged
	// (zero: unbounded). Earlier turns still form the surface context.
	Since, Until time.Time
	// Domain is the agent domain for tenants not in TenantDomains
	// (default "airline", as the detector stage).
	Domain        string
	TenantDomains map[string]string
	// Tools returns the agent's tool catalogue of a domain (nil: none).
	Tools func(domain string) ([]llm.Tool, error)
	// HistoryTurns bounds the surface context (default 40, as the stage).
	HistoryTurns int
}

// ShadowConfig configures a counterfactual detection run.
type ShadowConfig struct {
	TurnSelection
	Module inception.Module
	// Baseline, when set, is re-run beside Module and compared with it
	// instead of the recorded detections: the live module against a
	// candidate model (rein shadow --candidate).
	Baseline inception.Module
	// Labels, when set, are measured against: the report's Quality holds
	// the labelled precision and recall of the recorded detections, of
	// Module and of Baseline, with the same weights.
	Labels []labels.Stored
	// Timeout bounds one module call (default 30s).
	Timeout time.Duration
}

// Flip is one user turn whose shadow decision differs from the recorded one.
type Flip struct {
	Tenant       string `json:"tenant"`
	Conversation string `json:"conversation"`
	Turn         int    `json:"turn"`
	Sequence     uint64 `json:"seq"`
	UserText     string `json:"user_text"`
	Recorded     string `json:"recorded"`
	Shadow       string `json:"shadow"`
	Evidence     string `json:"shadow_evidence,omitempty"`
}

// TypeRow counts one label across the run: how often it was recorded, how
// often the shadow module chose it, agreements, and flips away from it
// (Lost: recorded this, shadow something else) and to it (Gained).
type TypeRow struct {
	Label    string `json:"label"`
	Recorded int    `json:"recorded"`
	Shadow   int    `json:"shadow"`
	Agree    int    `json:"agree"`
	Lost     int    `json:"lost"`
	Gained   int    `json:"gained"`
}

// ShadowReport is the result of a shadow run.
type ShadowReport struct {
	Module string `json:"module"`
	// Baseline names what Module was compared with: the recorded
	// detections (ComparedRecorded) or the baseline module re-run.
	Baseline        string    `json:"baseline"`
	TaxonomyVersion string    `json:"taxonomy_version,omitempty"`
	Turns           int       `json:"turns"`      // user turns judged and compared
	Agreements      int       `json:"agreements"` // same label
	Flips           int       `json:"flips"`
	Unrecorded      int       `json:"unrecorded"` // judged, but no recorded detection to compare
	Types           []TypeRow `json:"types"`
	Flipped         []Flip    `json:"flipped"`
	// Quality, with ShadowConfig.Labels: QualityRecorded, QualityShadow
	// and, with a baseline, QualityBaseline.
	Quality map[string]labels.Report `json:"quality,omitempty"`
}

// ComparedRecorded is ShadowReport.Baseline when the shadow module was
// compared with the recorded detections.
const ComparedRecorded = "recorded"

// Keys of ShadowReport.Quality.
const (
	QualityRecorded = "recorded"
	QualityShadow   = "shadow"
	QualityBaseline = "baseline"
)

type turnKey struct {
	tenant, conv string
	turn         int
}

// Shadow re-runs cfg.Module over recorded user turns, rebuilding each
// turn's surface context from REIN_TURNS exactly as the detector stage
// does, and compares with the recorded detections in REIN_DETECTIONS, or
// with cfg.Baseline re-run on the same turns. It publishes nothing.
func Shadow(ctx context.Context, js jetstream.JetStream, cfg ShadowConfig) (*ShadowReport, error) {
	if cfg.Module == nil {
		return nil, fmt.Errorf("%w: no module", ErrShadow)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	var recorded map[turnKey]schemas.Detection
	rep := &ShadowReport{Module: cfg.Module.Name(), Baseline: ComparedRecorded, Types: []TypeRow{}, Flipped: []Flip{}}
	if cfg.Baseline != nil {
		rep.Baseline = cfg.Baseline.Name()
	} else {
		var err error
		if recorded, err = recordedDetections(ctx, js, cfg.TurnSelection); err != nil {
			return nil, err
		}
	}
	rows := map[string]*TypeRow{}
	row := func(l string) *TypeRow {
		if rows[l] == nil {
			rows[l] = &TypeRow{Label: l}
		}
		return rows[l]
	}
	// What each module said of each turn, for the labelled figures.
	said := map[string]map[turnKey]string{QualityShadow: {}, QualityBaseline: {}}
	err := UserTurns(ctx, js, cfg.TurnSelection, func(t UserTurn) error {
		dec := judge(ctx, cfg.Module, cfg.Timeout, t.Input)
		if rep.TaxonomyVersion == "" {
			rep.TaxonomyVersion = dec.TaxonomyVersion
		}
		k := turnKey{t.Tenant, t.Conversation, t.Turn}
		said[QualityShadow][k] = predicted(dec.Rein, dec.ErrorType)
		shadow := labelOf(dec.Rein, dec.Failed, dec.ErrorType)
		var was string
		if cfg.Baseline != nil {
			b := judge(ctx, cfg.Baseline, cfg.Timeout, t.Input)
			said[QualityBaseline][k] = predicted(b.Rein, b.ErrorType)
			was = labelOf(b.Rein, b.Failed, b.ErrorType)
		} else {
			rec, ok := recorded[k]
			if !ok {
				rep.Unrecorded++
				return nil
			}
			was = labelOf(rec.Rein, rec.Failed, rec.ErrorType)
		}
		rep.Turns++
		row(was).Recorded++
		row(shadow).Shadow++
		if was == shadow {
			rep.Agreements++
			row(was).Agree++
			return nil
		}
		rep.Flips++
		row(was).Lost++
		row(shadow).Gained++
		rep.Flipped = append(rep.Flipped, Flip{Tenant: t.Tenant, Conversation: t.Conversation, Turn: t.Turn,
			Sequence: t.Sequence, UserText: t.Text, Recorded: was, Shadow: shadow, Evidence: dec.Evidence})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		rep.Types = append(rep.Types, *r)
	}
	sort.Slice(rep.Types, func(i, j int) bool { return rep.Types[i].Label < rep.Types[j].Label })
	if cfg.Labels != nil {
		rep.Quality = map[string]labels.Report{QualityRecorded: labels.Quality(cfg.Labels)}
		keys := []string{QualityShadow}
		if cfg.Baseline != nil {
			keys = append(keys, QualityBaseline)
		}
		for _, q := range keys {
			m := said[q]
			rep.Quality[q] = labels.QualityOf(cfg.Labels, func(s labels.Stored) (string, bool) {
				p, ok := m[turnKey{s.Tenant, s.Conversation, s.Label.Turn}]
				return p, ok
			})
		}
	}
	return rep, nil
}

// predicted is the error type a decision planted, "" for none (a failed
// decision plants nothing).
func predicted(rein bool, typ string) string {
	if rein {
		return typ
	}
	return ""
}

// UserTurn is one recorded user turn with the input the detector built
// for it.
type UserTurn struct {
	Tenant, Conversation string
	Turn                 int
	Sequence             uint64
	Stored               time.Time
	Text                 string
	Input                inception.Input
}

// UserTurns calls fn for each stored user turn sel selects, in stream
// order, with its surface context rebuilt from REIN_TURNS as the detector
// stage does (the newest HistoryTurns utterances up to the turn).
func UserTurns(ctx context.Context, js jetstream.JetStream, sel TurnSelection, fn func(UserTurn) error) error {
	if sel.Domain == "" {
		sel.Domain = "airline"
	}
	if sel.HistoryTurns <= 0 {
		sel.HistoryTurns = 40
	}
	tools := map[string][]llm.Tool{}
	toolsOf := func(domain string) ([]llm.Tool, error) {
		if sel.Tools == nil {
			return nil, nil
		}
		if t, ok := tools[domain]; ok {
			return t, nil
		}
		t, err := sel.Tools(domain)
		if err != nil {
			return nil, fmt.Errorf("%w: tools of %s: %w", ErrShadow, domain, err)
		}
		tools[domain] = t
		return t, nil
	}
	dialogues := map[ConvRef]*surface{}
	rs := Selection{Stream: streams.StreamTurns, Tenant: sel.Tenant, Until: sel.Until}
	for _, c := range sel.Conversations {
		rs.Filters = append(rs.Filters, streams.ConversationTurns(c.Tenant, c.Conversation))
	}
	return Read(ctx, js, rs, nil, func(r *Record) error {
		if r.Type() != schemas.TypeTurn {
			return nil
		}
		ref := ConvRef{r.Attr(schemas.ExtTenant), r.Attr(schemas.ExtConversation)}
		var t schemas.Turn
		if json.Unmarshal(r.Data, &t) != nil {
			return nil
		}
		if t.Turn == 0 {
			t.Turn, _ = strconv.Atoi(r.Attr(schemas.ExtTurn))
		}
		s := dialogues[ref]
		if s == nil {
			s = &surface{}
			dialogues[ref] = s
		}
		if !s.add(t, sel.HistoryTurns) || t.Role != schemas.RoleUser {
			return nil
		}
		if !sel.Since.IsZero() && r.Stored.Before(sel.Since) {
			return nil
		}
		domain := sel.Domain
		if d, ok := sel.TenantDomains[ref.Tenant]; ok {
			domain = d
		}
		tl, err := toolsOf(domain)
		if err != nil {
			return err
		}
		return fn(UserTurn{Tenant: ref.Tenant, Conversation: ref.Conversation, Turn: t.Turn, Sequence: r.Sequence, Stored: r.Stored, Text: t.Text,
			Input: inception.Input{Tenant: ref.Tenant, Domain: domain, Dialogue: slices.Clone(s.utter), Tools: tl}})
	})
}

// judge runs the module as the detector stage does: under a deadline,
// failing open, and refusing an activation without type or reasoning.
func judge(ctx context.Context, m inception.Module, timeout time.Duration, in inception.Input) inception.Decision {
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dec, err := m.Detect(mctx, in)
	if err != nil {
		return inception.Decision{Failed: true, FailReason: err.Error()}
	}
	if dec.Rein && (dec.ErrorType == "" || dec.Reasoning == "") {
		dec.Rein, dec.Failed = false, true
	}
	return dec
}

func labelOf(rein, failed bool, typ string) string {
	switch {
	case failed:
		return LabelFailed
	case rein:
		return typ
	}
	return LabelNone
}

// surface is one conversation's rebuilt surface context.
type surface struct {
	utter []inception.Utterance
	seen  map[string]bool
}

// add appends a turn unless it was already applied (same turn and role),
// keeping the newest max utterances. It reports whether the turn was new.
func (s *surface) add(t schemas.Turn, max int) bool {
	k := strconv.Itoa(t.Turn) + "/" + t.Role
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[k] {
		return false
	}
	s.seen[k] = true
	s.utter = append(s.utter, inception.Utterance{Role: t.Role, Text: t.Text})
	if n := len(s.utter) - max; n > 0 {
		s.utter = slices.Delete(s.utter, 0, n)
	}
	return true
}

func recordedDetections(ctx context.Context, js jetstream.JetStream, cfg TurnSelection) (map[turnKey]schemas.Detection, error) {
	out := map[turnKey]schemas.Detection{}
	sel := Selection{Stream: streams.StreamDetections, Tenant: cfg.Tenant}
	for _, c := range cfg.Conversations {
		sel.Filters = append(sel.Filters, streams.AnyPartition(streams.DetectionSubject(c.Tenant, c.Conversation))...)
	}
	err := Read(ctx, js, sel, nil, func(r *Record) error {
		if r.Type() != schemas.TypeDetection {
			return nil
		}
		var d schemas.Detection
		if json.Unmarshal(r.Data, &d) != nil {
			return nil
		}
		out[turnKey{r.Attr(schemas.ExtTenant), r.Attr(schemas.ExtConversation), d.Turn}] = d
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recorded detections: %w", err)
	}
	return out, nil
}
