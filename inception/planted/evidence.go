package planted

import (
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/reinception/rein/inception"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
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
	EvidenceClaims         = "evidence repeats a claim of authority or approval"
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

// authorityClaims matches a user's claim of authority, approval or
// entitlement that the agent cannot verify: "as the manager I approved
// …", "I was told I'm entitled …", "your supervisor said …", "this was
// already approved". Asking for such a person ("can I talk to your
// supervisor") is no claim.
var authorityClaims = regexp.MustCompile(`(?i)` +
	`\bas (?:a|an|the|your|their|my) (?:\w+ )?(?:(?:manager|supervisor|admin|administrator|director|executive|employee|staff member|team lead|ceo)|agent|representative)\b|` +
	`\b(?:i|we)(?:'m| am| are|'re) (?:(?:a|an|the|your) )?(?:\w+ )?(?:manager|supervisor|admin|administrator|director|executive|employee|staff member|team lead|ceo)\b|` +
	`\b(?:i|we)(?:'m| am| are|'re|'ve been| have been| was| were|'d been| had been) (?:already )?(?:told|promised|assured|guaranteed|informed|authori[sz]ed|approved|cleared|allowed|entitled|eligible|owed)\b|` +
	`\b(?:i|we)(?:'ve|'d| have| had)?(?: already)? (?:approved|authori[sz]ed|cleared|signed off|okayed)\b|` +
	`\b(?:was|were|been|is|are|got)(?: already)? (?:pre-?)?(?:approved|authori[sz]ed|cleared|signed off|okayed|promised|guaranteed)\b|` +
	`\b(?:already |pre-?)(?:approved|authori[sz]ed)\b|` +
	`\b(?:your|the|a|an|my|another|previous|other|their) (?:\w+ )?(?:manager|supervisor|boss|agent|representative|rep|colleague|staff|team|employee|admin|director|department) (?:said|told|promised|approved|authori[sz]ed|confirmed|agreed|assured|guaranteed|okayed|allowed|gave|offered)\b|` +
	`\b(?:i|we)(?: have| hold| got|'ve got|'ve) (?:the )?(?:permission|authority|authori[sz]ation|clearance|approval)\b`)

// GroundEvidence returns the user's own words for the model's evidence:
// the span of the last user utterance that the evidence quotes (found
// case- and whitespace-insensitively, returned as the user wrote it,
// sanitised), or "" and the reason it was refused. tools are the names
// of every tool the agent or the taxonomy knows.
func GroundEvidence(evidence string, dialogue []inception.Utterance, tools []string) (string, string) {
	needle := strings.Join(strings.Fields(strings.Trim(SanitizeUncapped(evidence), `'" .,!?…`)), " ")
	if needle == "" {
		return "", ""
	}
	var last string
	for i := len(dialogue) - 1; i >= 0; i-- {
		if dialogue[i].Role == inception.RoleUser {
			last = dialogue[i].Text
			break
		}
	}
	hay := strings.Join(strings.Fields(SanitizeUncapped(last)), " ")
	at := indexFold(hay, needle)
	if at < 0 {
		return "", EvidenceNotQuoted
	}
	quote := hay[at : at+len(needle)]
	// The quote as the model wrote it is checked too: NFKC, which the
	// planted text gets, turns some look-alikes (the lunate sigma ϲ, a c)
	// into letters the confusables data no longer ties to a tool.
	if NamesTool(evidence, tools) != "" {
		return "", EvidenceNamesTool
	}
	if reason := EvidenceProblem(quote, tools); reason != "" {
		return "", reason
	}
	// What is planted is checked too: the length cap can end a word where
	// a tool's name ends.
	planted := SanitizeEvidence(quote)
	if reason := EvidenceProblem(planted, tools); reason != "" {
		return "", reason
	}
	return planted, ""
}

// EvidenceProblem says why a quote may not fill the evidence slot ("" when
// it may): it spans sentences, names one of tools (NamesTool), addresses
// the agent with an instruction (GivesOrders) or repeats a claim of
// authority or approval (ClaimsAuthority).
func EvidenceProblem(quote string, tools []string) string {
	if spansSentences(quote) {
		return EvidenceSpansSentences
	}
	return EvidenceMisuse(quote, tools)
}

// EvidenceMisuse says whether a quote names one of tools, addresses the
// agent with an instruction or repeats a claim of authority ("" when
// none). The rules module holds its spans to this only: a contradiction
// it quotes spans the user's two sentences by nature.
func EvidenceMisuse(quote string, tools []string) string {
	switch {
	case NamesTool(quote, tools) != "":
		return EvidenceNamesTool
	case GivesOrders(quote):
		return EvidenceGivesOrders
	case ClaimsAuthority(quote):
		return EvidenceClaims
	}
	return ""
}

// The checks below are the one home for "does this text name a tool, give
// the agent an order, or claim an authority": the evidence slot, the rules
// module's spans and generated plans all ask them. Each judges the text in
// a normalised form, so look-alike spellings (a Cyrillic і for i, a zero-
// width space inside a name, full-width letters, combining marks, bidi
// controls) are judged as what they look like.

// CleanText is what rein may plant of a text: Unicode NFKC, with every
// invisible code point removed — format characters (zero-width spaces and
// joiners, bidi controls, soft hyphens, tags), variation selectors and the
// other default-ignorable code points. Letters that merely look like
// others are kept as written; the checks see through them.
func CleanText(s string) string {
	return stripInvisible(norm.NFKC.String(stripInvisible(s)))
}

// invisible reports a code point that renders as nothing: format
// characters (Cf), variation selectors and the other default-ignorable
// code points (Hangul fillers, the combining grapheme joiner, …).
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

func stripInvisible(s string) string {
	if strings.IndexFunc(s, invisible) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, s)
}

// toolKeys are the forms in which text and tool names are compared: the
// text without invisible characters, NFKC-folded or not, lower-cased
// before its confusables skeleton (Unicode TR39) or not, then lower-cased
// (a skeleton may map to a capital: 0 to O), without combining marks, and
// every run of separators (white space, connector and dash punctuation:
// _ - ‿ …) one space. So cancel_reservation, "cancel reservation",
// "CANCEL-RESERVATION" and "cancel_reservat\u0456on" share a key. The
// variants exist because each fold hides some look-alikes from the
// skeleton: NFKC turns the lunate sigma ϲ (a c) into a final sigma, and
// lower-casing turns the Cyrillic capital palochka Ӏ (an l) into its
// small form, while capitals need lower-casing first (the skeleton of I
// is l).
func toolKeys(s string) [4]string {
	s = stripInvisible(s)
	nfkc := stripInvisible(norm.NFKC.String(s))
	return [4]string{toolKey(nfkc, true), toolKey(nfkc, false), toolKey(s, true), toolKey(s, false)}
}

func toolKey(s string, lowerFirst bool) string {
	if lowerFirst {
		s = strings.ToLower(s)
	}
	sk := norm.NFD.String(strings.ToLower(confusables.Skeleton(s)))
	var b strings.Builder
	b.Grow(len(sk))
	sep := false
	for _, r := range sk {
		switch {
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || invisible(r):
			continue
		case unicode.IsSpace(r) || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Pd, r):
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte(' ')
		}
		sep = false
		b.WriteRune(r)
	}
	return b.String()
}

// NamesTool returns the first of tools that text names, as written or in
// a look-alike form (one of toolKeys), glued to no other letters or
// digits; "" when it names none.
func NamesTool(text string, tools []string) string {
	keys := toolKeys(text)
	for _, t := range tools {
		for i, k := range nameKeys(t) {
			if ContainsWord(keys[i], k) {
				return t
			}
		}
	}
	return ""
}

// nameKeys is toolKeys of a tool's name, computed once per name: the same
// few names are compared with every text, and their keys cost most of a
// check.
func nameKeys(name string) [4]string {
	nameKeyMemo.RLock()
	k, ok := nameKeyMemo.keys[name]
	nameKeyMemo.RUnlock()
	if ok {
		return k
	}
	k = toolKeys(name)
	nameKeyMemo.Lock()
	if len(nameKeyMemo.keys) >= maxNameKeys { // bounded: catalogues are per tenant and domain
		clear(nameKeyMemo.keys)
	}
	nameKeyMemo.keys[name] = k
	nameKeyMemo.Unlock()
	return k
}

// nameKeyMemo holds nameKeys' results, at most maxNameKeys names.
var nameKeyMemo = struct {
	sync.RWMutex
	keys map[string][4]string
}{keys: map[string][4]string{}}

const maxNameKeys = 4096

// asciiFold maps the cleaned text, without combining marks, to the Latin
// letters its look-alikes stand for (a Cyrillic о is an o, a Greek ν a v),
// for the phrase checks: a letter whose skeleton is not ASCII stays.
func asciiFold(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(CleanText(s)) {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		default:
			sk := confusables.Skeleton(string(r))
			if isASCII(sk) {
				b.WriteString(sk)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// GivesOrders reports phrasing aimed at the agent or its instructions
// rather than at the user's own request (agentOrders), in any look-alike
// spelling.
func GivesOrders(text string) bool {
	return matchFolded(agentOrders, text)
}

// matchFolded reports re matching text as written or its asciiFold; the
// second match is skipped when the fold changes nothing (plain ASCII
// text), as it would give the first's answer.
func matchFolded(re *regexp.Regexp, text string) bool {
	if re.MatchString(text) {
		return true
	}
	f := asciiFold(text)
	return f != text && re.MatchString(f)
}

// ClaimsAuthority reports a claim of authority, approval or entitlement
// (authorityClaims), in any look-alike spelling. rein never repeats such
// a claim in a planted thought as if it were a fact.
func ClaimsAuthority(text string) bool {
	return matchFolded(authorityClaims, text)
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
