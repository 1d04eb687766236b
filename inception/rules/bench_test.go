package rules

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// BenchmarkRulesTurn is what the detector stage asks of the precise module
// per user turn, with τ-bench's full airline catalogue: NeedsContext on the
// dialogue without the agent's replies, then Detect on the whole one.
// "bench" are the turns `rein bench` sends; "trajectories" every user turn
// of the recorded τ-bench airline dialogues (the cost per turn is ns/op
// divided by the turns reported). The module's memo starts empty with
// each dialogue: every message is analysed once per conversation, as in a
// deployment, and never shared with another dialogue (τ-bench's trials
// repeat many texts verbatim, which a deployment's users would not).
func BenchmarkRulesTurn(b *testing.B) {
	m, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	tools := inceptiontest.DomainTools(b, "airline")
	bench := []string{"Can you show me reservation Q7RM2K?", "Your reservation Q7RM2K is confirmed.",
		"What is the status of my booking?", "Your reservation Q7RM2K is confirmed.",
		"Thanks, and the baggage allowance?"}
	type turn struct {
		alone, whole inception.Input
		first        bool // the dialogue's first user turn
	}
	turnsOf := func(dialogues [][]inception.Utterance) []turn {
		var out []turn
		for _, dlg := range dialogues {
			var users []inception.Utterance
			for i, u := range dlg {
				if u.Role != inception.RoleUser {
					continue
				}
				users = append(users, u)
				out = append(out, turn{
					first: len(users) == 1,
					alone: inception.Input{Tenant: "t", Domain: "airline", Tools: tools, Dialogue: append([]inception.Utterance(nil), users...)},
					whole: inception.Input{Tenant: "t", Domain: "airline", Tools: tools, Dialogue: dlg[:i+1]},
				})
			}
		}
		return out
	}
	cases := []struct {
		name  string
		turns []turn
	}{
		{"bench", turnsOf([][]inception.Utterance{inceptiontest.Dialogue(bench...)})},
		{"trajectories", turnsOf(inceptiontest.TrajectoryTurns(b))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				for _, t := range c.turns {
					if t.first {
						m.memo.reset()
					}
					in := t.alone
					if m.NeedsContext(in) {
						in = t.whole
					}
					if _, err := m.Detect(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
			}
			// After the loop: its first call resets user-reported metrics.
			b.ReportMetric(float64(len(c.turns)), "turns")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(c.turns)), "ns/turn")
		})
	}
}

// BenchmarkFastREMay compares an expression's literal prefilter as one
// pass over the text (litGroup) with a search per literal, by literal
// count and text length: what manyLits is set from.
func BenchmarkFastREMay(b *testing.B) {
	short := "thanks, and the baggage allowance?"
	long := strings.Repeat("your reservation q7rm2k is confirmed for the flight from boston. ", 5)
	for _, f := range []*fastRE{personAdded, justMe, selfIncluded, statedSolo} {
		for _, text := range []string{short, long} {
			name := fmt.Sprintf("lits=%d/bytes=%d", len(f.lits), len(text))
			b.Run(name+"/search", func(b *testing.B) {
				for b.Loop() {
					for _, l := range f.lits {
						if strings.Contains(text, l) {
							break
						}
					}
				}
			})
			b.Run(name+"/pass", func(b *testing.B) {
				g := newLitGroup(f.lits)
				for b.Loop() {
					g.any(text)
				}
			})
		}
	}
}
