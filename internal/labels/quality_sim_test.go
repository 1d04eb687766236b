package labels_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/schemas"
)

// Drawn by the queue and weighted by 1/π, labels estimate the
// population's recall without bias and the 95 % intervals hold it about
// as often as they say; unweighted, the same labels are far off. The
// population: 12,000 clear turns of which 600 hide an anaphora, and 600
// anaphora activations of which 480 are right (recall 480/1,080, precision
// 0.8), drawn 200 times with a budget of 300 under 200 keys.
func TestQualityEstimatesAreUnbiased(t *testing.T) {
	const clean, missed, activated, right, reps = 12000, 600, 600, 480, 200
	truthRecall := float64(right) / float64(right+missed)
	pop := map[string]int{schemas.StratumClean: clean, "anaphora": activated}
	var sumR, sumP, sumNaive float64
	covered := 0
	for k := range reps {
		q := labels.QueueConfig{Budget: 300, Key: fmt.Sprintf("key-%d", k)}
		plan := labels.Draw(q, pop)
		var ls []labels.Stored
		add := func(conv, stratum, verdict, detected, right string) {
			pi := plan.Probability[stratum]
			if labels.Uniform(q.Key, "acme", conv, 1) >= pi {
				return
			}
			ls = append(ls, label("acme", conv, 1, verdict, detected, right, pi))
		}
		for i := range clean {
			if i < missed {
				add(fmt.Sprint("m", i), schemas.StratumClean, schemas.VerdictMissedError, "", "anaphora")
			} else {
				add(fmt.Sprint("c", i), schemas.StratumClean, schemas.VerdictCorrect, "", "")
			}
		}
		for i := range activated {
			if i < right {
				add(fmt.Sprint("a", i), "anaphora", schemas.VerdictCorrect, "anaphora", "")
			} else {
				add(fmt.Sprint("f", i), "anaphora", schemas.VerdictFalseActivation, "anaphora", "")
			}
		}
		row, _ := labels.Quality(ls).Row("anaphora")
		sumR += row.Recall.Value
		sumP += row.Precision.Value
		if row.Recall.Lower <= truthRecall && truthRecall <= row.Recall.Upper {
			covered++
		}
		var tp, fn int
		for _, l := range ls {
			switch l.Label.Verdict {
			case schemas.VerdictMissedError:
				fn++
			case schemas.VerdictCorrect:
				if l.Label.Detected {
					tp++
				}
			}
		}
		sumNaive += float64(tp) / float64(tp+fn)
	}
	meanR, meanP, naive, coverage := sumR/reps, sumP/reps, sumNaive/reps, float64(covered)/reps
	t.Logf("recall: truth %.3f, mean weighted estimate %.3f, 95%% interval coverage %.2f, mean unweighted %.3f; precision: truth 0.800, mean %.3f",
		truthRecall, meanR, coverage, naive, meanP)
	if math.Abs(meanR-truthRecall) > 0.03 || math.Abs(meanP-0.8) > 0.02 {
		t.Errorf("weighted estimates are biased: recall %.3f (truth %.3f), precision %.3f (truth 0.8)", meanR, truthRecall, meanP)
	}
	if coverage < 0.85 {
		t.Errorf("the recall interval holds the truth in %.0f%% of draws, want about 95%%", 100*coverage)
	}
	if naive-truthRecall < 0.3 {
		t.Errorf("unweighted recall %.3f is close to the truth %.3f: the test no longer shows why weights matter", naive, truthRecall)
	}
}
