package inception

import (
	"context"
	"testing"
)

// typedLOAO is the typed classifier's leave-one-author-out measure on the
// dev side of the corpus (never test).
func typedLOAO(t *testing.T) []AuthorScore {
	t.Helper()
	scores, err := LeaveOneAuthorOut(context.Background(), corpusExamples(t, "dev", "dev2", "dev3", "dev4"), TypedTrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scores {
		t.Logf("held %s (trained on %v, %d turns, threshold %.3f): rules core %.3f mean %.3f prec %.3f clean FA %.3f | +typed core %.3f mean %.3f prec %.3f clean FA %.3f | gate rules %.3f/%.3f, +gate model %.3f/%.3f, +typed %.3f/%.3f | AUC gate %.3f typed %.3f",
			s.Held, s.Trained, s.Turns, s.Threshold,
			s.Rules.CoreRecall, s.Rules.MeanRecall, s.Rules.Precision, s.Rules.CleanFalse,
			s.Combined.CoreRecall, s.Combined.MeanRecall, s.Combined.Precision, s.Combined.CleanFalse,
			s.GateRules.Erroneous, s.GateRules.Clean, s.GateModel.Erroneous, s.GateModel.Clean, s.GateTyped.Erroneous, s.GateTyped.Clean,
			s.AUCGate, s.AUCTyped)
	}
	return scores
}

func TestTypedHeldOutAuthor(t *testing.T) {
	typedLOAO(t)
}
