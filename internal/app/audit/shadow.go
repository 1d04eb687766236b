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

// ShadowConfig configures a counterfactual detection run.
type ShadowConfig struct {
	Module inception.Module
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
	Module          string    `json:"module"`
	TaxonomyVersion string    `json:"taxonomy_version,omitempty"`
	Turns           int       `json:"turns"`      // user turns judged and compared
	Agreements      int       `json:"agreements"` // same label
	Flips           int       `json:"flips"`
	Unrecorded      int       `json:"unrecorded"` // judged, but no recorded detection to compare
	Types           []TypeRow `json:"types"`
	Flipped         []Flip    `json:"flipped"`
}

type turnKey struct {
	tenant, conv string
	turn         int
}

// Shadow re-runs cfg.Module over recorded user turns, rebuilding each
// turn's surface context from REIN_TURNS exactly as the detector stage
// does, and compares with the recorded detections in REIN_DETECTIONS. It
// publishes nothing.
func Shadow(ctx context.Context, js jetstream.JetStream, cfg ShadowConfig) (*ShadowReport, error) {
	if cfg.Module == nil {
		return nil, fmt.Errorf("%w: no module", ErrShadow)
	}
	if cfg.Domain == "" {
		cfg.Domain = "airline"
	}
	if cfg.HistoryTurns <= 0 {
		cfg.HistoryTurns = 40
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	recorded, err := recordedDetections(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	tools := map[string][]llm.Tool{}
	toolsOf := func(domain string) ([]llm.Tool, error) {
		if cfg.Tools == nil {
			return nil, nil
		}
		if t, ok := tools[domain]; ok {
			return t, nil
		}
		t, err := cfg.Tools(domain)
		if err != nil {
			return nil, fmt.Errorf("%w: tools of %s: %w", ErrShadow, domain, err)
		}
		tools[domain] = t
		return t, nil
	}
	rep := &ShadowReport{Module: cfg.Module.Name(), Types: []TypeRow{}, Flipped: []Flip{}}
	rows := map[string]*TypeRow{}
	row := func(l string) *TypeRow {
		if rows[l] == nil {
			rows[l] = &TypeRow{Label: l}
		}
		return rows[l]
	}
	dialogues := map[ConvRef]*surface{}
	sel := Selection{Stream: streams.StreamTurns, Tenant: cfg.Tenant, Until: cfg.Until}
	for _, c := range cfg.Conversations {
		sel.Filters = append(sel.Filters, streams.ConversationTurns(c.Tenant, c.Conversation))
	}
	err = Read(ctx, js, sel, nil, func(r *Record) error {
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
		if !s.add(t, cfg.HistoryTurns) || t.Role != schemas.RoleUser {
			return nil
		}
		if !cfg.Since.IsZero() && r.Stored.Before(cfg.Since) {
			return nil
		}
		domain := cfg.Domain
		if d, ok := cfg.TenantDomains[ref.Tenant]; ok {
			domain = d
		}
		tl, err := toolsOf(domain)
		if err != nil {
			return err
		}
		dec := judge(ctx, cfg, inception.Input{Tenant: ref.Tenant, Domain: domain, Dialogue: slices.Clone(s.utter), Tools: tl})
		if rep.TaxonomyVersion == "" {
			rep.TaxonomyVersion = dec.TaxonomyVersion
		}
		shadow := labelOf(dec.Rein, dec.Failed, dec.ErrorType)
		rec, ok := recorded[turnKey{ref.Tenant, ref.Conversation, t.Turn}]
		if !ok {
			rep.Unrecorded++
			return nil
		}
		was := labelOf(rec.Rein, rec.Failed, rec.ErrorType)
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
		rep.Flipped = append(rep.Flipped, Flip{Tenant: ref.Tenant, Conversation: ref.Conversation, Turn: t.Turn,
			Sequence: r.Sequence, UserText: t.Text, Recorded: was, Shadow: shadow, Evidence: dec.Evidence})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		rep.Types = append(rep.Types, *r)
	}
	sort.Slice(rep.Types, func(i, j int) bool { return rep.Types[i].Label < rep.Types[j].Label })
	return rep, nil
}

// judge runs the module as the detector stage does: under a deadline,
// failing open, and refusing an activation without type or reasoning.
func judge(ctx context.Context, cfg ShadowConfig, in inception.Input) inception.Decision {
	mctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	dec, err := cfg.Module.Detect(mctx, in)
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

func recordedDetections(ctx context.Context, js jetstream.JetStream, cfg ShadowConfig) (map[turnKey]schemas.Detection, error) {
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
