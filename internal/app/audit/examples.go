package audit

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/labels"
)

// LabelAuthor is the author a tenant's labelled turns are trained as: one
// group of their own, so that folds by author choose thresholds on
// wording the fold's model never saw.
func LabelAuthor(tenant string) string { return "tenant:" + tenant }

// LabelledExamples turns labels into training turns: each labelled turn
// that sel selects, with the input the detector built for it (rebuilt
// from REIN_TURNS) and the labeller's truth (labels.Truth: a missed error
// or a wrong type is an example of the right type, a false activation a
// clean one, a correct label what rein decided). Of several labels of a
// turn the latest counts; a label whose turn is not stored is counted in
// missing and left out.
func LabelledExamples(ctx context.Context, js jetstream.JetStream, sel TurnSelection, ls []labels.Stored) (examples []inception.Example, missing int, err error) {
	truth := map[turnKey]string{}
	for _, i := range labels.Latest(ls) {
		s := ls[i]
		truth[turnKey{s.Tenant, s.Conversation, s.Label.Turn}] = labels.Truth(s.Label)
	}
	found := map[turnKey]bool{}
	err = UserTurns(ctx, js, sel, func(t UserTurn) error {
		k := turnKey{t.Tenant, t.Conversation, t.Turn}
		typ, ok := truth[k]
		if !ok || found[k] {
			return nil
		}
		found[k] = true
		examples = append(examples, inception.Example{
			ID:     fmt.Sprintf("label/%s/%s/%d", t.Tenant, t.Conversation, t.Turn),
			Author: LabelAuthor(t.Tenant), Input: t.Input, Rein: typ != "", ErrorType: typ,
		})
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return examples, len(truth) - len(found), nil
}
