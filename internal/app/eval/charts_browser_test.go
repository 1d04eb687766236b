package eval

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// box is an element's rectangle on the rendered page, in CSS pixels.
type box struct {
	Text string  `json:"text"`
	X    float64 `json:"x"`
	Y    float64 `json:"y"`
	W    float64 `json:"w"`
	H    float64 `json:"h"`
}

type chartLayout struct {
	SVG   box   `json:"svg"`
	Texts []box `json:"texts"`
	Fills []box `json:"fills"`
}

// measureChart lays every text and filled shape of the SVG out.
const measureChart = `(() => {
  const r = (e) => { const b = e.getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}; };
  const svg = document.querySelector("svg");
  const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim() !== "")
    .map((t) => Object.assign(r(t), {text: t.textContent.trim()}));
  const fills = [...svg.querySelectorAll("path, rect")].filter((p) => {
    const f = getComputedStyle(p).fill;
    return f && f !== "none" && f !== "rgb(255, 255, 255)" && f !== "rgb(0, 0, 0)";
  }).map(r);
  return {svg: r(svg), texts, fills};
})()`

// overlap is how far two boxes overlap, the lesser of the two extents; a
// text box includes the font's line gap, so the lines of one label touch.
func overlap(a, b box) float64 {
	w := min(a.X+a.W, b.X+b.W) - max(a.X, b.X)
	h := min(a.Y+a.H, b.Y+b.H) - max(a.Y, b.Y)
	return max(0, min(w, h))
}

// The charts, rendered by Chromium, are legible: every label lies inside
// the picture, no two labels overlap, and no label (the legend's
// included) is drawn over a bar — checked with every bar at its highest
// and five conditions, the worst case for the legend.
func TestChartsAreLegibleInABrowser(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed (CI must install it)")
		}
		t.Skip("chromium not installed")
	}
	rep, err := Report(synthetic(), ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := 1.0
	for _, cr := range rep.Conditions {
		cr.PassAt1 = Interval{Value: 1, Low: 1, High: 1}
		for _, m := range cr.ByErrorType {
			m.ActivationRate = &one
		}
		for _, et := range ErrorTypes {
			if cr.ByErrorType[et] == nil {
				cr.ByErrorType[et] = &Metrics{ActivationRate: &one}
			}
		}
		cr.Clean.FalseActivationRate = &one
	}
	extra := *rep.Conditions[ConditionRein]
	rep.Conditions[ConditionReinNoTool] = &extra

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true))
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dir := t.TempDir()
	for name, draw := range map[string]func(*RunReport) ([]byte, error){ChartPassAt1: PassAt1Chart, ChartActivationType: ActivationChart} {
		svg, err := draw(rep)
		if err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(dir, name+".html")
		if err := os.WriteFile(page, append([]byte(`<!doctype html><body style="margin:0">`), svg...), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, done := context.WithTimeout(browser, 30*time.Second)
		err = chromedp.Do(ctx, chromedp.Navigate("file://"+page))
		var l chartLayout
		if err == nil {
			l, err = chromedp.Run(ctx, chromedp.Evaluate[chartLayout](measureChart))
		}
		var shot []byte
		if err == nil {
			shot, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("svg")))
		}
		done()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		failed := false
		fail := func(format string, args ...any) {
			failed = true
			t.Errorf("%s: "+format, append([]any{name}, args...)...)
		}
		if len(l.Texts) < 5 || len(l.Fills) == 0 {
			fail("%d labels, %d filled shapes: nothing measured", len(l.Texts), len(l.Fills))
		}
		for i, a := range l.Texts {
			if a.X < l.SVG.X-0.5 || a.Y < l.SVG.Y-0.5 || a.X+a.W > l.SVG.X+l.SVG.W+0.5 || a.Y+a.H > l.SVG.Y+l.SVG.H+0.5 {
				fail("label %q at %+v runs off the picture %+v", a.Text, a, l.SVG)
			}
			for _, b := range l.Texts[i+1:] {
				if overlap(a, b) > 3 {
					fail("labels %q and %q overlap", a.Text, b.Text)
				}
			}
			for _, f := range l.Fills {
				// A legend's swatch is a small square beside its label.
				if f.W <= 14 && f.H <= 14 {
					continue
				}
				if overlap(a, f) > 1 {
					fail("label %q is drawn over a bar at %+v", a.Text, f)
				}
			}
		}
		if failed {
			shotPath := filepath.Join(os.TempDir(), fmt.Sprintf("rein-chart-%s.png", name))
			_ = os.WriteFile(shotPath, shot, 0o644)
			t.Logf("%s: screenshot %s", name, shotPath)
		}
	}
}
