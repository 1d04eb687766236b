package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Recent conversations: the ledger, which reads every replica's decision
// for every user turn from REIN_DETECTIONS, also keeps each conversation's
// latest decision, so the overview lists the conversations of the window,
// clean ones included (escalations and reports are only the activated
// ones that ended so), and an operator filters them by outcome and type.

const (
	// recentConvKeep bounds the conversations the ledger remembers; past
	// twice as many the oldest are forgotten.
	recentConvKeep = 500
	// recentConvShow is how many the overview lists.
	recentConvShow = 50
)

// Outcomes a conversation row can be filtered by.
var decisionOutcomes = []string{outcomeActivated, "clear", outcomeFailed}

// ConversationRow is one conversation's latest decision.
type ConversationRow struct {
	Tenant       string    `json:"tenant"`
	Conversation string    `json:"conversation"`
	Turn         int       `json:"turn"`
	Time         time.Time `json:"time"`
	TimeText     string    `json:"time_text"`
	Outcome      string    `json:"outcome"`              // activated, clear or failed
	ErrorType    string    `json:"error_type,omitempty"` // when activated
	URL          string    `json:"url"`                  // its timeline
}

// OutcomeLink is one choice of the conversation list's outcome filter.
type OutcomeLink struct {
	Name    string `json:"name"` // "" all
	Text    string `json:"text"`
	URL     string `json:"url"`
	Current bool   `json:"current"`
}

// remember keeps a conversation's latest decision (l.mu held).
func (l *ledger) remember(tenant, conv string, turn int, at time.Time, outcome, errorType string) {
	if l.convs == nil {
		l.convs = map[[2]string]ConversationRow{}
	}
	k := [2]string{tenant, conv}
	if old, ok := l.convs[k]; ok && (old.Turn > turn || old.Time.After(at)) {
		return
	}
	l.convs[k] = ConversationRow{Tenant: tenant, Conversation: conv, Turn: turn, Time: at, Outcome: outcome, ErrorType: errorType}
	if len(l.convs) > 2*recentConvKeep {
		rows := l.sortedConvs()
		for _, r := range rows[recentConvKeep:] {
			delete(l.convs, [2]string{r.Tenant, r.Conversation})
		}
	}
}

// sortedConvs lists the remembered conversations, newest first.
func (l *ledger) sortedConvs() []ConversationRow {
	rows := make([]ConversationRow, 0, len(l.convs))
	for _, r := range l.convs {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b ConversationRow) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Conversation, b.Conversation))
	})
	return rows
}

// conversations lists the newest conversations whose latest decision was
// stored at or after from (zero: any), narrowed by f and outcome.
func (l *ledger) conversations(from time.Time, f filter, outcome string) []ConversationRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ConversationRow
	for _, r := range l.sortedConvs() {
		if len(out) == recentConvShow {
			break
		}
		if r.Time.Before(from) || !f.tenantOK(r.Tenant) || (f.errorType != "" && r.ErrorType != f.errorType) || (outcome != "" && r.Outcome != outcome) {
			continue
		}
		r.TimeText = timeText(r.Time)
		r.URL = fmt.Sprintf("/conversations/%s/%s", r.Tenant, r.Conversation)
		out = append(out, r)
	}
	return out
}

// outcomeLinks are the conversation list's outcome filter, keeping the
// window and the other filters.
func outcomeLinks(q Query) []OutcomeLink {
	out := []OutcomeLink{{Name: "", Text: "all", URL: overviewURL(Query{Window: q.Window, Tenant: q.Tenant, ErrorType: q.ErrorType}), Current: q.Outcome == ""}}
	for _, o := range decisionOutcomes {
		out = append(out, OutcomeLink{Name: o, Text: o, URL: overviewURL(Query{Window: q.Window, Tenant: q.Tenant, ErrorType: q.ErrorType, Outcome: o}), Current: q.Outcome == o})
	}
	return out
}
