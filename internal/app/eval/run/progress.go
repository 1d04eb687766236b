package run

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress reports a run's plays on a writer (stderr): a bar redrawn in
// place on a terminal, a line per tenth of the run otherwise.
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
	shown int // tenths printed (non-terminal)
}

// NewProgress reports to w; tty redraws a bar in place.
func NewProgress(w io.Writer, tty bool) *Progress {
	return &Progress{w: w, tty: tty, start: time.Now()}
}

func (p *Progress) begin(total, skipped int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.skip = total, skipped
	if skipped > 0 {
		fmt.Fprintf(p.w, "resuming: %d of %d plays already finished\n", skipped, total)
	}
	p.done = skipped
}

func (p *Progress) stage(label string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = label
	p.draw()
}

func (p *Progress) played(failed bool) {
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

func (p *Progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintln(p.w)
	}
	fmt.Fprintf(p.w, "%d plays finished (%d resumed, %d failed) in %s\n", p.done-p.fail, p.skip, p.fail, time.Since(p.start).Round(time.Millisecond))
}

func (p *Progress) draw() {
	if p.total == 0 {
		return
	}
	if p.tty {
		const width = 30
		n := p.done * width / p.total
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d plays %s  %-28s", strings.Repeat("#", n), strings.Repeat(".", width-n),
			p.done, p.total, failNote(p.fail), p.label)
		return
	}
	if tenth := p.done * 10 / p.total; tenth > p.shown || p.done == p.total {
		p.shown = tenth
		fmt.Fprintf(p.w, "%d/%d plays %s(%s)\n", p.done, p.total, failNote(p.fail), p.label)
	}
}

func failNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d failed ", n)
}
