package eval

import (
	"bytes"
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette colours the conditions (colour-blind safe Okabe–Ito hues).
var palette = []color.Color{
	color.RGBA{0x99, 0x99, 0x99, 0xff}, // none: grey
	color.RGBA{0x00, 0x72, 0xb2, 0xff}, // rein: blue
	color.RGBA{0xe6, 0x9f, 0x00, 0xff}, // npi: orange
	color.RGBA{0x00, 0x9e, 0x73, 0xff}, // self-refine: green
	color.RGBA{0xcc, 0x79, 0xa7, 0xff},
	color.RGBA{0xd5, 0x5e, 0x00, 0xff},
}

// errBars places a bar's interval at its x position for plotter.YErrorBars.
type errBars struct {
	xs, ys, lo, hi []float64
}

func (e errBars) Len() int                    { return len(e.xs) }
func (e errBars) XY(i int) (float64, float64) { return e.xs[i], e.ys[i] }
func (e errBars) YError(i int) (float64, float64) {
	return e.ys[i] - e.lo[i], e.hi[i] - e.ys[i]
}

// PassAt1Chart draws Pass@1 by condition with its bootstrap interval, as SVG.
func PassAt1Chart(r *RunReport) ([]byte, error) {
	p, err := passAt1Plot(r)
	if err != nil {
		return nil, err
	}
	return render(p, 6*vg.Inch, 3.5*vg.Inch, "svg")
}

func passAt1Plot(r *RunReport) (*plot.Plot, error) {
	conds := r.ConditionNames()
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Pass@1 on error scenarios by condition (%.0f %% intervals)", r.Bootstrap.Level*100)
	p.Y.Label.Text = "Pass@1 (error scenarios)"
	p.Y.Min, p.Y.Max = 0, 1
	vals := make(plotter.Values, len(conds))
	eb := errBars{}
	for i, c := range conds {
		m := r.Conditions[c].PassAt1
		vals[i] = m.Value
		eb.xs, eb.ys = append(eb.xs, float64(i)), append(eb.ys, m.Value)
		eb.lo, eb.hi = append(eb.lo, m.Low), append(eb.hi, m.High)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return nil, fmt.Errorf("pass@1 chart: %w", err)
	}
	bars.Color = palette[1]
	bars.LineStyle.Width = 0
	errs, err := plotter.NewYErrorBars(eb)
	if err != nil {
		return nil, fmt.Errorf("pass@1 chart: %w", err)
	}
	p.Add(bars, errs)
	p.NominalX(conds...)
	return p, nil
}

// rateTicks marks 0 to 1 only, so the headroom above 1 that holds the
// legend carries no ticks.
var rateTicks = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}}

// tickLines breaks a category name at its first underscore, so that the
// labels stand level and clear of each other.
func tickLines(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.Replace(n, "_", "\n", 1)
	}
	return out
}

// ActivationChart draws, per error type, each condition's activation rate
// at the error turn and, in the last group, the false-activation rate on
// clean turns, as SVG. Missing rates are drawn as 0.
func ActivationChart(r *RunReport) ([]byte, error) {
	p, err := activationPlot(r)
	if err != nil {
		return nil, err
	}
	return render(p, 9*vg.Inch, 4*vg.Inch, "svg")
}

func activationPlot(r *RunReport) (*plot.Plot, error) {
	conds := r.ConditionNames()
	groups := append(append([]string(nil), ErrorTypes...), "clean_(false act.)")
	p := plot.New()
	p.Title.Text = "Activation at the planting point by type; false activation per judged clean turn"
	p.Y.Label.Text = "rate"
	// Headroom above 1 holds the legend clear of the bars.
	p.Y.Min, p.Y.Max = 0, 1+0.12*float64(len(conds)+1)
	p.Y.Tick.Marker = rateTicks
	w := vg.Points(9)
	for ci, c := range conds {
		cr := r.Conditions[c]
		vals := make(plotter.Values, len(groups))
		for gi, et := range ErrorTypes {
			if m := cr.ByErrorType[et]; m != nil && m.ActivationRate != nil {
				vals[gi] = *m.ActivationRate
			}
		}
		if cr.Clean != nil && cr.Clean.FalseActivationRate != nil {
			vals[len(groups)-1] = *cr.Clean.FalseActivationRate
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, fmt.Errorf("activation chart: %w", err)
		}
		bars.Color = palette[ci%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(ci)-float64(len(conds)-1)/2)
		p.Add(bars)
		p.Legend.Add(c, bars)
	}
	// Top left, swatch before label: a label drawn wider than measured
	// runs into the empty headroom, not into its swatch or a bar.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.Padding = vg.Points(5)
	p.Legend.XOffs = vg.Points(8)
	p.NominalX(tickLines(groups)...)
	return p, nil
}

// chartMargin keeps labels inside the picture when a viewer draws them in
// a wider font than the one the layout was measured with.
const chartMargin = 8 * vg.Millimeter

func render(p *plot.Plot, w, h vg.Length, format string) ([]byte, error) {
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	p.Draw(draw.Crop(draw.New(c), chartMargin/2, -chartMargin, chartMargin/2, -chartMargin/2))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	return append(trimTrailingSpace(buf.Bytes()), '\n'), nil
}
