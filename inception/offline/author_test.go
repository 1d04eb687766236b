package offline

import (
	"context"
	"errors"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// TestTypedHeldOutAuthor is the typed classifier's leave-one-author-out
// yardstick over the six dev authors (dev+dev2, dev3, dev4, dev5, dev6,
// dev8; never test): with it the rules' core recall never drops and its clean
// false activations grow by at most 6 points on any author, and its
// 1 − P(clean) ranks erroneous over clean turns better than the gate's
// classifier trained on the same turns. Figures as measured are logged
// (and in testdata/corpus/README.md). Under -race, where its ten trainings
// take minutes, only the newest author (dev6) is held out.
func TestTypedHeldOutAuthor(t *testing.T) {
	var scores []AuthorScore
	if raceEnabled {
		s, err := OutOfAuthor(context.Background(), inceptiontest.Corpus(t, "dev", "dev2", "dev3", "dev4", "dev5", "dev8"), inceptiontest.Corpus(t, "dev6"), learned.TypedTrainConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		scores = []AuthorScore{s}
	} else {
		var err error
		scores, err = LeaveOneAuthorOut(context.Background(), inceptiontest.Corpus(t, "dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev8"), learned.TypedTrainConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(scores) != 6 {
			t.Fatalf("%d authors, want 6", len(scores))
		}
	}
	for _, s := range scores {
		t.Logf("held %s (%d turns, threshold %.3f): rules core %.3f mean %.3f clean FA %.3f; +typed core %.3f mean %.3f clean FA %.3f; AUC gate model %.3f, typed %.3f",
			s.Held, s.Turns, s.Threshold, s.Rules.CoreRecall, s.Rules.MeanRecall, s.Rules.CleanFalse,
			s.Combined.CoreRecall, s.Combined.MeanRecall, s.Combined.CleanFalse, s.AUCGate, s.AUCTyped)
		if s.Combined.CoreRecall < s.Rules.CoreRecall || s.Combined.CleanFalse > s.Rules.CleanFalse+0.06 {
			t.Errorf("held %s: core recall %.3f → %.3f, clean false activations %.3f → %.3f", s.Held, s.Rules.CoreRecall, s.Combined.CoreRecall, s.Rules.CleanFalse, s.Combined.CleanFalse)
		}
		if s.AUCTyped <= s.AUCGate {
			t.Errorf("held %s: typed AUC %.3f not above the gate model's %.3f", s.Held, s.AUCTyped, s.AUCGate)
		}
	}
}

// TestOutOfAuthorRefusesASharedAuthor: measuring on an author the models
// were trained on is refused, and the held-out authors are named whole.
func TestOutOfAuthorRefusesASharedAuthor(t *testing.T) {
	train := inceptiontest.Corpus(t, "dev3")
	if _, err := OutOfAuthor(context.Background(), train, train[:5], learned.TypedTrainConfig{}, nil); !errors.Is(err, inception.ErrInvalidInput) {
		t.Errorf("held turns of a trained author: %v", err)
	}
	held := inceptiontest.Corpus(t, "dev2")
	for i := range held {
		held[i].Author = "dev2"
	}
	held[len(held)-1].Author = "dev" // a name inside another author's
	s, err := OutOfAuthor(context.Background(), train, held, learned.TypedTrainConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Held != "dev2+dev" || s.Turns != len(held) || len(s.Trained) != 1 {
		t.Errorf("held %q (%d turns), trained on %v", s.Held, s.Turns, s.Trained)
	}
}
