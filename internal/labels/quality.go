package labels

import (
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/reinception/rein/schemas"
)

// Estimate is a weighted proportion with its 95 % Wilson interval.
type Estimate struct {
	Value, Lower, Upper float64
	// Labels is how many labels stand behind it (the denominator's);
	// Effective is Kish's effective sample size of their weights.
	Labels    int
	Effective float64
}

// Defined reports whether any label stands behind the estimate.
func (e Estimate) Defined() bool { return e.Labels > 0 }

// Row is one line of a quality report: an error type, or an overall row.
type Row struct {
	Name      string
	Precision Estimate
	Recall    Estimate
}

// Overall rows of a Report.
const (
	// RowOverall: an activation counts as right only with the right type.
	RowOverall = "overall"
	// RowAnyError: whether an error was present, whatever its type.
	RowAnyError = "any error"
)

// Report is detection quality measured from labels.
type Report struct {
	// Rows: each error type seen, sorted, then RowOverall and RowAnyError.
	Rows []Row
	// Weighted is how many labels came from the queue and are counted;
	// AdHoc how many were given outside it (not counted).
	Weighted, AdHoc int
	// Turns is how many labelled turns the weighted labels cover (a turn
	// labelled by several labellers counts once, its latest label winning).
	Turns int
}

// judged is one labelled turn: what rein said, the truth, the weight.
type judged struct {
	pred, truth string
	w           float64
}

// Quality estimates precision and recall per type and overall from labels
// (Horvitz–Thompson weights 1/π; see the package documentation) of what
// rein decided when the turns ran.
func Quality(ls []Stored) Report { return QualityOf(ls, Recorded) }

// Recorded is what the labelled detection decided: its error type, or ""
// when rein stayed clear.
func Recorded(s Stored) (string, bool) {
	if s.Label.Detected {
		return s.Label.DetectedType, true
	}
	return "", true
}

// QualityOf estimates the quality of another decision of the labelled
// turns, with the same weights: pred returns a turn's error type ("" for
// clear), or false when that decision is unknown (the turn is left out).
// A candidate model replayed over the labelled turns is measured so.
func QualityOf(ls []Stored, pred func(Stored) (string, bool)) Report {
	var r Report
	var weighted []Stored
	var preds []string
	for _, s := range ls {
		if s.Label.Sample == nil || s.Label.Sample.Probability <= 0 {
			r.AdHoc++
			continue
		}
		if p, ok := pred(s); ok {
			weighted = append(weighted, s)
			preds = append(preds, p)
		}
	}
	r.Weighted = len(weighted)
	latest := Latest(weighted)
	r.Turns = len(latest)
	js := make([]judged, 0, len(latest))
	for _, i := range latest {
		l := weighted[i].Label
		js = append(js, judged{pred: preds[i], truth: Truth(l), w: 1 / l.Sample.Probability})
	}
	types := map[string]bool{}
	for _, j := range js {
		for _, t := range []string{j.pred, j.truth} {
			if t != "" {
				types[t] = true
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(types)) {
		r.Rows = append(r.Rows, Row{Name: t,
			Precision: proportion(js, func(j judged) (bool, bool) { return j.pred == t, j.truth == t }),
			Recall:    proportion(js, func(j judged) (bool, bool) { return j.truth == t, j.pred == t }),
		})
	}
	r.Rows = append(r.Rows,
		Row{Name: RowOverall,
			Precision: proportion(js, func(j judged) (bool, bool) { return j.pred != "", j.truth == j.pred }),
			Recall:    proportion(js, func(j judged) (bool, bool) { return j.truth != "", j.pred == j.truth }),
		},
		Row{Name: RowAnyError,
			Precision: proportion(js, func(j judged) (bool, bool) { return j.pred != "", j.truth != "" }),
			Recall:    proportion(js, func(j judged) (bool, bool) { return j.truth != "", j.pred != "" }),
		})
	return r
}

// Row returns the row named name.
func (r Report) Row(name string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Name == name {
			return row, true
		}
	}
	return Row{}, false
}

// Latest returns the index in ls of the label that counts for each
// labelled turn, in the order the turns first appear: the one given last
// (of several labellers' labels of a turn, the latest wins; of equal
// times, the later in ls).
func Latest(ls []Stored) []int {
	at := map[[3]string]int{}
	var out []int
	for i, s := range ls {
		k := [3]string{s.Tenant, s.Conversation, strconv.Itoa(s.Label.Turn)}
		j, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, i)
			continue
		}
		if !s.Time.Before(ls[out[j]].Time) {
			out[j] = i
		}
	}
	return out
}

// Truth is what the labeller says the turn holds: its error type, or ""
// for a turn with no error.
func Truth(l schemas.Label) string {
	switch l.Verdict {
	case schemas.VerdictCorrect:
		if l.Detected {
			return l.DetectedType
		}
	case schemas.VerdictWrongType, schemas.VerdictMissedError:
		return l.ErrorType
	}
	return ""
}

// proportion is the weighted share of hit among the labels in the
// denominator (in reports whether a label is in it).
func proportion(js []judged, f func(judged) (in, hit bool)) Estimate {
	var e Estimate
	var sw, sw2, shit float64
	for _, j := range js {
		in, hit := f(j)
		if !in {
			continue
		}
		e.Labels++
		sw += j.w
		sw2 += j.w * j.w
		if hit {
			shit += j.w
		}
	}
	if e.Labels == 0 {
		return e
	}
	e.Value = shit / sw
	e.Effective = sw * sw / sw2
	e.Lower, e.Upper = Wilson(e.Value, e.Effective)
	return e
}

// z95 is the standard normal quantile of a two-sided 95 % interval.
const z95 = 1.959963984540054

// Wilson is the 95 % Wilson score interval of a proportion p observed on
// n (possibly effective, not whole) trials.
func Wilson(p, n float64) (lower, upper float64) {
	if n <= 0 {
		return 0, 1
	}
	z2 := z95 * z95
	den := 1 + z2/n
	center := (p + z2/(2*n)) / den
	half := z95 / den * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return max(0, center-half), min(1, center+half)
}
