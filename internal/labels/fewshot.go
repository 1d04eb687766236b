package labels

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/schemas"
)

// FewShot returns, per tenant, up to n of its labelled turns as examples
// for the llm module's prompt (llmmodule.LLMConfig.Examples): of each
// turn its label that counts (Latest), corrections first (a missed error,
// a wrong type, a false activation: what the module got wrong), then
// confirmations, each group newest first. A turn's text is its stored
// detection's user text; a turn whose detection has aged out is skipped.
// Each tenant's examples come from its own labels and detections only.
func FewShot(ctx context.Context, js jetstream.JetStream, n int) (map[string][]inception.Example, error) {
	ls, err := Read(ctx, js, Filter{})
	if err != nil {
		return nil, err
	}
	byTenant := map[string][]Stored{}
	for _, i := range Latest(ls) {
		byTenant[ls[i].Tenant] = append(byTenant[ls[i].Tenant], ls[i])
	}
	out := map[string][]inception.Example{}
	for tenant, tl := range byTenant {
		slices.SortStableFunc(tl, func(a, b Stored) int {
			if ca, cb := corrects(a.Label), corrects(b.Label); ca != cb {
				if ca {
					return -1
				}
				return 1
			}
			return cmp.Compare(b.Sequence, a.Sequence)
		})
		for _, s := range tl {
			if len(out[tenant]) == n {
				break
			}
			d, err := FindDetection(ctx, js, tenant, s.Conversation, s.Label.Turn)
			if errors.Is(err, ErrNoDetection) || d.UserText == "" {
				continue
			}
			if err != nil {
				return nil, err
			}
			truth := Truth(s.Label)
			out[tenant] = append(out[tenant], inception.Example{
				ID:    fmt.Sprintf("label/%s/%s/%d", tenant, s.Conversation, s.Label.Turn),
				Input: inception.Input{Tenant: tenant, Dialogue: []inception.Utterance{{Role: inception.RoleUser, Text: d.UserText}}},
				Rein:  truth != "", ErrorType: truth,
			})
		}
	}
	return out, nil
}

// corrects reports a label that says rein was wrong.
func corrects(l schemas.Label) bool { return l.Verdict != schemas.VerdictCorrect }
