package ingress

import (
	"encoding/json"
	"fmt"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// FeedbackSubjectOf checks that ev is a valid feedback event and returns
// its subject; on error, field names the offending attribute or field.
func FeedbackSubjectOf(ev *event.Event) (subject, field string, err error) {
	if ev.Type() != schemas.TypeFeedback {
		return "", "type", fmt.Errorf("type %q: only %s is accepted here", ev.Type(), schemas.TypeFeedback)
	}
	meta, err := schemas.MetaOf(ev)
	if err != nil {
		return "", fieldOf(err), err
	}
	if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
		return "", fieldOf(err), err
	}
	var f schemas.Feedback
	if err := json.Unmarshal(ev.Data(), &f); err != nil {
		return "", "data", err
	}
	switch {
	case f.Kind != schemas.FeedbackSatisfaction && f.Score != 0:
		return "", "data/score", fmt.Errorf("%w: score is for kind %s only", streams.ErrUndecodable, schemas.FeedbackSatisfaction)
	case f.Kind != schemas.FeedbackLabel && f.Label != "":
		return "", "data/label", fmt.Errorf("%w: label is for kind %s only", streams.ErrUndecodable, schemas.FeedbackLabel)
	}
	return bus.FeedbackSubject(meta.Tenant, meta.Conversation, f.Key()), "", nil
}

// checkFeedback is FeedbackSubjectOf for Ingress.check.
func checkFeedback(ev *event.Event) (checked, string, error) {
	subject, field, err := FeedbackSubjectOf(ev)
	return checked{subject: subject}, field, err
}
