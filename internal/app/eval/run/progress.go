package run

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress reports a run's plays (or another unit of work: WithUnit) on a
// writer (stderr): a bar redrawn in place on a terminal, a line per tenth
// of the run otherwise. A nil *Progress reports nothing.
type Progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	total int
	done  int
	fail  int
	skip  int
	start time.Time
	label string
	shown int    // tenths printed (non-terminal)
	unit  string // "plays" unless WithUnit
	fails string // what a failure is called: "failed" unless WithUnit
}

// NewProgress reports to w; tty redraws a bar in place.
func NewProgress(w io.Writer, tty bool) *Progress {
	return &Progress{w: w, tty: tty, start: time.Now(), unit: "plays", fails: "failed"}
}

// WithUnit names what is counted ("openings") and what a failed one is
// called ("rejected").
func (p *Progress) WithUnit(unit, fails string) *Progress {
	p.unit, p.fails = unit, fails
	return p
}

// Begin starts the count: total units, skipped of them already done.
func (p *Progress) Begin(total, skipped int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.skip = total, skipped
	if skipped > 0 {
		fmt.Fprintf(p.w, "resuming: %d of %d %s already finished\n", skipped, total, p.unit)
	}
	p.done = skipped
}

// Stage names what is being done now.
func (p *Progress) Stage(label string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = label
	p.draw()
}

// Done counts one finished unit.
func (p *Progress) Done(failed bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if failed {
		p.fail++
	}
	p.draw()
}

// Finish prints the totals.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintln(p.w)
	}
	resumed := ""
	if p.skip > 0 {
		resumed = fmt.Sprintf("%d resumed, ", p.skip)
	}
	fmt.Fprintf(p.w, "%d %s finished (%s%d %s) in %s\n", p.done-p.fail, p.unit, resumed, p.fail, p.fails, time.Since(p.start).Round(time.Millisecond))
}

func (p *Progress) draw() {
	if p.total == 0 {
		return
	}
	if p.tty {
		const width = 30
		n := p.done * width / p.total
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d %s %s  %-28s", strings.Repeat("#", n), strings.Repeat(".", width-n),
			p.done, p.total, p.unit, p.failNote(), p.label)
		return
	}
	if tenth := p.done * 10 / p.total; tenth > p.shown || p.done == p.total {
		p.shown = tenth
		fmt.Fprintf(p.w, "%d/%d %s %s(%s)\n", p.done, p.total, p.unit, p.failNote(), p.label)
	}
}

func (p *Progress) failNote() string {
	if p.fail == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s ", p.fail, p.fails)
}
