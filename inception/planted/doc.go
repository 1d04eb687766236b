// Package planted holds the checks on text rein plants in an agent's
// thought, which every inception module shares: a library that consumes
// and produces no subjects. The evidence slot is the only place where the
// user's words reach a planted thought, so it takes one sanitised quote of
// the user's own words; a generated plan names its recovery tool and no
// other, claims no authority and states no amount the dialogue lacks.
//
// Exports: RenderPlan and SanitizeEvidence (the taxonomy's recovery plan
// with the evidence quote as its only slot, at most MaxEvidenceRunes),
// SanitizeUncapped, GroundEvidence (the quote must be the user's own
// words), EvidenceProblem and EvidenceMisuse with their reasons
// (EvidenceNotQuoted, EvidenceSpansSentences, EvidenceNamesTool,
// EvidenceGivesOrders, EvidenceClaims), GeneratedCheck (PlanGenerated
// mode, within DefaultMaxReasoningRunes; PlanTemplate is the default),
// NamesTool, GivesOrders, ClaimsAuthority, CleanText and ContainsWord.
package planted
