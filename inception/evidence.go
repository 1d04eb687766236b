package inception

import (
	"regexp"
	"strings"
	"unicode"
)

// The evidence slot is the only place where text the user typed reaches the
// agent's planted thought, so what goes there is narrow: one exact quote of
// the user's last utterance, in the user's own casing, within one sentence,
// naming no tool and giving the agent no orders. Anything else leaves the
// slot pointing at "the user's latest message" and the detection records
// why (Decision.EvidenceRejected).

// Evidence rejection reasons.
const (
	EvidenceNotQuoted      = "evidence is not a quote of the last user utterance"
	EvidenceSpansSentences = "evidence spans more than one sentence"
	EvidenceNamesTool      = "evidence names a tool"
	EvidenceGivesOrders    = "evidence addresses the agent with an instruction"
)

// agentOrders matches phrasing aimed at the agent or its instructions
// rather than at the user's own request: "you must call …", "ignore the
// previous instructions", "assistant:", "system prompt", "instead call".
var agentOrders = regexp.MustCompile(`(?i)\b(you|agent|assistant|the bot|the model)\s+(must|should|shall|have to|need to|are required to|will now)\b|` +
	`\b(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+|previous\s+|prior\s+|above\s+)*(instructions|rules|policy|polic(y|ies)|prompt|guidelines)\b|` +
	`\b(system|developer)\s+(prompt|message|instructions?)\b|` +
	`\b(instead|now)\s+(call|use|invoke|run)\b|` +
	`\b(call|invoke|use|run)\s+(the\s+)?(tool|function)\b|` +
	`(^|\s)(assistant|system|tool)\s*:`)

// groundEvidence returns the user's own words for the model's evidence:
// the span of the last user utterance that the evidence quotes (found
// case- and whitespace-insensitively, returned as the user wrote it,
// sanitised), or "" and the reason it was refused. tools are the names
// of every tool the agent or the taxonomy knows.
func groundEvidence(evidence string, dialogue []Utterance, tools []string) (string, string) {
	needle := strings.Join(strings.Fields(strings.Trim(sanitizeUncapped(evidence), `'" .,!?…`)), " ")
	if needle == "" {
		return "", ""
	}
	var last string
	for i := len(dialogue) - 1; i >= 0; i-- {
		if dialogue[i].Role == RoleUser {
			last = dialogue[i].Text
			break
		}
	}
	hay := strings.Join(strings.Fields(sanitizeUncapped(last)), " ")
	at := indexFold(hay, needle)
	if at < 0 {
		return "", EvidenceNotQuoted
	}
	quote := hay[at : at+len(needle)]
	if reason := EvidenceProblem(quote, tools); reason != "" {
		return "", reason
	}
	return SanitizeEvidence(quote), ""
}

// EvidenceProblem says why a quote may not fill the evidence slot ("" when
// it may): it spans sentences, names one of tools (as written or with
// spaces for underscores), or addresses the agent with an instruction.
func EvidenceProblem(quote string, tools []string) string {
	if spansSentences(quote) {
		return EvidenceSpansSentences
	}
	return evidenceMisuse(quote, tools)
}

// evidenceMisuse says whether a quote names one of tools or addresses the
// agent with an instruction ("" when neither). The rules module holds its
// spans to this only: a contradiction it quotes spans the user's two
// sentences by nature.
func evidenceMisuse(quote string, tools []string) string {
	for _, t := range tools {
		if containsWord(quote, t) || containsWord(quote, strings.ReplaceAll(t, "_", " ")) {
			return EvidenceNamesTool
		}
	}
	if agentOrders.MatchString(quote) {
		return EvidenceGivesOrders
	}
	return ""
}

// spansSentences reports a sentence end (. ! ? or a line break) followed
// by more words. Dots inside numbers and ids ("$1.5", "3.30pm") do not end
// a sentence: the end needs white space after it.
func spansSentences(s string) bool {
	rs := []rune(strings.TrimRight(s, " .!?…"))
	for i, r := range rs {
		if r == '\n' {
			return true
		}
		if (r == '.' || r == '!' || r == '?') && i+1 < len(rs) && unicode.IsSpace(rs[i+1]) {
			return true
		}
	}
	return false
}

// indexFold is strings.Index ignoring case, for needles whose lower-case
// form has the same byte length as the text's (the common case); other
// texts fall back to an exact search.
func indexFold(hay, needle string) int {
	lh, ln := strings.ToLower(hay), strings.ToLower(needle)
	if len(lh) == len(hay) && len(ln) == len(needle) {
		return strings.Index(lh, ln)
	}
	return strings.Index(hay, needle)
}
