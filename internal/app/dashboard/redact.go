package dashboard

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"unicode/utf8"
)

// Redaction: what customers typed and what the agent's tools returned hold
// personal data (names, booking codes, addresses, payment details), so the
// dashboard shows them only to a request Deps.Reveal lets see them. Others
// get the timeline's shape — who spoke, when, which tool, what rein decided
// — with the free text replaced by its length, and quotes inside rein's own
// text (the evidence quote of a planted thought) blanked.

// redactText replaces free text by its length.
func redactText(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("[redacted: %d characters]", utf8.RuneCountInString(s))
}

// quoted is a double-quoted span of rein's own text: the evidence slot of
// a recovery plan (evidence never holds a double quote itself).
var quoted = regexp.MustCompile(`"[^"]*"`)

func redactQuotes(s string) string { return quoted.ReplaceAllString(s, `"[quote redacted]"`) }

// freeTextKinds are the timeline entries whose text is a person's or a
// tool's words.
var freeTextKinds = []string{"user-turn", "agent-turn", "step", "escalation", "report", "label"}

// redactedFields are entry fields holding the same.
var redactedFields = map[string]func(string) string{"evidence": redactText, "arguments": redactText, "thought": redactQuotes}

// redacted is c with its free text redacted (c is not changed).
func (c Conversation) redacted() Conversation {
	c.Events = slices.Clone(c.Events)
	for i := range c.Events {
		e := &c.Events[i]
		if slices.Contains(freeTextKinds, e.Kind) {
			e.Text = redactText(e.Text)
		} else {
			e.Text = redactQuotes(e.Text)
		}
		e.Fields = slices.Clone(e.Fields)
		for j, f := range e.Fields {
			if fn, ok := redactedFields[f.Name]; ok {
				e.Fields[j].Value = fn(f.Value)
			}
		}
	}
	c.Redacted = true
	return c
}

// redacted is o with the recent outcomes' text redacted (o is not changed).
func (o Overview) redacted() Overview {
	o.Recent = slices.Clone(o.Recent)
	for i := range o.Recent {
		o.Recent[i].Text = redactText(o.Recent[i].Text)
	}
	o.Redacted = true
	return o
}

// reveals tells whether r may see free text.
func (d *Dashboard) reveals(r *http.Request) bool { return d.deps.Reveal != nil && d.deps.Reveal(r) }
